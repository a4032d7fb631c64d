// The cloud-number channel and the worker, against a local fake of the provider's Messages API.
// Time is moved, never waited for.
import { afterEach, describe, expect, test } from "bun:test";
import { createCloudAdapter } from "../../../src/channels/cloud/adapter";
import type { DeviceRow } from "../../../src/modules/devices/model";
import type { NotificationRecord } from "../../../src/modules/notifications/state";
import { MAX_ATTEMPTS } from "../../../src/worker/dispatcher";
import { notificationOf, smsSender } from "../../helpers/api";
import { createTestContext, expectEnvelope } from "../../helpers/context";
import { startFakeCloud, type FakeCloud } from "../../helpers/fake-cloud";
import { RECIPIENT, CLOUD_NUMBER } from "../../helpers/numbers";

let fake: FakeCloud | null = null;
afterEach(() => fake?.stop());

async function setup(opts: { credits?: number; channelTimeoutMs?: number; sendLimit?: number } = {}) {
  const ctx = await createTestContext({ channelTimeoutMs: opts.channelTimeoutMs });
  fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
  const device = await ctx.cloudDevice(fake, opts.sendLimit ? { send_limit_per_minute: opts.sendLimit } : {});
  await ctx.topUp(opts.credits ?? 100);
  return { ctx, fake, device };
}

const send = smsSender({ recipient_contact: RECIPIENT, message: "Your table is ready" });

describe("cloud number: success and status callbacks", () => {
  test("the worker posts the form the provider expects and the notification becomes sent", async () => {
    const { ctx, fake, device } = await setup();
    const id = await send(ctx);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    expect(fake.creates).toHaveLength(1);
    expect(fake.creates[0]).toEqual({
      To: RECIPIENT,
      From: CLOUD_NUMBER,
      Body: "Your table is ready",
      StatusCallback: `https://pigeon.test/v1/callbacks/cloud/${device.device_id}`,
    });
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({
      status: "sent",
      attempts: 1,
      provider_message_id: [...fake.messages.keys()][0],
      sent_at: "2026-01-15T12:00:00.000Z",
    });
    expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "attempt", "sent"]);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
  });

  test("outcomes that end together are recorded together: each notification keeps its own provider id, log and event", async () => {
    const { ctx, fake } = await setup();
    await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 1000 });
    const hook = await ctx.post("/v1/api/webhook/create", { url: "https://hooks.example.com/pigeon", events: ["notification.sent"] });
    expect(hook.status).toBe(200);
    const ids: number[] = [];
    for (let i = 0; i < 30; i++) ids.push(await smsSender({ recipient_contact: RECIPIENT, message: `order ${i} is ready` })(ctx));
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(30);
    expect(fake.messages.size).toBe(30);
    const sidOf = new Map([...fake.messages.values()].map((m) => [m.body, m.sid]));
    for (const [i, id] of ids.entries()) {
      const n = await notificationOf(ctx, id);
      expect(n.status).toBe("sent");
      expect(n.provider_message_id).toBe(sidOf.get(`order ${i} is ready`) ?? "none");
      expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "attempt", "sent"]);
    }
    // One notification.sent event a notification, naming it, and one delivery each for the subscription.
    const events = await ctx.sql.all<{ id: string; data: string }>("SELECT id, data FROM event WHERE type = 'notification.sent'");
    expect(events.map((e) => (JSON.parse(e.data) as { notification_id: number }).notification_id).sort((a, b) => a - b)).toEqual(
      [...ids].sort((a, b) => a - b),
    );
    for (const e of events) {
      const data = JSON.parse(e.data) as { provider_message_id: string; message: string };
      expect(data.provider_message_id).toBe(sidOf.get(data.message) ?? "none");
    }
    const deliveries = await ctx.sql.all<{ event_id: string }>("SELECT event_id FROM webhook_delivery");
    expect(deliveries.map((d) => d.event_id).sort()).toEqual(events.map((e) => e.id).sort());
  });

  test("delivered by status callback; repeats and late 'sent' change nothing", async () => {
    const { ctx, fake } = await setup();
    const id = await send(ctx);
    await ctx.services.dispatcher.dispatchDue();
    const sid = [...fake.messages.keys()][0];
    const r = await fake.callback(sid, "delivered");
    expect(r.status).toBe(200);
    expect((await notificationOf(ctx, id)).status).toBe("delivered");
    await fake.callback(sid, "delivered");
    await fake.callback(sid, "sent");
    await fake.callback(sid, "failed", { ErrorCode: "30003" });
    const n = await notificationOf(ctx, id);
    expect(n.status).toBe("delivered");
    expect(n.logs.filter((l: { event: string }) => l.event === "delivered")).toHaveLength(1);
  });

  test("a carrier rejection: failed with the reason logged, and the credit refunded", async () => {
    const { ctx, fake } = await setup({ credits: 1 });
    const id = await send(ctx);
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(0);
    await ctx.services.dispatcher.dispatchDue();
    await fake.callback([...fake.messages.keys()][0], "undelivered", { ErrorCode: "30003" });
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "failed", error_code: "30003", error_reason: "Unreachable destination handset" });
    expect(n.logs.at(-1)).toMatchObject({
      event: "failed",
      error_code: "30003",
      detail: expect.stringContaining("Unreachable destination handset"),
    });
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(1);
  });

  test("a callback with a bad signature is 401 and changes nothing", async () => {
    const { ctx, fake } = await setup();
    const id = await send(ctx);
    await ctx.services.dispatcher.dispatchDue();
    const r = await fake.callback([...fake.messages.keys()][0], "delivered", {}, { signatureOf: "wrong-token" });
    expect(expectEnvelope({ status: r.status, headers: r.headers, body: await r.json(), text: "" }, 401).data.error_code).toBe(
      "unauthorized",
    );
    expect((await notificationOf(ctx, id)).status).toBe("sent");
  });
});

