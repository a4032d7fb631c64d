// One-time codes, judged by the real `twilio` package (6.x) pointed at Pigeon: services made and
// changed through `verify.v2.services`, a code sent through a cloud number (the local fake provider
// is the phone that receives it), approved by `verificationChecks.create` with that code and refused
// with a wrong one; the same code sent again within its life; five wrong checks; expiry; cancel;
// the fraud limits (nothing sent, nothing charged); and no stored text that still shows a code once
// its channel took it. Pigeon's own /v1/api/verify answers the same. Both back ends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectEnvelope, type TestContext } from "../helpers/context";
import type { FakeCloud } from "../helpers/fake-cloud";
import { startTwilioRig, twilioRefusal, type TwilioRig } from "../helpers/twilio-rig";
import { registerAppPhone } from "../helpers/phone";

let rig: TwilioRig;
let ctx: TestContext;
let fake: FakeCloud;
let sid = "";

const client = () => rig.client().verify.v2;
const refusal = twilioRefusal;
/** The code in the last text the provider (the recipient's phone) was given for `to`. */
function codeReceivedBy(to: string): string {
  const text = fake.creates.filter((c) => c.To === to).at(-1)?.Body ?? "";
  return /(\d{4,10})$/.exec(text)?.[1] ?? "";
}
const dispatch = () => ctx.services.dispatcher.dispatchDue();
const balance = () => ctx.services.credits.balance(ctx.workspace.id);

beforeAll(async () => {
  rig = await startTwilioRig();
  ({ ctx, fake, sid } = rig);
});
afterAll(() => {
  rig?.stop();
});

