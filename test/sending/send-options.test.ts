// The send options every SMS send route takes (sim_number, priority, with_delivery_report, ttl,
// valid_until): their checks, how they are stored and shown, and expiry on a cloud number, where
// credits are at stake. In-process, with a manual clock; the paired phone's side is in
// binary/send-options-e2e.test.ts against the binary and the simulator.
import { afterEach, describe, expect, test } from "bun:test";
import { notificationOf, SEND_PATH } from "../helpers/api";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT } from "../helpers/numbers";

let fake: FakeCloud | null = null;
afterEach(() => fake?.stop());

async function cloudSetup(credits = 5, channelTimeoutMs?: number) {
  const ctx = await createTestContext({ channelTimeoutMs });
  fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
  const device = await ctx.cloudDevice(fake);
  await ctx.topUp(credits);
  return { ctx, fake, device };
}

describe("send options: bad values are 400 with an error_code, and nothing is stored", () => {
  test.each([
    [{ sim_number: 0 }, "validation_error", "sim_number"],
    [{ sim_number: 4 }, "validation_error", "sim_number"],
    [{ sim_number: 1.5 }, "validation_error", "sim_number"],
    [{ priority: 128 }, "validation_error", "priority"],
    [{ priority: -129 }, "validation_error", "priority"],
    [{ ttl: 0 }, "validation_error", "ttl"],
    [{ ttl: 30 * 24 * 3600 + 1 }, "validation_error", "ttl"],
    [{ with_delivery_report: "no" }, "validation_error", "with_delivery_report"],
    [{ ttl: 60, valid_until: "2026-01-15T13:00:00Z" }, "ttl_with_valid_until", undefined],
    [{ valid_until: "2026-01-15T11:00:00Z" }, "invalid_valid_until", "valid_until"],
    [{ valid_until: "tomorrow" }, "invalid_valid_until", "valid_until"],
    [{ valid_until: "2026-01-15T13:00:00" }, "invalid_valid_until", "valid_until"],
    [{ valid_until: "2026-01-15T12:30:00Z", schedule_time: "2026-01-15 13:00:00" }, "invalid_valid_until", "valid_until"],
    [{ valid_until: "2026-03-15T12:00:00Z" }, "invalid_valid_until", "valid_until"],
  ])("%j → %s", async (extra, code, field) => {
    const { ctx } = await cloudSetup();
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, message: "Hi", ...extra }), 400);
    expect(r.data.error_code).toBe(code);
    if (field) expect(r.data.field).toBe(field);
    expect(expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data.notifications).toHaveLength(0);
  });

  test("sim_number on a cloud number is 400 option_not_supported; the chat-app send refuses the SMS-only options", async () => {
    const { ctx, device } = await cloudSetup();
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, message: "Hi", sim_number: 1 }), 400);
    expect(r.data).toMatchObject({ error_code: "option_not_supported", field: "sim_number", device_id: device.device_id });
    const chat = expectEnvelope(
      await ctx.post("/v1/api/chatapp/send", { recipient_contact: RECIPIENT, message: "Hi", priority: 100 }),
      400,
    );
    expect(chat.data).toMatchObject({ error_code: "validation_error", field: "priority" });
  });

  test("sim_number for a SIM the phone did not report is 400 invalid_sim_number naming its SIMs; with no list reported, any is taken", async () => {
    const ctx = await createTestContext();
    const phone = await ctx.phone("One-SIM phone");
    // The phone reports its SIM list as the app does (PATCH /mobile/v1/device, redacted fields).
    const patched = await ctx.app.handle(
      new Request("http://localhost/mobile/v1/device", {
        method: "PATCH",
        headers: {
          authorization: `Bearer ${phone.device_token}`,
          "content-type": "application/json",
          "user-agent": "me.capcom.smsgateway/1.68.0",
        },
        body: JSON.stringify({
          id: phone.external_id,
          simCards: [{ slotIndex: 0, simNumber: 1, phoneNumber: "*******1234", carrierName: "***ile", iccid: "****************5678" }],
        }),
      }),
    );
    expect(patched.status).toBeLessThan(300);
    const send = (extra: Record<string, unknown>) =>
      ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, message: "Hi", device_id: phone.device_id, ...extra });
    const refused = expectEnvelope(await send({ sim_number: 2 }), 400);
    expect(refused.data).toMatchObject({
      error_code: "invalid_sim_number",
      field: "sim_number",
      device_id: phone.device_id,
      sim_numbers: [1],
    });
    expect(refused.message).toContain("SIM 2");
    expect(expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data.notifications).toHaveLength(0);
    expect(expectEnvelope(await send({ sim_number: 1 }), 200).data.notification_id).toBeGreaterThan(0);
    // A phone that never reported its SIMs (an app before 1.65) is left to choose, as before.
    const unknown = await ctx.phone("Silent phone");
    expectEnvelope(
      await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, message: "Hi", device_id: unknown.device_id, sim_number: 3 }),
      200,
    );
  });

  test("every send route takes the options: bulk items fail alone, the overview form stores them", async () => {
    const { ctx } = await cloudSetup();
    const bulk = expectEnvelope(
      await ctx.post("/v1/api/sms/send/bulk", {
        messages: [
          { recipient_contact: RECIPIENT, message: "ok", ttl: 60, priority: 5 },
          { recipient_contact: RECIPIENT, message: "bad", priority: 200 },
        ],
      }),
      200,
    );
    expect(bulk.data).toMatchObject({ accepted: 1, failed: 1 });
    expect(bulk.data.results[1].error.error_code).toBe("validation_error");
    const overview = expectEnvelope(
      await ctx.post("/v1/sms/send", { to: RECIPIENT, message: "Hi", valid_until: "2026-01-15T12:10:00Z", with_delivery_report: false }),
      200,
    );
    const n = await notificationOf(ctx, Number(overview.data.messageId));
    expect(n).toMatchObject({ valid_until: "2026-01-15T12:10:00.000Z", with_delivery_report: false, priority: 0, sim_number: null });
    const first = await notificationOf(ctx, bulk.data.results[0].notification_id);
    expect(first).toMatchObject({ valid_until: "2026-01-15T12:01:00.000Z", priority: 5, with_delivery_report: true });
  });
});