describe("cloud number: a backlog", () => {
  test("drains in one tick at the device's pace, batch after batch, with many calls in flight: not one batch a tick", async () => {
    const { ctx, fake } = await setup({ credits: 1000, sendLimit: 600 });
    const bulk = (from: number) => ({
      messages: Array.from({ length: 100 }, (_, i) => ({ recipient_contact: RECIPIENT, message: `backlog ${from + i}` })),
    });
    for (const from of [0, 100, 200, 300, 400]) expectEnvelope(await ctx.post("/v1/api/sms/send/bulk", bulk(from)), 200);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(500);
    expect(fake.creates).toHaveLength(500);
    expect(new Set(fake.creates.map((c) => c.Body)).size).toBe(500);
    // The minute's pace (600) still holds: 100 more are taken, not 200.
    for (const from of [500, 600]) expectEnvelope(await ctx.post("/v1/api/sms/send/bulk", bulk(from)), 200);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(100);
  });
});

describe("cloud number: failures and the retry ladder", () => {
  test("a permanent provider error fails at once, with its code, and refunds", async () => {
    const { ctx, fake } = await setup({ credits: 1 });
    const id = await send(ctx);
    fake.failNext(400, 21211, "The 'To' number +14155552671 is not a valid phone number.");
    await ctx.services.dispatcher.dispatchDue();
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "failed", error_code: "21211", attempts: 1 });
    expect(n.error_reason).toContain("not a valid phone number");
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(1);
  });

  test("retryable errors back off 5, 10, 20, 40 s, then count as permanent and refund", async () => {
    const { ctx, fake } = await setup({ credits: 1 });
    const id = await send(ctx);
    const waits = [5_000, 10_000, 20_000, 40_000];
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      fake.failNext(503, 20503, "Service unavailable");
      expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
      if (attempt === MAX_ATTEMPTS) break;
      const n = await notificationOf(ctx, id);
      expect(n).toMatchObject({ status: "pending", attempts: attempt });
      expect(n.logs.at(-1)).toMatchObject({ event: "retry", error_code: "20503" });
      ctx.clock.advance(waits[attempt - 1] - 1);
      expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
      ctx.clock.advance(1);
    }
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "failed", attempts: MAX_ATTEMPTS, error_code: "20503" });
    expect(n.error_reason).toContain(`after ${MAX_ATTEMPTS} attempts`);
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(1);
    // A server error is no acknowledgement, but the provider was asked before each resend.
    expect(fake.lists.length).toBe(MAX_ATTEMPTS - 1);
  });

  test("a retry that then succeeds ends sent, once", async () => {
    const { ctx, fake } = await setup();
    const id = await send(ctx);
    fake.failNext(500, null, "Internal Server Error");
    await ctx.services.dispatcher.dispatchDue();
    ctx.clock.advance(5_000);
    await ctx.services.dispatcher.dispatchDue();
    expect(await notificationOf(ctx, id)).toMatchObject({ status: "sent", attempts: 2 });
    expect(fake.messages.size).toBe(1);
  });

  test("provider throttling (429) defers to the next tick without counting an attempt", async () => {
    const { ctx, fake } = await setup();
    const id = await send(ctx);
    fake.failNext(429, 20429, "Too Many Requests");
    await ctx.services.dispatcher.dispatchDue();
    let n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "pending", attempts: 0 });
    expect(n.logs.at(-1).event).toBe("throttled");
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    ctx.clock.advance(1000);
    await ctx.services.dispatcher.dispatchDue();
    n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "sent", attempts: 1 });
  });

  test("an unreachable provider is retryable", async () => {
    const { ctx, fake } = await setup();
    const id = await send(ctx);
    fake.stop();
    await ctx.services.dispatcher.dispatchDue();
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "pending", attempts: 1 });
    expect(n.logs.at(-1)).toMatchObject({ event: "retry", error_code: "network_error" });
  });

  test("device pacing: no more than send_limit_per_minute are handed over; the rest wait, no error", async () => {
    const { ctx, fake } = await setup({ sendLimit: 2 });
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 10));
    for (let i = 0; i < 5; i++) await send(ctx, { message: `m${i}` });
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(2);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 1, 0));
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(2);
    ctx.clock.advance(60_000);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    expect(fake.creates.map((c) => c.Body)).toEqual(["m0", "m1", "m2", "m3", "m4"]);
  });

  test("device pacing: a call made in the last moments of a window counts in the next one, so the next does not take its whole pace", async () => {
    const { ctx, fake } = await setup({ sendLimit: 2 });
    // 10 ms before the minute's end: the provider may well see these calls in the next minute.
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 59, 990));
    for (let i = 0; i < 4; i++) await send(ctx, { message: `m${i}` });
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(2);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 1, 0, 500));
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 2, 0));
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(2);
    expect(fake.creates.map((c) => c.Body)).toEqual(["m0", "m1", "m2", "m3"]);
  });

  test("device pacing: calls another server claimed in an earlier window and has not recorded yet count in this one", async () => {
    const { ctx, fake } = await setup({ sendLimit: 2 });
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 30));
    const first = await send(ctx, { message: "in flight elsewhere" });
    // Another server took it in the minute before and its call is still out.
    const taken = await ctx.services.channelCore.notifications.claimMany([first], ctx.clock.now(), "another-server");
    expect(taken.map((n) => n.id)).toEqual([first]);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 1, 0));
    for (let i = 0; i < 3; i++) await send(ctx, { message: `m${i}` });
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    expect(fake.creates.map((c) => c.Body)).toEqual(["m0"]);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 2, 0));
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    expect(fake.creates.map((c) => c.Body)).toEqual(["m0", "m1"]);
  });

  test("a scheduled cloud SMS is handed over when due, not before", async () => {
    const { ctx, fake } = await setup();
    const id = await send(ctx, { schedule_time: "2026-01-15 14:00:00", timezone: "Europe/Paris" });
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 59, 59));
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    ctx.clock.set(Date.UTC(2026, 0, 15, 13, 0, 0));
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    expect((await notificationOf(ctx, id)).status).toBe("sent");
    expect(fake.creates).toHaveLength(1);
  });

  test("deleting the device fails what waits for it and refunds", async () => {
    const { ctx, device } = await setup({ credits: 2 });
    const id = await send(ctx, { schedule_time: "2026-01-16 10:00:00" });
    await ctx.post("/v1/api/device/batch/delete", { device_ids: [device.device_id] });
    expect(await notificationOf(ctx, id)).toMatchObject({ status: "failed", error_code: "device_deleted" });
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(2);
  });
});

