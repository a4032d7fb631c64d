// Cancelling a message a paired phone has downloaded, as the app does it (capcom6/android-sms-gateway
// v1.67.0+): GatewayService.processMessage drops a message handed as `Cancelling` while it is still
// Pending in the phone's own queue (MessagesService.cancelMessage), and answers Cancelled for one it
// never had; EventsReceiver does the same on MessageCancelled {messageId}; a message the phone has
// taken up (Processed: handed to the radio) is not cancelled, and its Sent/Failed follow. The app
// reports by PATCH /message (SendStateWorker) and posts sms:cancelled (webhooks/EventsReceiver).
import { describe, expect, test } from "bun:test";
import { notificationOf, smsSender } from "../../helpers/api";
import { createTestContext, expectEnvelope, type TestContext } from "../../helpers/context";
import { mobile, openStream, pairMobile } from "../../helpers/mobile";

const TO = "+79990001234";
const OLD_UA = "me.capcom.smsgateway/1.66.2";
const send = smsSender({ recipient_contact: TO, message: "Hello from Pigeon" });
const cancel = (ctx: TestContext, id: number) => ctx.post("/v1/api/notification/cancel", { notification_id: id });
const events = async (ctx: TestContext, id: number) => (await notificationOf(ctx, id)).logs.map((l: { event: string }) => l.event);

/** GatewayApi.MessagePatchRequest for one message with one recipient, as SendStateWorker sends it. */
const report = (id: string, state: string, error: string | null = null) => [
  { id, state, recipients: [{ phoneNumber: TO, state, error }], states: { [state]: "2026-01-15T19:00:01.000+07:00" } },
];

/** A phone with one message it downloaded (and holds in its own queue). */
async function downloaded(ctx: TestContext, ua?: string) {
  const phone = await pairMobile(ctx, { ua });
  const id = await send(ctx);
  const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer, ua })).json;
  expect(m.state).toBe("Pending");
  return { phone, id, m };
}

