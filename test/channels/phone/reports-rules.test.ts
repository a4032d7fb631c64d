// The rules behind what a paired phone reports, against the app in process with a manual clock:
// a re-posted SMS with a new id but the same sender, time and text is the same message; an
// unhealthy episode opens once and closes once; a downloaded MMS without its headers still lands;
// and only a paired phone can be asked for its inbox.
import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope, type TestContext } from "../../helpers/context";
import { postPhoneWebhook, registerAppPhone } from "../../helpers/phone";
import { RECIPIENT } from "../../helpers/numbers";

const ADA = RECIPIENT;

async function phone(ctx: TestContext) {
  const reg = await registerAppPhone(ctx, "Phone", { "user-agent": "me.capcom.smsgateway/1.68.0" });
  let n = 0;
  const deviceId = expectEnvelope(await ctx.get("/v1/api/device/list"), 200).data.devices.at(-1).device_id as number;
  return {
    deviceId,
    /** Posts one webhook event with a fresh webhook id; answers the status. */
    async post(event: string, payload: Record<string, unknown>) {
      const body = JSON.stringify({ id: `evt-${++n}`, webhookId: "w", event, deviceId: reg.id, payload });
      return (await postPhoneWebhook(ctx, reg.signingKey, body)).status;
    },
  };
}

async function events(ctx: TestContext, type: string): Promise<Record<string, unknown>[]> {
  return (await ctx.sql.all<{ data: string }>("SELECT data FROM event WHERE type = ? ORDER BY created_at, seq", [type])).map((r) =>
    JSON.parse(r.data),
  );
}

async function threadBodies(ctx: TestContext, peer: string) {
  const thread = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads.find((t: { peer: string }) => t.peer === peer);
  const messages = expectEnvelope(await ctx.get(`/v1/api/thread/${thread.thread_id}/messages`), 200).data.messages;
  return messages.map((m: { body: string }) => m.body);
}

/** A system:ping payload as the app's HealthService words it. */
function ping(battery: number, flags: number, connected = true) {
  const check = (status: string, observedValue: number) => ({ status, observedValue, observedUnit: "", description: "" });
  return {
    health: {
      version: "1.68.0",
      releaseId: 1,
      status: battery < 10 ? "fail" : "pass",
      checks: {
        "messages:failed": check("pass", 0),
        "connection:status": check(connected ? "pass" : "fail", connected ? 1 : 0),
        "battery:level": check(battery < 10 ? "fail" : "pass", battery),
        "battery:charging": check("pass", flags),
      },
    },
  };
}