describe("cloud number: calls cut off mid-flight are never handed over twice", () => {
  test("a timeout after the provider took the message: the next attempt finds it and sends nothing", async () => {
    const { ctx, fake } = await setup({ channelTimeoutMs: 100 });
    const id = await send(ctx);
    fake.slowNext(400, true);
    await ctx.services.dispatcher.dispatchDue();
    let n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "pending", attempts: 1 });
    expect(n.logs.at(-1)).toMatchObject({ event: "retry", error_code: "outcome_unknown" });
    ctx.clock.advance(5_000);
    await ctx.services.dispatcher.dispatchDue();
    n = await notificationOf(ctx, id);
    expect(n.status).toBe("sent");
    expect(n.provider_message_id).toBe([...fake.messages.keys()][0]);
    expect(fake.creates).toHaveLength(1);
    expect(fake.messages.size).toBe(1);
  });

  test("a timeout where the provider never took it: the next attempt sends it, once", async () => {
    const { ctx, fake } = await setup({ channelTimeoutMs: 100 });
    const id = await send(ctx);
    fake.slowNext(400, false);
    await ctx.services.dispatcher.dispatchDue();
    ctx.clock.advance(5_000);
    await ctx.services.dispatcher.dispatchDue();
    expect((await notificationOf(ctx, id)).status).toBe("sent");
    expect(fake.messages.size).toBe(1);
    expect(fake.lists).toHaveLength(1);
  });

  test("after a crash mid-call, start-up recovery asks the provider first", async () => {
    const { ctx, fake } = await setup();
    const taken = await send(ctx, { message: "taken before the crash" });
    const lost = await send(ctx, { message: "never arrived" });
    // The provider got the first one; then the process died before recording either outcome.
    await ctx.services.dispatcher.dispatchDue();
    await ctx.sql.run("UPDATE notification SET status = 'pending', stage = 'dispatching', external_id = NULL WHERE id = ?", [taken]);
    fake.messages.clear();
    fake.messages.set("SMpre", {
      sid: "SMpre",
      to: RECIPIENT,
      from: CLOUD_NUMBER,
      body: "taken before the crash",
      status: "queued",
      statusCallback: null,
      dateCreated: Date.now(),
    });
    await ctx.sql.run("UPDATE notification SET status = 'pending', stage = 'dispatching', external_id = NULL WHERE id = ?", [lost]);
    const createsBefore = fake.creates.length;

    expect(await ctx.services.dispatcher.recoverInterrupted()).toBe(2);
    await ctx.services.dispatcher.dispatchDue();
    expect(await notificationOf(ctx, taken)).toMatchObject({ status: "sent", provider_message_id: "SMpre" });
    expect((await notificationOf(ctx, lost)).status).toBe("sent");
    expect(fake.creates.slice(createsBefore).map((c) => c.Body)).toEqual(["never arrived"]);
    expect((await notificationOf(ctx, taken)).logs.map((l: { event: string }) => l.event)).toContain("interrupted");
  });
});

