// Customer webhooks: subscriptions, signed at-least-once delivery from the outbox, the retry ladder
// (clock moved, never waited), failing and re-enabling, and refusing private targets.
import { afterEach, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonField } from "../../src/db/storage";
import { MAX_DELIVERY_ATTEMPTS, RETRY_LADDER_MS } from "../../src/modules/webhooks/service";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { postPhoneWebhook, registerAppPhone } from "../helpers/phone";
import { startReceiver, type Receiver, type Received } from "../helpers/receiver";
import { RECIPIENT } from "../helpers/numbers";

let receiver: Receiver;
let fake: FakeCloud | null = null;
afterEach(() => {
  receiver?.stop();
  fake?.stop();
  fake = null;
});

async function subscribe(ctx: TestContext, events: string[] | "*" = "*", url = receiver.url) {
  return expectEnvelope(await ctx.post("/v1/api/webhook/create", { url, events, description: "test" }), 200).data as {
    webhook_id: number;
    secret: string;
  };
}

/** Checks X-Pigeon-Signature the way the README tells receivers to. */
function verify(r: Received, secret: string): boolean {
  const header = r.headers.get("x-pigeon-signature") ?? "";
  const t = /t=(\d+)/.exec(header)?.[1];
  const v1 = /v1=([0-9a-f]{64})/.exec(header)?.[1];
  if (!t || !v1) return false;
  return createHmac("sha256", secret).update(`${t}.${r.raw}`).digest("hex") === v1;
}

const pairedPhone = (ctx: TestContext) => registerAppPhone(ctx, "Phone", { "user-agent": "me.capcom.smsgateway/1.68.0" });

describe("subscriptions", () => {
  test("create shows the secret once; list and get do not; unknown events and bad URLs are 400", async () => {
    const ctx = await createTestContext();
    receiver = startReceiver();
    const created = await subscribe(ctx, ["notification.failed", "message.received"]);
    expect(created).toMatchObject({ url: receiver.url, events: ["notification.failed", "message.received"], status: "active" });
    expect(created.secret).toMatch(/^whsec_\w{32}$/);
    const listed = expectEnvelope(await ctx.get("/v1/api/webhook/list"), 200).data.webhooks;
    expect(listed).toHaveLength(1);
    expect(listed[0].secret).toBeUndefined();
    expect(listed[0].secret_hint).toBe(`…${created.secret.slice(-4)}`);
    expect(expectEnvelope(await ctx.get(`/v1/api/webhook/${created.webhook_id}`), 200).data.secret).toBeUndefined();

    const unknown = expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: receiver.url, events: ["notification.exploded"] }), 400);
    expect(unknown.data).toMatchObject({ error_code: "validation_error", field: "events", unknown: ["notification.exploded"] });
    expect(expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: "ftp://example.com/x", events: "*" }), 400).data.error_code).toBe(
      "invalid_webhook_url",
    );
    expect(expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: "not a url", events: "*" }), 400).data.error_code).toBe(
      "invalid_webhook_url",
    );
    expect(expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: receiver.url }), 400).data.field).toBe("events");
  });

  test("update, rotate, delete; another workspace's webhook is 404", async () => {
    const ctx = await createTestContext();
    receiver = startReceiver();
    const w = await subscribe(ctx);
    const rotated = expectEnvelope(
      await ctx.post("/v1/api/webhook/update", { webhook_id: w.webhook_id, events: ["notification.sent"], rotate_secret: true }),
      200,
    ).data;
    expect(rotated.events).toEqual(["notification.sent"]);
    expect(rotated.secret).not.toBe(w.secret);
    const other = await ctx.otherWorkspace();
    expect((await ctx.get(`/v1/api/webhook/${w.webhook_id}`, { key: other.key })).status).toBe(404);
    expect((await ctx.post("/v1/api/webhook/delete", { webhook_id: w.webhook_id }, { key: other.key })).status).toBe(404);
    expect(expectEnvelope(await ctx.post("/v1/api/webhook/delete", { webhook_id: w.webhook_id }), 200).data.deleted).toBe(true);
    expect((await ctx.get(`/v1/api/webhook/${w.webhook_id}`)).status).toBe(404);
  });

  test("POST /webhook/test sends a webhook.test event now", async () => {
    const ctx = await createTestContext();
    receiver = startReceiver();
    const w = await subscribe(ctx, ["notification.sent"]);
    const result = expectEnvelope(await ctx.post("/v1/api/webhook/test", { webhook_id: w.webhook_id }), 200).data;
    expect(result).toMatchObject({ delivered: true, status_code: 200, error: null });
    const [got] = receiver.ofType("webhook.test");
    expect(got.body).toMatchObject({ id: result.event_id, type: "webhook.test", workspace_id: ctx.workspace.id });
    expect(got.headers.get("x-pigeon-delivery")).toBe(result.delivery_id);
    expect(verify(got, w.secret)).toBe(true);
  });
});