describe("Twilio's Verify v2 API", () => {
  test("a service is made, read, changed and listed; a code sent by SMS is approved, a wrong one is not", async () => {
    const v2 = client();
    const service = await v2.services.create({ friendlyName: "Acme", codeLength: 6 });
    expect(service.sid).toMatch(/^VA[0-9a-f]{32}$/);
    expect(service).toMatchObject({ friendlyName: "Acme", codeLength: 6, accountSid: sid });
    expect(service.dateCreated).toBeInstanceOf(Date);
    expect((await v2.services(service.sid).fetch()).friendlyName).toBe("Acme");
    expect((await v2.services(service.sid).update({ codeLength: 8 })).codeLength).toBe(8);
    expect((await v2.services.list()).map((s) => s.sid)).toContain(service.sid);

    const to = "+14155550101";
    const started = await v2.services(service.sid).verifications.create({ to, channel: "sms" });
    expect(started).toMatchObject({ to, channel: "sms", status: "pending", valid: false, serviceSid: service.sid });
    expect(started.sid).toMatch(/^VE[0-9a-f]{32}$/);
    expect(await dispatch()).toBe(1);
    const code = codeReceivedBy(to);
    expect(code).toMatch(/^\d{8}$/);
    expect(fake.creates.at(-1)!.Body).toBe(`Your Acme verification code is: ${code}`);

    const wrong = code === "00000000" ? "11111111" : "00000000";
    const refused = await v2.services(service.sid).verificationChecks.create({ to, code: wrong });
    expect(refused).toMatchObject({ status: "pending", valid: false, sid: started.sid });
    const approved = await v2.services(service.sid).verificationChecks.create({ to, code });
    expect(approved).toMatchObject({ status: "approved", valid: true, sid: started.sid, to });
    // Approved, it is no longer pending: a second check finds none, as Twilio answers.
    expect(await refusal(v2.services(service.sid).verificationChecks.create({ to, code }))).toEqual({ status: 404, code: 20404 });
    expect((await v2.services(service.sid).verifications(started.sid).fetch()).status).toBe("approved");
  });

  test("a second start within the code's life sends the same code; five wrong checks end it; VerificationSid checks too", async () => {
    const v2 = client();
    const service = await v2.services.create({ friendlyName: "Shop" });
    const to = "+14155550102";
    const first = await v2.services(service.sid).verifications.create({ to, channel: "sms" });
    await dispatch();
    const code = codeReceivedBy(to);
    expect(code).toMatch(/^\d{6}$/);
    const again = await v2.services(service.sid).verifications.create({ to, channel: "sms" });
    expect(again.sid).toBe(first.sid);
    expect(again.sendCodeAttempts).toHaveLength(2);
    await dispatch();
    expect(fake.creates.filter((c) => c.To === to).map((c) => c.Body)).toEqual([
      `Your Shop verification code is: ${code}`,
      `Your Shop verification code is: ${code}`,
    ]);
    const wrong = code === "000000" ? "111111" : "000000";
    for (let i = 0; i < 5; i++)
      expect((await v2.services(service.sid).verificationChecks.create({ verificationSid: first.sid, code: wrong })).valid).toBe(false);
    // The sixth is refused, even with the right code.
    expect(await refusal(v2.services(service.sid).verificationChecks.create({ to, code }))).toEqual({ status: 429, code: 60202 });
  });

  test("a code expires with its life; a canceled verification is checked no more", async () => {
    const v2 = client();
    const service = await v2.services.create({ friendlyName: "Expiring" });
    const to = "+14155550103";
    await v2.services(service.sid).verifications.create({ to, channel: "sms" });
    await dispatch();
    const code = codeReceivedBy(to);
    ctx.clock.advance(10 * 60_000 + 1000);
    expect(await refusal(v2.services(service.sid).verificationChecks.create({ to, code }))).toEqual({ status: 404, code: 20404 });
    // A new one after expiry brings a new code (almost surely another).
    const fresh = await v2.services(service.sid).verifications.create({ to, channel: "sms" });
    const canceled = await v2.services(service.sid).verifications(fresh.sid).update({ status: "canceled" });
    expect(canceled.status).toBe("canceled");
    await dispatch();
    expect(await refusal(v2.services(service.sid).verificationChecks.create({ to, code: codeReceivedBy(to) }))).toEqual({
      status: 404,
      code: 20404,
    });
  });

  test("fraud limits: five codes a number in 10 minutes, then 60203; a prefix's hourly budget, then 60410; nothing sent, nothing charged", async () => {
    const v2 = client();
    const service = await v2.services.create({ friendlyName: "Guarded" });
    const to = "+14155550104";
    for (let i = 0; i < 5; i++) await v2.services(service.sid).verifications.create({ to, channel: "sms" });
    await dispatch();
    const sent = fake.creates.length;
    const credits = await balance();
    expect(await refusal(v2.services(service.sid).verifications.create({ to, channel: "sms" }))).toEqual({ status: 429, code: 60203 });
    await dispatch();
    expect(fake.creates.length).toBe(sent);
    expect(await balance()).toBe(credits);
    // Ten minutes on, the number may get codes again.
    ctx.clock.advance(10 * 60_000 + 1000);
    expect((await v2.services(service.sid).verifications.create({ to, channel: "sms" })).status).toBe("pending");

    // A budget of 3 an hour for a country prefix (set through Pigeon's API): the fourth +44 number is refused.
    const serviceId = Number.parseInt(service.sid.slice(2), 16);
    expectEnvelope(await ctx.post("/v1/api/verify/service/update", { service_id: serviceId, prefix_hourly_budget: 3 }), 200);
    for (const n of ["+447700900001", "+447700900002", "+447700900003"])
      await v2.services(service.sid).verifications.create({ to: n, channel: "sms" });
    await dispatch();
    const before = fake.creates.length;
    expect(await refusal(v2.services(service.sid).verifications.create({ to: "+447700900004", channel: "sms" }))).toEqual({
      status: 403,
      code: 60410,
    });
    // Another prefix still has its own budget (+1 spent its three on the first number above).
    expect(await refusal(v2.services(service.sid).verifications.create({ to: "+14155550105", channel: "sms" }))).toEqual({
      status: 403,
      code: 60410,
    });
    expect((await v2.services(service.sid).verifications.create({ to: "+33612345678", channel: "sms" })).status).toBe("pending");
    await dispatch();
    expect(fake.creates.length).toBe(before + 1);
  });

  test("no stored text shows a code once its channel took it: the notification, its event and its thread", async () => {
    const v2 = client();
    const service = await v2.services.create({ friendlyName: "Masked" });
    const to = "+14155550106";
    const hook = expectEnvelope(
      await ctx.post("/v1/api/webhook/create", { url: "https://example.com/hook", events: ["notification.sent"] }),
      200,
    );
    expect(hook.data.webhook_id).toBeGreaterThan(0);
    await v2.services(service.sid).verifications.create({ to, channel: "sms" });
    const [queued] = await ctx.sql.all<{ id: number; message: string }>("SELECT id, message FROM notification WHERE recipient = ?", [to]);
    // Until the channel takes it, the message holds the code (the worker must send it).
    expect(queued.message).toMatch(/\d{6}$/);
    await dispatch();
    const code = codeReceivedBy(to);
    expect(code).toMatch(/^\d{6}$/);
    await ctx.services.threads.catchUp(1000);
    const stored = [
      ...(await ctx.sql.all<{ t: string }>("SELECT message AS t FROM notification WHERE recipient = ?", [to])),
      ...(await ctx.sql.all<{ t: string }>("SELECT body AS t FROM thread_message WHERE notification_id = ?", [queued.id])),
      ...(await ctx.sql.all<{ t: string }>("SELECT data AS t FROM event WHERE type = 'notification.sent'")),
      ...(await ctx.sql.all<{ t: string }>("SELECT last_message_preview AS t FROM thread WHERE peer = ?", [to])),
    ].map((r) => r.t);
    expect(stored.length).toBeGreaterThanOrEqual(4);
    for (const text of stored) expect(text).not.toContain(code);
    expect(stored[0]).toBe("Your Masked verification code is: ******");
    // Still approved by the code itself.
    expect((await v2.services(service.sid).verificationChecks.create({ to, code })).status).toBe("approved");
  });

  test("Twilio's errors: a bad channel or parameter is 60200, another account's service 20404, a code Pigeon would not make refused", async () => {
    const v2 = client();
    const service = await v2.services.create({ friendlyName: "Errors" });
    expect(await refusal(v2.services(service.sid).verifications.create({ to: "+14155550107", channel: "voice" }))).toEqual({
      status: 400,
      code: 60200,
    });
    expect(await refusal(v2.services.create({ friendlyName: "Too short", codeLength: 3 }))).toEqual({ status: 400, code: 60200 });
    expect(
      await refusal(v2.services(service.sid).verifications.create({ to: "+14155550107", channel: "sms", customCode: "1234" })),
    ).toEqual({
      status: 400,
      code: 60200,
    });
    expect(await refusal(v2.services(`VA${"f".repeat(32)}`).fetch())).toEqual({ status: 404, code: 20404 });
    const other = await ctx.otherWorkspace();
    const theirs = await ctx.services.verify.createService(other.workspace.id, { name: "Theirs" });
    expect(await refusal(v2.services(`VA${theirs.id.toString(16).padStart(32, "0")}`).fetch())).toEqual({ status: 404, code: 20404 });
    // Deleted, a service is gone with its verifications.
    await v2.services(service.sid).remove();
    expect(await refusal(v2.services(service.sid).fetch())).toEqual({ status: 404, code: 20404 });
  });
});