describe("what a paired phone reports, by rule", () => {
  test("an SMS re-posted with another id but the same sender, time and text is stored once", async () => {
    const ctx = await createTestContext();
    const p = await phone(ctx);
    const receivedAt = new Date(ctx.clock.now()).toISOString();
    expect(await p.post("sms:received", { messageId: "aa01", message: "Where is my parcel?", sender: ADA, receivedAt })).toBe(204);
    expect(await p.post("sms:received", { messageId: "bb02", message: "Where is my parcel?", sender: ADA, receivedAt })).toBe(204);
    // Same text at another time is another message.
    const later = new Date(ctx.clock.now() + 5000).toISOString();
    expect(await p.post("sms:received", { messageId: "cc03", message: "Where is my parcel?", sender: ADA, receivedAt: later })).toBe(204);
    expect(await threadBodies(ctx, ADA)).toEqual(["Where is my parcel?", "Where is my parcel?"]);
    expect(await events(ctx, "message.received")).toHaveLength(2);
  });

  test("an unhealthy episode: device.unhealthy once, its reasons follow the pings, device.healthy once at recovery", async () => {
    const ctx = await createTestContext();
    const p = await phone(ctx);
    const score = async () => expectEnvelope(await ctx.get(`/v1/api/device/${p.deviceId}/health`), 200).data;
    expect((await score()).reported).toBeNull();
    expect(await p.post("system:ping", ping(12, 0))).toBe(204);
    expect(await p.post("system:ping", ping(11, 0, false))).toBe(204);
    expect((await score()).reported.unhealthy).toEqual(["low_battery", "no_connection"]);
    expect((await score()).health_score).toBe(25);
    // Plugged in (AC, not yet charging) ends the low-battery reason; the connection is back too.
    expect(await p.post("system:ping", ping(11, 2))).toBe(204);
    expect(await p.post("system:ping", ping(30, 3))).toBe(204);
    expect((await events(ctx, "device.unhealthy")).map((e) => e.reasons)).toEqual([["low_battery"]]);
    expect(await events(ctx, "device.healthy")).toEqual([
      {
        device_id: p.deviceId,
        name: "Phone",
        kind: "sms",
        battery_level: 11,
        charging: false,
        connected: true,
        previous_reasons: ["low_battery", "no_connection"],
      },
    ]);
    expect(await score()).toMatchObject({
      health_score: 100,
      reported: { battery_level: 30, charging: true, plugged: true, unhealthy: [] },
    });
    // A ping without checks changes nothing.
    expect(await p.post("system:ping", { health: { status: "pass" } })).toBe(204);
    expect((await score()).reported.battery_level).toBe(30);
  });

  test("a downloaded MMS without its headers lands on its own, once; an MMS header re-post is dropped", async () => {
    const ctx = await createTestContext();
    const p = await phone(ctx);
    const at = new Date(ctx.clock.now()).toISOString();
    const content = {
      messageId: "17",
      sender: ADA,
      body: "See attached",
      subject: null,
      attachments: [{ partId: 3, contentType: "image/jpeg", name: null, size: 2048, data: "AAAA" }],
      receivedAt: at,
    };
    expect(await p.post("mms:downloaded", content)).toBe(204);
    expect(await p.post("mms:downloaded", content)).toBe(204);
    const headers = { messageId: "T1", transactionId: "T1", sender: ADA, subject: null, size: 900, contentClass: null, receivedAt: at };
    // Dated a day later, so no download is near it.
    const late = { ...headers, receivedAt: new Date(ctx.clock.now() + 86_400_000).toISOString() };
    expect(await p.post("mms:received", late)).toBe(204);
    expect(await p.post("mms:received", late)).toBe(204);
    const thread = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads[0];
    const messages = expectEnvelope(await ctx.get(`/v1/api/thread/${thread.thread_id}/messages`), 200).data.messages;
    expect(messages.map((m: { body: string; mms: { downloaded: boolean } }) => [m.body, m.mms.downloaded])).toEqual([
      ["[MMS]", false],
      ["See attached", true],
    ]);
    expect(messages[1].mms.attachments).toEqual([{ part_id: 3, content_type: "image/jpeg", name: null, size: 2048 }]);
    expect(await events(ctx, "message.received")).toHaveLength(2);
  });

  test("inbox refresh: 409 not_a_phone for a device of another kind; 409 phone_not_connected with no event stream", async () => {
    const ctx = await createTestContext();
    const p = await phone(ctx);
    const period = { since: "2026-01-15T00:00:00Z", until: "2026-01-16T00:00:00+02:00" };
    const notConnected = expectEnvelope(await ctx.post(`/v1/api/device/${p.deviceId}/inbox/refresh`, period), 409);
    expect(notConnected.data.error_code).toBe("phone_not_connected");
    const cloud = await ctx.cloudDevice({ url: "https://api.example.com", accountSid: "AC1", authToken: "t" });
    const other = expectEnvelope(await ctx.post(`/v1/api/device/${cloud.device_id}/inbox/refresh`, period), 409);
    expect(other.data.error_code).toBe("not_a_phone");
    const foreign = await ctx.otherWorkspace("Other");
    expect(
      expectEnvelope(await ctx.post(`/v1/api/device/${p.deviceId}/inbox/refresh`, period, { key: foreign.key }), 404).data.error_code,
    ).toBe("not_found");
  });
});