describe("events are delivered once, signed", () => {
  test("notification, message and device events, each with a valid signature and the documented shape", async () => {
    const ctx = await createTestContext();
    receiver = startReceiver();
    const w = await subscribe(ctx);
    const phone = await pairedPhone(ctx);
    const mobile = (path: string, init: RequestInit = {}) =>
      ctx.app.handle(
        new Request(`http://localhost/mobile/v1${path}`, {
          ...init,
          headers: { ...phone.auth, "content-type": "application/json", ...(init.headers ?? {}) },
        }),
      );

    // sent and delivered, through the phone
    const id = expectEnvelope(await ctx.post("/v1/notification/sms/api/send", { recipient_contact: RECIPIENT, message: "hi" }), 200).data
      .notification_id;
    const [m] = await (await mobile("/message")).json();
    await mobile("/message", { method: "PATCH", body: JSON.stringify([{ id: m.id, state: "Sent", recipients: [], states: {} }]) });
    await mobile("/message", { method: "PATCH", body: JSON.stringify([{ id: m.id, state: "Delivered", recipients: [], states: {} }]) });
    // failed, through the phone
    const failedId = expectEnvelope(await ctx.post("/v1/notification/sms/api/send", { recipient_contact: RECIPIENT, message: "fail" }), 200)
      .data.notification_id;
    const [f] = (await (await mobile("/message")).json()).filter((x: { message: string }) => x.message === "fail");
    await mobile("/message", {
      method: "PATCH",
      body: JSON.stringify([{ id: f.id, state: "Failed", recipients: [{ error: "Send result: RESULT_ERROR_NO_SERVICE" }], states: {} }]),
    });
    // cancelled, through the API
    const cancelId = expectEnvelope(
      await ctx.post("/v1/notification/sms/api/send", {
        recipient_contact: RECIPIENT,
        message: "later",
        schedule_time: "2026-01-20 10:00:00",
      }),
      200,
    ).data.notification_id;
    await ctx.post("/v1/api/notification/cancel", { notification_id: cancelId });
    // message.received, through the phone's signed webhook
    const hook = JSON.stringify({
      id: "evt-in-1",
      webhookId: "w",
      event: "sms:received",
      deviceId: phone.id,
      payload: { messageId: "ab12", message: "Thanks!", sender: RECIPIENT, receivedAt: "2026-01-15T12:00:00.000Z" },
    });
    await postPhoneWebhook(ctx, phone.signingKey, hook);
    // device.offline after 5 minutes of silence, then device.online when it talks again
    ctx.clock.advance(5 * 60_000 + 1);
    expect(await ctx.services.phone.watchPresence()).toBe(1);
    expect(await ctx.services.phone.watchPresence()).toBe(0);
    await mobile("/message");

    while ((await ctx.services.webhooks.deliverDue()) > 0);
    expect(await ctx.services.webhooks.deliverDue()).toBe(0);

    const types = receiver.received.map((r) => r.body.type);
    for (const type of [
      "notification.sent",
      "notification.delivered",
      "notification.failed",
      "notification.cancelled",
      "message.received",
      "device.offline",
    ]) {
      expect(types.filter((t) => t === type)).toHaveLength(1);
    }
    // online at first contact, and again after the silence
    expect(types.filter((t) => t === "device.online")).toHaveLength(2);
    for (const r of receiver.received) {
      expect(verify(r, w.secret)).toBe(true);
      expect(Object.keys(r.body).sort()).toEqual(["created_at", "data", "id", "type", "workspace_id"]);
      expect(r.headers.get("x-pigeon-event")).toBe(r.body.id);
      expect(r.headers.get("x-pigeon-event-type")).toBe(r.body.type);
      expect(r.headers.get("x-pigeon-delivery")).toMatch(/^dlv_/);
      expect(r.body.workspace_id).toBe(ctx.workspace.id);
    }
    expect(new Set(receiver.received.map((r) => r.body.id)).size).toBe(receiver.received.length);
    expect(receiver.ofType("notification.delivered")[0].body.data).toMatchObject({ notification_id: id, status: "delivered" });
    expect(receiver.ofType("notification.failed")[0].body.data).toMatchObject({
      notification_id: failedId,
      status: "failed",
      error_code: "RESULT_ERROR_NO_SERVICE",
    });
    expect(receiver.ofType("message.received")[0].body.data).toMatchObject({
      channel: "sms",
      from: RECIPIENT,
      body: "Thanks!",
      thread_id: expect.any(Number),
    });
    expect(receiver.ofType("device.offline")[0].body.data).toMatchObject({ kind: "sms", name: "Phone" });
  });

  test("a data SMS's notification.sent and .delivered carry data_message and an empty message; a text's carry none", async () => {
    const ctx = await createTestContext();
    receiver = startReceiver();
    await subscribe(ctx, ["notification.sent", "notification.delivered"]);
    const phone = await pairedPhone(ctx);
    const mobile = (path: string, init: RequestInit = {}) =>
      ctx.app.handle(
        new Request(`http://localhost/mobile/v1${path}`, {
          ...init,
          headers: { ...phone.auth, "content-type": "application/json", ...(init.headers ?? {}) },
        }),
      );
    const send = async (body: Record<string, unknown>) =>
      expectEnvelope(await ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, ...body }), 200).data.notification_id as number;
    const dataId = await send({ data_message: { data: "AQIDBA==", port: 9200 } });
    const textId = await send({ message: "plain" });
    const pulled = (await (await mobile("/message")).json()) as { id: string }[];
    expect(pulled).toHaveLength(2);
    for (const state of ["Sent", "Delivered"])
      await mobile("/message", {
        method: "PATCH",
        body: JSON.stringify(pulled.map((m) => ({ id: m.id, state, recipients: [], states: {} }))),
      });
    while ((await ctx.services.webhooks.deliverDue()) > 0);

    const of = (type: string, id: number) => receiver.ofType(type).filter((r) => r.body.data.notification_id === id);
    for (const [type, status] of [
      ["notification.sent", "sent"],
      ["notification.delivered", "delivered"],
    ] as const) {
      const [data] = of(type, dataId);
      expect(data.body.data).toMatchObject({ status, message: "", data_message: { data: "AQIDBA==", port: 9200 }, segments: 1 });
      const [text] = of(type, textId);
      expect(text.body.data).toMatchObject({ status, message: "plain" });
      expect(text.body.data).not.toHaveProperty("data_message");
      // A text's fields, and data_message beside them.
      expect(Object.keys(data.body.data).sort()).toEqual([...Object.keys(text.body.data), "data_message"].sort());
    }
    expect(receiver.received).toHaveLength(4);
  });

  test("a subscription gets only the events it asked for, and only its own workspace's", async () => {
    const ctx = await createTestContext();
    receiver = startReceiver();
    const theirs = startReceiver();
    try {
      await subscribe(ctx, ["notification.failed"]);
      const other = await ctx.otherWorkspace();
      expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: theirs.url, events: "*" }, { key: other.key }), 200);
      fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
      await ctx.cloudDevice(fake);
      await ctx.topUp(10);
      await ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, message: "a" });
      fake.failNext(400, 21211, "bad number");
      await ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, message: "b" });
      await ctx.services.dispatcher.dispatchDue();
      while ((await ctx.services.webhooks.deliverDue()) > 0);
      expect(receiver.received.map((r) => r.body.type)).toEqual(["notification.failed"]);
      expect(receiver.received[0].body.data).toMatchObject({ error_code: "21211" });
      expect(theirs.received).toHaveLength(0);
    } finally {
      theirs.stop();
    }
  });
});