describe("urgency", () => {
  test("a code goes through the service's pool, ahead of the phone's backlog, with the app's expedited priority", async () => {
    const reg = await registerAppPhone(ctx, "Backlog phone");
    const devices = expectEnvelope(await ctx.get("/v1/api/device/list"), 200).data.devices as { device_id: number; name: string }[];
    const deviceId = devices.find((d) => d.name === "Backlog phone")!.device_id;
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", { name: "Phone only", members: [{ device_id: deviceId }] }),
      200,
    ).data;
    for (let i = 0; i < 30; i++)
      expectEnvelope(
        await ctx.post("/v1/notification/sms/api/send", {
          recipient_contact: `+1415555${2000 + i}`,
          message: `Promo ${i}`,
          device_id: deviceId,
        }),
        200,
      );
    const pull = async () =>
      (await (await ctx.app.handle(new Request("http://localhost/mobile/v1/message", { headers: reg.auth }))).json()) as {
        textMessage: { text: string };
        phoneNumbers: string[];
        priority?: number;
      }[];
    // The first pull takes this minute's paced budget: the rest of the backlog must wait.
    const first = await pull();
    const budget = first.length;
    expect(budget).toBeLessThan(30);
    const service = expectEnvelope(await ctx.post("/v1/api/verify/service/create", { name: "Urgent", pool_id: pool.pool_id }), 200).data;
    const to = "+14155550120";
    expectEnvelope(await ctx.post("/v1/api/verify/start", { service_id: service.service_id, to }), 200);
    // Within the same minute: the code is handed anyway, the waiting promos are not.
    const second = await pull();
    const code = second.filter((m) => m.phoneNumbers[0] === to);
    expect(code).toHaveLength(1);
    expect(code[0].textMessage.text).toMatch(/^Your Urgent verification code is: \d{6}$/);
    expect(code[0].priority).toBe(100);
    const firstTo = new Set(first.map((m) => m.phoneNumbers[0]));
    expect(second.filter((m) => m.phoneNumbers[0] !== to && !firstTo.has(m.phoneNumbers[0]))).toEqual([]);
  });
});