describe("cloud number: the recovery check reads the whole window and claims each provider id once", () => {
  const config = (url: string) => ({ accountSid: "AC1", authToken: "t", from: CLOUD_NUMBER, messagingServiceSid: null, baseUrl: url });
  const device = (url: string) => ({ id: 1, config: config(url) }) as unknown as DeviceRow;
  const notification = {
    id: 1,
    recipient: RECIPIENT,
    message: "hello",
    createdAt: Date.now(),
    scheduleAt: null,
  } as unknown as NotificationRecord;
  const listPath = "/2010-04-01/Accounts/AC1/Messages.json";
  const page = (messages: unknown[], next: string | null) => Response.json({ messages, next_page_uri: next, page: 0, page_size: 50 });
  const message = (sid: string, at = Date.now()) => ({
    sid,
    to: RECIPIENT,
    from: CLOUD_NUMBER,
    body: "hello",
    status: "sent",
    date_created: new Date(at).toUTCString(),
  });

  test("a next_page_uri that leaves the configured provider is refused, not followed", async () => {
    const urls: string[] = [];
    for (const next of [
      "https://elsewhere.example/2010-04-01/Accounts/AC1/Messages.json?Page=1",
      "//elsewhere.example/x",
      "/2010-04-01/Accounts/AC2/Messages.json?Page=1",
    ]) {
      const adapter = createCloudAdapter({
        statusCallbackUrl: () => null,
        allowPrivateTargets: true, // the fake pages stand at a loopback address
        fetch: (async (url: string) => {
          urls.push(url);
          return page([message("SMa")], next);
        }) as unknown as typeof fetch,
      });
      await expect(adapter.reconcile!(notification, device("http://127.0.0.1:9"))).rejects.toThrow("outside its message list");
    }
    expect(urls.every((u) => u.startsWith(`http://127.0.0.1:9${listPath}?`))).toBe(true);
  });

  test("pages are followed on the configured base URL, stop at messages older than the window, and are bounded", async () => {
    const urls: string[] = [];
    const old = Date.now() - 24 * 3600_000;
    const pages = [
      page([message("SMc"), message("SMb")], `${listPath}?To=x&Page=1&PageToken=PAb`),
      page([message("SMa"), message("SMold", old)], `${listPath}?To=x&Page=2&PageToken=PAold`),
    ];
    const adapter = createCloudAdapter({
      statusCallbackUrl: () => null,
      allowPrivateTargets: true, // the fake pages stand at a loopback address
      fetch: (async (url: string) => {
        urls.push(url);
        return pages[urls.length - 1];
      }) as unknown as typeof fetch,
    });
    expect(await adapter.reconcile!(notification, device("http://127.0.0.1:9/proxy"))).toEqual(["SMa", "SMb", "SMc"]);
    expect(urls).toEqual([
      `http://127.0.0.1:9/proxy${listPath}?To=%2B14155552671&PageSize=50&From=%2B15005550006`,
      `http://127.0.0.1:9/proxy${listPath}?To=x&Page=1&PageToken=PAb`,
    ]);

    let calls = 0;
    const endless = createCloudAdapter({
      statusCallbackUrl: () => null,
      allowPrivateTargets: true, // the fake pages stand at a loopback address
      fetch: (async () => {
        calls++;
        return page([message(`SM${calls}`)], `${listPath}?Page=${calls}&PageToken=PA${calls}`);
      }) as unknown as typeof fetch,
    });
    await expect(endless.reconcile!(notification, device("http://127.0.0.1:9"))).rejects.toThrow("pages");
    expect(calls).toBe(100);
  });

  test("a message an identical notification's check claimed while our call was in flight: we ask again, and send only if nothing is left", async () => {
    const { ctx, fake } = await setup();
    const a = await send(ctx, { message: "same text" });
    const b = await send(ctx, { message: "same text" });
    // b waits; a goes out, and the provider takes it but answers slowly.
    await ctx.sql.run("UPDATE notification SET next_attempt_at = ? WHERE id = ?", [ctx.clock.now() + 3_600_000, b]);
    fake.holdBody("same text", 400);
    const first = ctx.services.dispatcher.dispatchDue();
    while (fake.messages.size === 0) await Bun.sleep(5);
    // b's earlier attempt was cut off (it never reached the provider): its check finds a's message.
    await ctx.sql.run("UPDATE notification SET next_attempt_at = ?, needs_reconcile = 1 WHERE id = ?", [ctx.clock.now(), b]);
    fake.holdBody("same text", 0);
    await ctx.services.dispatcher.dispatchDue();
    const sidOfA = [...fake.messages.keys()][0];
    expect(await notificationOf(ctx, b)).toMatchObject({ status: "sent", provider_message_id: sidOfA });
    await first;
    let n = await notificationOf(ctx, a);
    expect(n.status).toBe("pending");
    expect(n.logs.at(-1).detail).toContain("claimed by an identical notification");
    await ctx.services.dispatcher.dispatchDue();
    n = await notificationOf(ctx, a);
    expect(n.status).toBe("sent");
    expect(n.provider_message_id).not.toBe(sidOfA);
    expect(fake.messages.size).toBe(2);
    expect(fake.messages.has(n.provider_message_id)).toBe(true);
  });
});