describe("ttl on a cloud number", () => {
  test("a message the worker did not send in time fails with `expired`, is never sent, and its credit comes back", async () => {
    const { ctx, fake } = await cloudSetup(1);
    const sent = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, message: "Code 1234", ttl: 30 }), 200);
    const id = sent.data.notification_id;
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(0);
    ctx.clock.advance(31_000);
    // Past its valid_until the dispatcher leaves it alone, and the expiry task fails it.
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    expect(await ctx.services.expiry.expireDue()).toBe(1);
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "failed", error_code: "expired", valid_until: "2026-01-15T12:00:30.000Z" });
    expect(n.logs.at(-1)).toMatchObject({ event: "failed", error_code: "expired" });
    expect(fake.creates).toHaveLength(0);
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(1);
    expect(await ctx.services.expiry.expireDue()).toBe(0);
  });

  test("ttl counts from schedule_time, and a message sent in time is not touched", async () => {
    const { ctx, fake } = await cloudSetup();
    const sent = expectEnvelope(
      await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, message: "Later", schedule_time: "2026-01-15 12:10:00", ttl: 60 }),
      200,
    );
    const n0 = await notificationOf(ctx, sent.data.notification_id);
    expect(n0.valid_until).toBe("2026-01-15T12:11:00.000Z");
    ctx.clock.advance(10 * 60_000);
    expect(await ctx.services.expiry.expireDue()).toBe(0);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    ctx.clock.advance(5 * 60_000);
    expect(await ctx.services.expiry.expireDue()).toBe(0);
    expect((await notificationOf(ctx, sent.data.notification_id)).status).toBe("sent");
    expect(fake.creates).toHaveLength(1);
  });

  test("an attempt cut off before its ttl ran out is settled by asking the provider: found, it is sent; not found, it expires unsent", async () => {
    const { ctx, fake } = await cloudSetup(2, 100);
    const taken = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, message: "Taken", ttl: 3 }), 200).data
      .notification_id;
    fake.slowNext(400, true);
    await ctx.services.dispatcher.dispatchDue();
    const lost = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, message: "Lost", ttl: 3 }), 200).data
      .notification_id;
    fake.slowNext(400, false);
    await ctx.services.dispatcher.dispatchDue();
    expect((await notificationOf(ctx, taken)).status).toBe("pending");
    expect((await notificationOf(ctx, lost)).status).toBe("pending");
    ctx.clock.advance(10_000);
    // The expiry task leaves both to the dispatcher, which asks the provider before anything else.
    expect(await ctx.services.expiry.expireDue()).toBe(0);
    await ctx.services.dispatcher.dispatchDue();
    expect((await notificationOf(ctx, taken)).status).toBe("sent");
    expect(await notificationOf(ctx, lost)).toMatchObject({ status: "failed", error_code: "expired" });
    expect(fake.messages.size).toBe(1);
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(1);
  });
});