describe("Pigeon's /v1/api/verify", () => {
  test("create, start, check in the envelope: a wrong code, then the right one", async () => {
    const made = expectEnvelope(
      await ctx.post("/v1/api/verify/service/create", { name: "Envelope", code_length: 4, ttl_seconds: 300 }),
      200,
    ).data;
    expect(made).toMatchObject({ name: "Envelope", code_length: 4, ttl_seconds: 300, per_number_limit: 5, prefix_hourly_budget: 100 });
    const to = "+14155550108";
    const started = expectEnvelope(await ctx.post("/v1/api/verify/start", { service_id: made.service_id, to }), 200).data;
    expect(started).toMatchObject({ status: "pending", valid: false, checks_left: 5, to, channel: "sms" });
    expect(started.sends).toHaveLength(1);
    await dispatch();
    const code = codeReceivedBy(to);
    expect(code).toMatch(/^\d{4}$/);
    const wrong = expectEnvelope(
      await ctx.post("/v1/api/verify/check", { service_id: made.service_id, to, code: code === "0000" ? "1111" : "0000" }),
      200,
    ).data;
    expect(wrong).toMatchObject({ status: "pending", valid: false, checks_left: 4 });
    const right = expectEnvelope(
      await ctx.post("/v1/api/verify/check", { service_id: made.service_id, verification_id: started.verification_id, code }),
      200,
    ).data;
    expect(right).toMatchObject({ status: "approved", valid: true });
    expect(expectEnvelope(await ctx.get(`/v1/api/verify/${started.verification_id}`), 200).data.status).toBe("approved");
    // Refusals in the envelope, with their codes.
    for (let i = 0; i < 5; i++) await ctx.post("/v1/api/verify/start", { service_id: made.service_id, to: "+14155550109" });
    const limited = expectEnvelope(await ctx.post("/v1/api/verify/start", { service_id: made.service_id, to: "+14155550109" }), 429);
    expect(limited.data.error_code).toBe("too_many_verifications");
    expect(expectEnvelope(await ctx.post("/v1/api/verify/start", { service_id: made.service_id, to: "12" }), 400).data.error_code).toBe(
      "invalid_phone_number",
    );
    expect(expectEnvelope(await ctx.post("/v1/api/verify/check", { service_id: made.service_id, code: "1" }), 400).data.error_code).toBe(
      "validation_error",
    );
    expect(expectEnvelope(await ctx.post("/v1/api/verify/service/create", { name: "X", code_length: 11 }), 400).data.error_code).toBe(
      "validation_error",
    );
  });

  test("erasing a number removes its verifications", async () => {
    const made = expectEnvelope(await ctx.post("/v1/api/verify/service/create", { name: "Erase" }), 200).data;
    const to = "+14155550110";
    const started = expectEnvelope(await ctx.post("/v1/api/verify/start", { service_id: made.service_id, to }), 200).data;
    const erased = expectEnvelope(await ctx.post("/v1/api/privacy/erase", { phone: to }), 200).data.erased;
    expect(erased.verifications).toBe(1);
    expect((await ctx.get(`/v1/api/verify/${started.verification_id}`)).status).toBe(404);
  });
});
