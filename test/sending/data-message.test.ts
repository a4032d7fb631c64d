// A data SMS (`data_message: {data, port}`) on Pigeon's own SMS send routes: its checks (each
// refusal with its own error_code, nothing stored), what a paired phone pulls for it, its state
// reports, how the notification shows it, and where it cannot go (a cloud number, a failover order
// naming one, a template, the chat-app). In process; the binary with the simulated phone is
// test/binary/data-sms-e2e.test.ts.
import { afterEach, describe, expect, test } from "bun:test";
import { notificationOf, SEND_PATH } from "../helpers/api";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";
import { pullMessages, reportStates } from "../helpers/mobile";

/** "Hello" as base64: 5 bytes. */
const HELLO = "SGVsbG8=";
const b64 = (bytes: number) => Buffer.alloc(bytes, 0xa5).toString("base64");

let fake: FakeCloud | null = null;
afterEach(() => {
  fake?.stop();
  fake = null;
});

const stored = async (ctx: TestContext) => ((await ctx.sql.get("SELECT count(*) AS n FROM notification")) as { n: number }).n;

describe("data_message on the SMS send routes", () => {
  test("is stored as one segment with an empty message, shown as data_message, and pulled as the app's dataMessage", async () => {
    const ctx = await createTestContext();
    const phone = await ctx.phone("Data phone");
    const r = expectEnvelope(
      await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, data_message: { data: HELLO, port: 53739 }, sim_number: 1 }),
      200,
    );
    expect(r.data).toMatchObject({ message: "", data_message: { data: HELLO, port: 53739 }, template_id: null });
    const n = await notificationOf(ctx, r.data.notification_id);
    expect(n).toMatchObject({ status: "pending", message: "", data_message: { data: HELLO, port: 53739 }, segments: 1, cost: 0 });

    const [m] = await pullMessages(ctx, phone.device_token);
    // The app's GatewayApi.Message (app/src/main/java/me/capcom/smsgateway/modules/gateway/GatewayApi.kt):
    // `content` is `_dataMessage ?: _textMessage ?: _message?.let(Text)`, and MessageContent.Data
    // is `{data: String, port: UShort}`; so a data SMS carries dataMessage alone, and an app that
    // predates it finds no content and fails the message rather than sending an empty text.
    expect(m).toEqual({
      id: expect.any(String),
      dataMessage: { data: HELLO, port: 53739 },
      phoneNumbers: [RECIPIENT],
      simNumber: 1,
      withDeliveryReport: true,
      isEncrypted: false,
      priority: 0,
      state: "Pending",
      createdAt: expect.any(String),
    });
    expect(m).not.toHaveProperty("textMessage");
    expect(m).not.toHaveProperty("message");

    // Its states come back as any SMS's do (PATCH /mobile/v1/message).
    const at = "2026-01-15T12:00:02.000Z";
    await reportStates(ctx, phone.device_token, [
      { id: m.id, state: "Sent", recipients: [{ phoneNumber: RECIPIENT, state: "Sent" }], states: { Sent: at } },
    ]);
    expect(await notificationOf(ctx, r.data.notification_id)).toMatchObject({ status: "sent", sent_at: at });
  });

  test("the short, overview and bulk routes take it too; a bulk item with a bad one fails alone", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const short = expectEnvelope(
      await ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, data_message: { data: "AAE=", port: 1 } }),
      200,
    );
    expect(short.data.data_message).toEqual({ data: "AAE=", port: 1 });
    const overview = await ctx.post("/v1/sms/send", { to: RECIPIENT, data_message: { data: "AAE", port: 65535 } });
    expect(overview.status).toBe(200);
    // Stored in canonical padded base64.
    expect((await notificationOf(ctx, Number(overview.body.messageId))).data_message).toEqual({ data: "AAE=", port: 65535 });
    const bulk = expectEnvelope(
      await ctx.post("/v1/api/sms/send/bulk", {
        messages: [
          { recipient_contact: RECIPIENT, data_message: { data: HELLO, port: 9200 } },
          { recipient_contact: SECOND_RECIPIENT, data_message: { data: "not base64!", port: 9200 } },
          { recipient_contact: SECOND_RECIPIENT, message: "text beside it" },
        ],
      }),
      200,
    );
    expect(bulk.data).toMatchObject({ total: 3, accepted: 2, failed: 1 });
    expect(bulk.data.results[0]).toMatchObject({ ok: true, message: "", data_message: { data: HELLO, port: 9200 } });
    expect(bulk.data.results[1]).toMatchObject({
      ok: false,
      error: { status_id: 400, error_code: "invalid_data_encoding", field: "data_message.data" },
    });
    expect(bulk.data.results[2]).toMatchObject({ ok: true, message: "text beside it" });
    expect(bulk.data.results[2]).not.toHaveProperty("data_message");
  });

  test("a preview counts it as one segment with no text", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const r = expectEnvelope(
      await ctx.post("/v1/api/sms/preview", { recipient_contact: RECIPIENT, data_message: { data: b64(133), port: 5 } }),
      200,
    );
    expect(r.data).toMatchObject({ would: "send", segments: 1, encoding: null, message: null, error: null });
  });

  test.each([
    [{ data: "SGVsbG8", port: 53739, extra: 1 }, "validation_error", "data_message"],
    [{ data: "SGVs bG8=", port: 53739 }, "invalid_data_encoding", "data_message.data"],
    [{ data: "SGVsbG8-", port: 53739 }, "invalid_data_encoding", "data_message.data"],
    [{ data: "S", port: 53739 }, "invalid_data_encoding", "data_message.data"],
    [{ data: "SG=VsbG8", port: 53739 }, "invalid_data_encoding", "data_message.data"],
    [{ data: "", port: 53739 }, "data_message_empty", "data_message.data"],
    [{ data: "==", port: 53739 }, "invalid_data_encoding", "data_message.data"],
    [{ data: "AAE==", port: 53739 }, "invalid_data_encoding", "data_message.data"],
    [{ data: b64(134), port: 53739 }, "data_message_too_long", "data_message.data"],
    [{ data: HELLO, port: 0 }, "invalid_port", "data_message.port"],
    [{ data: HELLO, port: 65536 }, "invalid_port", "data_message.port"],
    [{ data: HELLO, port: -1 }, "invalid_port", "data_message.port"],
    [{ data: HELLO, port: 80.5 }, "validation_error", "data_message"],
    [{ data: HELLO }, "validation_error", "data_message"],
  ])("%j → 400 %s, nothing stored", async (dataMessage, code, field) => {
    const ctx = await createTestContext();
    await ctx.phone();
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, data_message: dataMessage }), 400);
    expect(r.data.error_code).toBe(code);
    expect(String(r.data.field)).toStartWith(field);
    expect(await stored(ctx)).toBe(0);
  });

  test("133 bytes is the most one data SMS carries; 134 names the limit", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    expect((await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, data_message: { data: b64(133), port: 7 } })).status).toBe(200);
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, data_message: { data: b64(134), port: 7 } }), 400);
    expect(r.data).toMatchObject({ error_code: "data_message_too_long", length: 134, limit: 133 });
  });

  test("exactly one content field: with message or template_id it is 400 content_conflict", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const t = expectEnvelope(await ctx.post("/v1/api/template/create", { name: "Hi", body: "Hello {{name}}", channel: "sms" }), 200).data;
    for (const extra of [{ message: "Hi" }, { template_id: t.template_id ?? t.id, variables: { name: "Ada" } }]) {
      const r = expectEnvelope(
        await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, data_message: { data: HELLO, port: 9 }, ...extra }),
        400,
      );
      expect(r.data.error_code).toBe("content_conflict");
      expect(r.data.fields).toContain("data_message");
    }
    expect(await stored(ctx)).toBe(0);
  });

  test("a cloud number cannot send it: named, chosen, or in a failover order, 400 data_message_unsupported", async () => {
    const ctx = await createTestContext();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    const cloud = await ctx.cloudDevice(fake);
    await ctx.topUp(5);
    const body = { recipient_contact: RECIPIENT, data_message: { data: HELLO, port: 9 } };
    // The workspace's only SMS device is the cloud number: nothing can carry it.
    const none = expectEnvelope(await ctx.post(SEND_PATH, body), 400);
    expect(none.data.error_code).toBe("no_active_device");
    const named = expectEnvelope(await ctx.post(SEND_PATH, { ...body, device_id: cloud.device_id }), 400);
    expect(named.data).toMatchObject({ error_code: "data_message_unsupported", device_id: cloud.device_id, kind: "cloud" });
    const phone = await ctx.phone();
    const order = expectEnvelope(await ctx.post(SEND_PATH, { ...body, routes: ["phone", "cloud"] }), 400);
    expect(order.data).toMatchObject({ error_code: "data_message_unsupported", route: "cloud" });
    expect(await stored(ctx)).toBe(0);
    // With a phone beside it, a send that names no device goes through the phone, never the cloud number.
    const ok = expectEnvelope(await ctx.post(SEND_PATH, body), 200);
    expect((await notificationOf(ctx, ok.data.notification_id)).device_id).toBe(phone.device_id);
    const phoneOnly = expectEnvelope(await ctx.post(SEND_PATH, { ...body, routes: ["phone"] }), 200);
    expect(phoneOnly.data.route).toBe("sms");
    // A workspace default order naming the cloud number does not apply to a data SMS.
    expect((await ctx.post("/v1/api/workspace/settings", { default_routes: ["cloud", "phone"] })).status).toBe(200);
    const byDefault = expectEnvelope(await ctx.post(SEND_PATH, body), 200);
    const n = await notificationOf(ctx, byDefault.data.notification_id);
    expect(n).toMatchObject({ device_id: phone.device_id, routes: null, cost: 0 });
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(5);
  });

  test("counts as one SMS of the plan's monthly allowance", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const before = await ctx.services.sending.smsUsedThisMonth(ctx.account.id);
    expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, data_message: { data: b64(133), port: 9 } }), 200);
    expect(await ctx.services.sending.smsUsedThisMonth(ctx.account.id)).toBe(before + 1);
  });
});

