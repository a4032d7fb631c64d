// Twilio's cancel (`messages(sid).update({ status: "canceled" })`, the real `twilio` package) of a
// message a paired phone has downloaded but not taken up: Twilio has no word for "cancelling", so
// the resource answers as it stands (`queued`, the phone decides) and reads `canceled` once the
// phone dropped it, or `sent` when it had already taken it up. The phone acts as the app (v1.67.0+).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { smsSender } from "../helpers/api";
import { mobile, pairMobile } from "../helpers/mobile";
import { RECIPIENT } from "../helpers/numbers";
import { startTwilioRig, twilioRefusal, type TwilioRig } from "../helpers/twilio-rig";

let rig: TwilioRig;
let phone: Awaited<ReturnType<typeof pairMobile>>;

beforeAll(async () => {
  rig = await startTwilioRig();
  phone = await pairMobile(rig.ctx);
});
afterAll(() => rig?.stop());

const smsSid = (id: number) => `SM${id.toString(16).padStart(32, "0")}`;

/** A message for the paired phone, downloaded by it; its SID and the phone's id for it. */
async function downloaded(text: string) {
  const id = await smsSender({ recipient_contact: RECIPIENT, device_id: phone.deviceId })(rig.ctx, { message: text });
  const items = (await mobile(rig.ctx, "GET", "/message", { auth: phone.bearer })).json as { id: string; message: string }[];
  const m = items.find((x) => x.message === text)!;
  const report = (state: string) =>
    mobile(rig.ctx, "PATCH", "/message", {
      auth: phone.bearer,
      body: [{ id: m.id, state, recipients: [{ phoneNumber: RECIPIENT, state }], states: {} }],
    });
  return { sid: smsSid(id), report };
}

describe("Twilio's cancel of a message the phone downloaded", () => {
  test("answers the resource as it stands while the phone decides, then reads canceled once it dropped it", async () => {
    const c = rig.client();
    const { sid, report } = await downloaded("drop me");
    const asked = await c.messages(sid).update({ status: "canceled" });
    expect(asked).toMatchObject({ sid, status: "queued" });
    await report("Cancelled");
    expect((await c.messages(sid).fetch()).status).toBe("canceled");
    // Done: a second cancel is Twilio's 20009.
    expect(await twilioRefusal(c.messages(sid).update({ status: "canceled" }))).toEqual({ status: 400, code: 20009 });
  });

  test("the phone had taken it up: it reads sent, and the cancel is refused from then on", async () => {
    const c = rig.client();
    const { sid, report } = await downloaded("too late");
    expect((await c.messages(sid).update({ status: "canceled" })).status).toBe("queued");
    await report("Processed");
    expect((await c.messages(sid).fetch()).status).toBe("sending");
    await report("Sent");
    expect((await c.messages(sid).fetch()).status).toBe("sent");
    expect(await twilioRefusal(c.messages(sid).update({ status: "canceled" }))).toEqual({ status: 400, code: 20009 });
  });
});
