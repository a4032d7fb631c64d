// The events the app (capcom6/android-sms-gateway v1.68.0) posts, each accepted and acted on. The
// event names are the app's WebHookEvent enum (modules/webhooks/domain/WebHookEvent.kt); the
// envelope is WebHookEventDTO {id, webhookId, event, deviceId, payload}; app:started's payload is
// AppStartedPayload {simCards: List<SimCard>} (modules/webhooks/payload/AppStartedPayload.kt,
// modules/localserver/domain/SimCard.kt), emitted by OrchestratorService.start with the SIM cards
// unredacted; sms:cancelled's is SmsEventPayload.SmsCancelled (modules/webhooks/payload/SmsEventPayload.kt).
import { describe, expect, test } from "bun:test";
import { notificationOf, smsSender } from "../../helpers/api";
import { createTestContext, expectEnvelope } from "../../helpers/context";
import { mobile, pairMobile } from "../../helpers/mobile";

const TO = "+79990001234";
const NAME = "Xiaomi/vayu_eea";

/** The SIM card as registration sends it: GatewayService.toDTO redacts to the last four characters; Gson drops nulls. */
const REDACTED = [{ slotIndex: 0, simNumber: 1, phoneNumber: "*******1234", carrierName: "***ile", iccid: "****************5678" }];

const pair = (ctx: Parameters<typeof pairMobile>[0]) => pairMobile(ctx, { name: NAME, simCards: REDACTED });

describe("the events the app posts", () => {
  test("GET /webhooks asks for every event of the app's WebHookEvent that Pigeon acts on, sms:cancelled and app:started among them", async () => {
    const ctx = await createTestContext();
    const phone = await pair(ctx);
    const events = (await mobile(ctx, "GET", "/webhooks", { auth: phone.bearer })).json.map((h: { event: string }) => h.event);
    expect(events).toEqual(
      expect.arrayContaining(["sms:cancelled", "app:started", "system:ping", "sms:sent", "sms:delivered", "sms:failed"]),
    );
  });

  test("app:started replaces the device's SIM list, redacted as registration sends it, so the phone is still recognised when it registers again", async () => {
    const ctx = await createTestContext();
    const phone = await pair(ctx);
    // Two SIMs now, as SubscriptionsHelper.getActiveSimCards gives them (no permission for the second number).
    const r = await phone.post("app:started", {
      simCards: [
        { slotIndex: 0, simNumber: 1, phoneNumber: "+79991231234", carrierName: "Mobile", iccid: "89701012345678905678" },
        { slotIndex: 1, simNumber: 2, carrierName: "MTS", iccid: "89701019999999994321" },
      ],
    });
    expect(r.status).toBe(204);
    const device = expectEnvelope(await ctx.get(`/v1/api/device/${phone.deviceId}`), 200).data;
    expect(device.sim_cards).toEqual([
      { sim_number: 1, slot_index: 0, phone_number: "********1234", carrier_name: "**bile", iccid: "****************5678" },
      { sim_number: 2, slot_index: 1, phone_number: null, carrier_name: "****", iccid: "****************4321" },
    ]);
    // The app registers again (a reinstall) with the same SIMs, redacted by GatewayService.toDTO.
    const again = await mobile(ctx, "POST", "/device", {
      auth: `Bearer ${phone.pairingToken}`,
      body: {
        name: NAME,
        simCards: [
          { slotIndex: 0, simNumber: 1, phoneNumber: "********1234", carrierName: "**bile", iccid: "****************5678" },
          { slotIndex: 1, simNumber: 2, carrierName: "****", iccid: "****************4321" },
        ],
      },
    });
    expect(again.status).toBe(201);
    expect(again.json.id).toBe(phone.id);
    // A payload without a list changes nothing.
    expect((await phone.post("app:started", {})).status).toBe(204);
    expect(expectEnvelope(await ctx.get(`/v1/api/device/${phone.deviceId}`), 200).data.sim_cards).toHaveLength(2);
  });

  test("sms:cancelled (the app cancelled a message it held) cancels the notification", async () => {
    const ctx = await createTestContext();
    const phone = await pair(ctx);
    const id = await smsSender({ recipient_contact: TO, message: "Hello" })(ctx);
    const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
    const r = await phone.post("sms:cancelled", {
      messageId: m.id,
      recipient: TO,
      simNumber: 1,
      phoneNumber: TO,
      cancelledAt: "2026-01-15T19:00:01.000+07:00",
    });
    expect(r.status).toBe(204);
    expect((await notificationOf(ctx, id)).status).toBe("cancelled");
  });

  test("an event Pigeon does not act on is answered 204, changes nothing and is logged", async () => {
    const ctx = await createTestContext();
    const phone = await pair(ctx);
    const r = await phone.post("sms:flash-received", { messageId: "x1", sender: TO, message: "hi" });
    expect(r.status).toBe(204);
    expect(((await ctx.sql.get("SELECT count(*) AS n FROM thread_message")) as { n: number }).n).toBe(0);
    expect(ctx.logs.some((l) => l.includes("phone webhook sms:flash-received") && l.includes("not acted on"))).toBe(true);
  });

  test("PATCH /message takes the app's list: each item applied, in one request", async () => {
    const ctx = await createTestContext();
    const phone = await pair(ctx);
    const send = smsSender({ recipient_contact: TO, message: "Hello" });
    const a = await send(ctx, { message: "one" });
    const b = await send(ctx, { message: "two" });
    const items = (await mobile(ctx, "GET", "/message?order=fifo", { auth: phone.bearer })).json;
    // GatewayApi.MessagePatchRequest {id, state, recipients[{phoneNumber, state, error}], states}.
    const body = items.map((m: { id: string }, i: number) => ({
      id: m.id,
      state: i === 0 ? "Sent" : "Failed",
      recipients: [{ phoneNumber: TO, state: i === 0 ? "Sent" : "Failed", error: i === 0 ? null : "Send result: RESULT_ERROR_RADIO_OFF" }],
      states: {},
    }));
    expect((await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body })).status).toBe(204);
    expect((await notificationOf(ctx, a)).status).toBe("sent");
    expect((await notificationOf(ctx, b)).status).toBe("failed");
  });
});