describe("a data SMS through a sender pool", () => {
  const poolOf = async (ctx: TestContext, body: Record<string, unknown>) =>
    expectEnvelope(await ctx.post("/v1/api/pool/create", body), 200).data as { pool_id: number };
  const data = { data_message: { data: HELLO, port: 9200 } };
  const viaPool = async (ctx: TestContext, body: Record<string, unknown>) => {
    const r = expectEnvelope(await ctx.post(SEND_PATH, body), 200);
    return notificationOf(ctx, r.data.notification_id);
  };

  test("the pool picks among its phones only: a cloud member is skipped, and the log says why", async () => {
    const ctx = await createTestContext();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    const cloud = (await ctx.cloudDevice(fake)).device_id;
    const phone = (await ctx.phone("Pool phone")).device_id;
    await ctx.topUp(5);
    // Round robin over the cloud number first, then the phone: every data SMS still goes through the phone.
    const pool = await poolOf(ctx, { name: "Mixed", strategy: "round_robin", members: [{ device_id: cloud }, { device_id: phone }] });
    for (const to of [RECIPIENT, SECOND_RECIPIENT, RECIPIENT]) {
      const n = await viaPool(ctx, { recipient_contact: to, pool_id: pool.pool_id, ...data });
      expect(n).toMatchObject({ device_id: phone, data_message: { data: HELLO, port: 9200 }, cost: 0 });
      const line = (n.logs as { event: string; detail: string }[]).find((l) => l.event === "pool")!;
      expect(line.detail).toContain(`(device ${cloud}): cannot send a data SMS`);
    }
    // A text send through the same pool still takes its turn on the cloud number.
    const texts = [];
    for (const to of [RECIPIENT, SECOND_RECIPIENT])
      texts.push((await viaPool(ctx, { recipient_contact: to, pool_id: pool.pool_id, message: "Hi" })).device_id);
    expect(texts.sort()).toEqual([cloud, phone].sort());
  });

  test("sticky: a recipient kept on a cloud member gets the data SMS from a phone and stays kept for text", async () => {
    const ctx = await createTestContext();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    const cloud = (await ctx.cloudDevice(fake)).device_id;
    await ctx.topUp(5);
    const pool = await poolOf(ctx, { name: "Sticky", members: [{ device_id: cloud }], is_default: true });
    // The recipient is kept on the cloud number by a first text; then a phone joins the pool.
    expect((await viaPool(ctx, { recipient_contact: RECIPIENT, message: "Hi" })).device_id).toBe(cloud);
    const phone = (await ctx.phone("Pool phone")).device_id;
    expectEnvelope(
      await ctx.post("/v1/api/pool/update", { pool_id: pool.pool_id, members: [{ device_id: cloud }, { device_id: phone }] }),
      200,
    );
    // The default pool serves the data SMS through its phone.
    expect((await viaPool(ctx, { recipient_contact: RECIPIENT, ...data })).device_id).toBe(phone);
    // The next text still goes out through the member the recipient is kept on.
    const next = await viaPool(ctx, { recipient_contact: RECIPIENT, message: "Again" });
    expect(next.device_id).toBe(cloud);
    expect((next.logs as { event: string; detail: string }[]).find((l) => l.event === "pool")!.detail).toContain("kept for this recipient");
  });

  test("a pool with no phone member is 400 data_message_unsupported, and nothing is stored", async () => {
    const ctx = await createTestContext();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    const cloud = (await ctx.cloudDevice(fake)).device_id;
    // A phone outside the pool: the pool named decides, so the send does not fall back to it.
    await ctx.phone("Not in the pool");
    const pool = await poolOf(ctx, { name: "Clouds", members: [{ device_id: cloud }] });
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, pool_id: pool.pool_id, ...data }), 400);
    expect(r.data).toMatchObject({ error_code: "data_message_unsupported", pool_id: pool.pool_id });
    expect(await stored(ctx)).toBe(0);
    // Nor is the recipient kept on a member by the refused send.
    expect((await ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM pool_sticky"))?.n ?? 0).toBe(0);
  });

  test("its phones offline: pool_unavailable naming every member's reason", async () => {
    const ctx = await createTestContext();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    const cloud = (await ctx.cloudDevice(fake)).device_id;
    const phone = (await ctx.phone("Quiet phone")).device_id;
    const pool = await poolOf(ctx, { name: "Mixed", members: [{ device_id: cloud }, { device_id: phone }] });
    ctx.clock.advance(301_000);
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, pool_id: pool.pool_id, ...data }), 400);
    expect(r.data.error_code).toBe("pool_unavailable");
    expect(r.data.members).toEqual([
      { member_id: expect.any(Number), device_id: cloud, reason: "cannot send a data SMS" },
      { member_id: expect.any(Number), device_id: phone, reason: "offline" },
    ]);
    expect(await stored(ctx)).toBe(0);
  });
});