describe("cancelling a message the phone has downloaded (app 1.67.0 and later)", () => {
  test("202 cancelling; the phone is told on its stream and by its next download, never handed it as Pending again", async () => {
    const ctx = await createTestContext();
    const { phone, id, m } = await downloaded(ctx);
    const stream = await openStream(ctx, phone.bearer);
    await stream.until(":connected");
    const r = await cancel(ctx, id);
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ status_id: 202, data: { notification_id: id, status: "cancelling", cancelled_at: null } });
    // MessageCancelledEvent.Payload {messageId}.
    await stream.until(`event: MessageCancelled\ndata: {"messageId":"${m.id}"}\n\n`);
    await stream.close();
    // GatewayApi.Message with state Cancelling, and its phoneNumbers (the app reports Cancelled for them if it lost it).
    const pulled = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
    expect(pulled).toEqual([
      {
        id: m.id,
        message: "Hello from Pigeon",
        textMessage: { text: "Hello from Pigeon" },
        phoneNumbers: [TO],
        isEncrypted: false,
        state: "Cancelling",
        createdAt: m.createdAt,
      },
    ]);
    expect((await notificationOf(ctx, id)).status).toBe("cancelling");
    expect(expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data.notifications[0].status).toBe("cancelling");
    // Asking again changes nothing and says the same.
    const again = await cancel(ctx, id);
    expect(again.status).toBe(202);
    expect(await events(ctx, id)).toEqual(["accepted", "cancel_requested"]);
  });

  test("the phone drops it (Cancelled): cancelled, and the phone is not told again", async () => {
    const ctx = await createTestContext();
    const { phone, id, m } = await downloaded(ctx);
    expect((await cancel(ctx, id)).status).toBe(202);
    // The phone's own webhook too (SmsEventPayload.SmsCancelled), as the app posts both.
    expect((await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body: report(m.id, "Cancelled") })).status).toBe(204);
    expect(
      (await phone.post("sms:cancelled", { messageId: m.id, recipient: TO, phoneNumber: TO, cancelledAt: "2026-01-15T19:00:01.000+07:00" }))
        .status,
    ).toBe(204);
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "cancelled", cancelled_at: expect.any(String) });
    expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "cancel_requested", "cancelled"]);
    expect(n.logs.at(-1).detail).toContain("the phone dropped it");
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json).toEqual([]);
  });

  test("the phone had taken it up (Processed, then Sent): sent after all, reported as such; a cancel now is 409", async () => {
    const ctx = await createTestContext();
    const { phone, id, m } = await downloaded(ctx);
    expect((await cancel(ctx, id)).status).toBe(202);
    await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body: report(m.id, "Processed") });
    const processing = await notificationOf(ctx, id);
    expect(processing.status).toBe("pending");
    expect(processing.logs.at(-1).detail).toContain("before the cancel reached it");
    expect((await cancel(ctx, id)).status).toBe(409);
    await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body: report(m.id, "Sent") });
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "sent", cancelled_at: null });
    expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "cancel_requested", "processed", "sent"]);
    // Nothing is handed again, as Pending or as Cancelling.
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json).toEqual([]);
  });

  test("a report of Sent or Failed straight after the cancel decides it the same way", async () => {
    const ctx = await createTestContext();
    const phone = await pairMobile(ctx);
    const a = await send(ctx, { message: "one" });
    const b = await send(ctx, { message: "two" });
    const [ma, mb] = (await mobile(ctx, "GET", "/message?order=fifo", { auth: phone.bearer })).json;
    await cancel(ctx, a);
    await cancel(ctx, b);
    await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body: report(ma.id, "Sent") });
    await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body: report(mb.id, "Failed", "Send result: RESULT_ERROR_RADIO_OFF") });
    const sent = await notificationOf(ctx, a);
    expect(sent.status).toBe("sent");
    expect(sent.logs.at(-1).detail).toContain("the cancel asked of the phone came too late");
    expect(await notificationOf(ctx, b)).toMatchObject({ status: "failed", error_code: "RESULT_ERROR_RADIO_OFF" });
  });

  test("a message the app downloaded again and reported Pending (still in its queue) stays cancellable", async () => {
    const ctx = await createTestContext();
    const { phone, id, m } = await downloaded(ctx);
    // GatewayService.processMessage: a message it already has only has its state sent again.
    const again = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
    expect(again.map((x: { id: string }) => x.id)).toEqual([m.id]);
    await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body: report(m.id, "Pending") });
    expect((await cancel(ctx, id)).status).toBe(202);
    // While it is cancelling, another Pending report changes nothing.
    await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body: report(m.id, "Pending") });
    expect((await notificationOf(ctx, id)).status).toBe("cancelling");
  });

  test("a message being cancelled stays with its phone: moving the downloaded ones by hand leaves it", async () => {
    const ctx = await createTestContext();
    const { phone, id } = await downloaded(ctx);
    const other = await pairMobile(ctx, { name: "Other/phone" });
    await cancel(ctx, id);
    const moved = expectEnvelope(
      await ctx.post(`/v1/api/device/${phone.deviceId}/reassign`, { to_device_id: other.deviceId, include_pulled: true }),
      200,
    ).data;
    expect(moved.moved).toBe(0);
    expect(await notificationOf(ctx, id)).toMatchObject({ status: "cancelling", device_id: phone.deviceId });
  });
});

describe("what is not asked of the phone", () => {
  test("an app before 1.67 cannot drop it: 200 cancelled at once, never told; if it sends it anyway its report wins", async () => {
    const ctx = await createTestContext();
    const { phone, id, m } = await downloaded(ctx, OLD_UA);
    const r = await cancel(ctx, id);
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("cancelled");
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer, ua: OLD_UA })).json).toEqual([]);
    await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, ua: OLD_UA, body: report(m.id, "Sent") });
    const n = await notificationOf(ctx, id);
    expect(n.status).toBe("sent");
    expect(n.logs.at(-1).detail).toContain("already had it");
  });

  test("a message the phone never downloaded is cancelled at once", async () => {
    const ctx = await createTestContext();
    const phone = await pairMobile(ctx);
    const id = await send(ctx);
    const r = await cancel(ctx, id);
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("cancelled");
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json).toEqual([]);
  });

  test("a message the phone cancelled by itself is not handed back to it as Cancelling", async () => {
    const ctx = await createTestContext();
    const { phone, id, m } = await downloaded(ctx);
    await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body: report(m.id, "Cancelled") });
    expect((await notificationOf(ctx, id)).status).toBe("cancelled");
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json).toEqual([]);
  });
});