describe("delivery log", () => {
  test("deliveries made within one millisecond list newest first, in the order they were made", async () => {
    const ctx = await createTestContext();
    receiver = startReceiver();
    const w = await subscribe(ctx);
    // The manual clock stands still: all five share created_at, so only insertion order tells them apart.
    for (let i = 1; i <= 5; i++) await ctx.services.events.emit(ctx.workspace.id, "device.online", { device_id: i });
    const listed = expectEnvelope(await ctx.get(`/v1/api/webhook/${w.webhook_id}/deliveries`), 200).data.deliveries as {
      event_id: string;
      created_at: string;
    }[];
    expect(new Set(listed.map((d) => d.created_at)).size).toBe(1);
    const events = await ctx.sql.all<{ id: string; n: number }>(
      `SELECT id, ${jsonField(ctx.sql.dialect, "data", "device_id")} AS n FROM event WHERE type = 'device.online'`,
    );
    // A JSON field is text on PostgreSQL and a number on SQLite.
    const byEvent = new Map(events.map((e) => [e.id, Number(e.n)]));
    expect(listed.map((d) => byEvent.get(d.event_id))).toEqual([5, 4, 3, 2, 1]);
  });
});

describe("retries", () => {
  test("a failing receiver is retried on the ladder, then given up and the subscription marked failing; re-enabled, it gets what waited", async () => {
    const ctx = await createTestContext();
    receiver = startReceiver();
    receiver.answer(() => new Response("nope", { status: 500 }));
    const w = await subscribe(ctx);
    await ctx.post("/v1/api/webhook/test", { webhook_id: w.webhook_id });
    expect(receiver.received).toHaveLength(1);
    for (let attempt = 1; attempt < MAX_DELIVERY_ATTEMPTS; attempt++) {
      ctx.clock.advance(RETRY_LADDER_MS[attempt - 1] - 1);
      expect(await ctx.services.webhooks.deliverDue()).toBe(0);
      ctx.clock.advance(1);
      expect(await ctx.services.webhooks.deliverDue()).toBe(1);
      expect(receiver.received).toHaveLength(attempt + 1);
    }
    const hook = expectEnvelope(await ctx.get(`/v1/api/webhook/${w.webhook_id}`), 200).data;
    expect(hook).toMatchObject({ status: "failing", consecutive_failures: MAX_DELIVERY_ATTEMPTS });
    const deliveries = expectEnvelope(await ctx.get(`/v1/api/webhook/${w.webhook_id}/deliveries`), 200).data.deliveries;
    expect(deliveries[0].status).toBe("failed");
    expect(deliveries[0].attempts).toHaveLength(MAX_DELIVERY_ATTEMPTS);
    expect(deliveries[0].attempts[0]).toMatchObject({ status_code: 500, error: "HTTP 500: nope", latency_ms: expect.any(Number) });
    // The whole ladder is about a day.
    expect(RETRY_LADDER_MS.reduce((a, b) => a + b, 0)).toBeGreaterThan(20 * 3600_000);

    // While failing, events wait.
    await ctx.services.events.emit(ctx.workspace.id, "device.online", { device_id: 1 });
    ctx.clock.advance(3600_000);
    expect(await ctx.services.webhooks.deliverDue()).toBe(0);
    receiver.answer(() => new Response(null, { status: 204 }));
    expectEnvelope(await ctx.post("/v1/api/webhook/update", { webhook_id: w.webhook_id, status: "active" }), 200);
    expect(await ctx.services.webhooks.deliverDue()).toBe(1);
    expect(receiver.received.at(-1)!.body.type).toBe("device.online");
    expect(expectEnvelope(await ctx.get(`/v1/api/webhook/${w.webhook_id}`), 200).data).toMatchObject({
      status: "active",
      consecutive_failures: 0,
    });
  });

  test("redirects are not followed and big answers are cut short", async () => {
    const ctx = await createTestContext();
    receiver = startReceiver();
    const w = await subscribe(ctx);
    receiver.answer(() => new Response(null, { status: 302, headers: { location: "http://127.0.0.1:1/elsewhere" } }));
    const redirected = expectEnvelope(await ctx.post("/v1/api/webhook/test", { webhook_id: w.webhook_id }), 200).data;
    expect(redirected).toMatchObject({ delivered: false, status_code: 302 });
    expect(redirected.error).toContain("redirects are not followed");
    receiver.answer(() => new Response("x".repeat(1_000_000), { status: 400 }));
    const big = expectEnvelope(await ctx.post("/v1/api/webhook/test", { webhook_id: w.webhook_id }), 200).data;
    expect(big.error.length).toBeLessThan(300);
  });
});

describe("the outbox survives a crash", () => {
  test("an event written with its state change is delivered after a restart, and an interrupted delivery is retried", async () => {
    receiver = startReceiver();
    const dbPath = join(mkdtempSync(join(tmpdir(), "pigeon-outbox-")), "pigeon.db");
    const first = await createTestContext({ dbPath });
    await first.phone();
    const w = await subscribe(first, ["notification.cancelled"]);
    const id = expectEnvelope(
      await first.post("/v1/notification/sms/api/send", {
        recipient_contact: RECIPIENT,
        message: "x",
        schedule_time: "2026-01-20 10:00:00",
      }),
      200,
    ).data.notification_id;
    await first.post("/v1/api/notification/cancel", { notification_id: id });
    // A second event caught mid-delivery by the crash.
    await first.services.events.emitTest(first.workspace.id, w.webhook_id, { n: 2 });
    await first.sql.run(
      "UPDATE webhook_delivery SET status = 'delivering' WHERE event_id IN (SELECT id FROM event WHERE type = 'webhook.test')",
    );
    first.db!.$client.close();

    const second = await createTestContext({ dbPath });
    expect(await second.services.webhooks.recoverInterrupted()).toBe(1);
    while ((await second.services.webhooks.deliverDue()) > 0);
    expect(receiver.received.map((r) => r.body.type).sort()).toEqual(["notification.cancelled", "webhook.test"]);
    expect(receiver.ofType("notification.cancelled")[0].body.data.notification_id).toBe(id);
    expect(verify(receiver.received[0], w.secret)).toBe(true);
  });
});

describe("private targets", () => {
  test.each([
    "http://127.0.0.1:8080/x",
    "http://localhost/x",
    "http://10.1.2.3/x",
    "http://192.168.1.10/x",
    "http://172.20.0.5/x",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]/x",
    "http://[fd00::1]/x",
    "http://0.0.0.0/x",
    "http://100.64.0.1/x",
  ])("%s is refused without PIGEON_ALLOW_PRIVATE_WEBHOOKS", async (url) => {
    const ctx = await createTestContext({ config: { allowPrivateWebhooks: false } });
    const body = expectEnvelope(await ctx.post("/v1/api/webhook/create", { url, events: "*" }), 400);
    expect(body.data.error_code).toBe("invalid_webhook_url");
    expect(body.message).toMatch(/private|local/);
  });

  test("checked again at delivery: a target that is private now is not called", async () => {
    receiver = startReceiver();
    const dbPath = join(mkdtempSync(join(tmpdir(), "pigeon-private-")), "pigeon.db");
    const allowed = await createTestContext({ dbPath });
    const w = await subscribe(allowed);
    await allowed.services.events.emitTest(allowed.workspace.id, w.webhook_id, {});
    allowed.db!.$client.close();
    const strict = await createTestContext({ dbPath, config: { allowPrivateWebhooks: false } });
    await strict.services.webhooks.deliverDue();
    expect(receiver.received).toHaveLength(0);
    const deliveries = expectEnvelope(await strict.get(`/v1/api/webhook/${w.webhook_id}/deliveries`, { key: strict.key }), 200).data
      .deliveries;
    expect(deliveries[0].attempts[0].error).toContain("target refused");
  });
});
