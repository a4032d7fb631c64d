// End-to-end encrypted SMS (`encrypted: true`) on Pigeon's own send routes, in process: the
// workspace switch, the form check, what is refused because the server cannot read the values,
// how they are stored, handed to the phone and reported back. The values come from an encryptor
// written from the format alone (test/helpers/app-encryption.ts), not from Pigeon's code.
import { describe, expect, test } from "bun:test";
import { SEND_PATH } from "../helpers/api";
import { appEncrypt } from "../helpers/app-encryption";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { registerAppPhone } from "../helpers/phone";
import { startFakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT } from "../helpers/numbers";

const PASS = "correct horse battery staple";
const to = () => appEncrypt(PASS, RECIPIENT);
const text = (t = "Your code is 4242") => appEncrypt(PASS, t);

async function setup(enable = true) {
  const ctx = await createTestContext();
  const phone = await registerAppPhone(ctx, "Phone", { "user-agent": "me.capcom.smsgateway/1.68.0" });
  const devices = expectEnvelope(await ctx.get("/v1/api/device/list"), 200).data.devices as { device_id: number; kind: string }[];
  const deviceId = devices.find((d) => d.kind === "sms")!.device_id;
  await ctx.sql.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [ctx.clock.now(), deviceId]);
  if (enable) expectEnvelope(await ctx.post("/v1/api/workspace/settings", { encrypted_sends: true }), 200);
  return { ctx, phone, deviceId };
}

const stored = async (ctx: TestContext) => expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data.notifications;

async function pull(ctx: TestContext, auth: Record<string, string>) {
  const res = await ctx.app.handle(new Request("http://localhost/mobile/v1/message", { headers: auth }));
  expect(res.status).toBe(200);
  return (await res.json()) as {
    id: string;
    isEncrypted: boolean;
    phoneNumbers: string[];
    textMessage: { text: string };
    message: string;
  }[];
}

async function patch(ctx: TestContext, auth: Record<string, string>, items: unknown[]) {
  const res = await ctx.app.handle(
    new Request("http://localhost/mobile/v1/message", {
      method: "PATCH",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(items),
    }),
  );
  expect(res.status).toBeLessThan(300);
}

describe("encrypted sends are off until the workspace turns them on", () => {
  test("off by default: 403 encrypted_sends_disabled naming the setting, nothing stored; the settings say why", async () => {
    const { ctx } = await setup(false);
    const settings = expectEnvelope(await ctx.get("/v1/api/workspace/settings"), 200).data;
    expect(settings.encrypted_sends).toBe(false);
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), message: text(), encrypted: true }), 403);
    expect(r.data).toMatchObject({ error_code: "encrypted_sends_disabled", setting: "encrypted_sends" });
    expect(r.message).toContain("opt-outs");
    expect(await stored(ctx)).toHaveLength(0);
    // Turned on, the same send is taken; turned off again (null: the default), refused again.
    expectEnvelope(await ctx.post("/v1/api/workspace/settings", { encrypted_sends: true }), 200);
    expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), message: text(), encrypted: true }), 200);
    expect(expectEnvelope(await ctx.post("/v1/api/workspace/settings", { encrypted_sends: null }), 200).data.encrypted_sends).toBe(false);
    expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), message: text(), encrypted: true }), 403);
  });
});

describe("an encrypted send is stored verbatim, handed to the phone as encrypted, and reported back by its ciphertext", () => {
  test("the API shows the ciphertext marked encrypted; the phone gets isEncrypted; its reports move the notification", async () => {
    const { ctx, phone } = await setup();
    const recipient = to();
    const message = text();
    const sent = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: recipient, message, encrypted: true }), 200).data;
    expect(sent.message).toBe(message);
    const n = expectEnvelope(await ctx.get(`/v1/api/notification/${sent.notification_id}`), 200).data;
    expect(n).toMatchObject({ recipient, message, encrypted: true, segments: 1, cost: 0, route: "sms", routes: null });

    const items = await pull(ctx, phone.auth);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ isEncrypted: true, phoneNumbers: [recipient], textMessage: { text: message }, message });

    // The app reports by the ciphertext it was given: it never encrypts back.
    await patch(ctx, phone.auth, [{ id: items[0].id, state: "Sent", recipients: [{ phoneNumber: recipient, state: "Sent" }] }]);
    expect(expectEnvelope(await ctx.get(`/v1/api/notification/${sent.notification_id}`), 200).data.status).toBe("sent");
  });

  test("a recipient the phone cannot decrypt fails the notification with the app's reason, refunded as any failure", async () => {
    const { ctx, phone } = await setup();
    const recipient = to();
    const id = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: recipient, message: text(), encrypted: true }), 200).data
      .notification_id;
    const [item] = await pull(ctx, phone.auth);
    const reason = "Can't send message: error:1e000065:Cipher functions:OPENSSL_internal:BAD_DECRYPT";
    await patch(ctx, phone.auth, [
      { id: item.id, state: "Failed", recipients: [{ phoneNumber: recipient, state: "Failed", error: reason }] },
    ]);
    const n = expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data;
    expect(n).toMatchObject({ status: "failed", error_reason: reason, cost: 0, encrypted: true });
  });

  test("an encrypted send joins no thread (its number cannot be read); a plain one still does", async () => {
    const { ctx } = await setup();
    expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), message: text(), encrypted: true }), 200);
    expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: RECIPIENT, message: "plain" }), 200);
    await ctx.services.threads.catchUp();
    const threads = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads as { peer: string }[];
    expect(threads.map((t) => t.peer)).toEqual([RECIPIENT]);
  });

  test("every SMS send route takes the flag: short, overview and bulk (a bad item fails alone)", async () => {
    const { ctx } = await setup();
    expectEnvelope(await ctx.post("/v1/api/sms/send", { recipient_contact: to(), message: text(), encrypted: true }), 200);
    const overview = await ctx.post("/v1/sms/send", { to: to(), message: text(), encrypted: true });
    expect(overview.status).toBe(200);
    const bulk = expectEnvelope(
      await ctx.post("/v1/api/sms/send/bulk", {
        messages: [
          { recipient_contact: to(), message: text(), encrypted: true },
          { recipient_contact: RECIPIENT, message: text(), encrypted: true },
          { recipient_contact: RECIPIENT, message: "plain" },
        ],
      }),
      200,
    ).data;
    expect(bulk.results.map((r: { ok: boolean }) => r.ok)).toEqual([true, false, true]);
    expect(bulk.results[1].error.error_code).toBe("invalid_encrypted_value");
    const all = await stored(ctx);
    expect(all.filter((n: { encrypted: boolean }) => n.encrypted)).toHaveLength(3);
  });

  test("a preview counts no segments; quiet hours are read in the workspace's own zone, which the reply names", async () => {
    const { ctx } = await setup();
    const r = expectEnvelope(
      await ctx.post("/v1/api/sms/preview", { recipient_contact: to(), message: text(), encrypted: true }),
      200,
    ).data;
    expect(r).toMatchObject({
      would: "send",
      cost: 0,
      encrypted: true,
      characters: null,
      encoding: null,
      segments: null,
      ucs2_characters: [],
    });
    // With quiet hours all day long in the workspace's zone, it is held, and the reply names that zone.
    expectEnvelope(
      await ctx.post("/v1/api/workspace/settings", { quiet_hours: { start: "00:00", end: "23:59" }, time_zone: "Asia/Tokyo" }),
      200,
    );
    const held = expectEnvelope(
      await ctx.post("/v1/api/sms/preview", { recipient_contact: to(), message: text(), encrypted: true }),
      200,
    ).data;
    expect(held.would).toBe("hold");
    expect(held.quiet_hours.timezone).toBe("Asia/Tokyo");
  });
});

describe("a value not in the app's format is 400 invalid_encrypted_value naming the field, and nothing is stored", () => {
  const good = text();
  const [, , , salt, body] = good.split("$");
  test.each([
    ["a plain number", RECIPIENT, "recipient_contact"],
    ["another algorithm", `$aes-128-cbc/pbkdf2-sha1$i=1000$${salt}$${body}`, "recipient_contact"],
    ["no iteration count", `$aes-256-cbc/pbkdf2-sha1$n=1000$${salt}$${body}`, "recipient_contact"],
    ["zero iterations", `$aes-256-cbc/pbkdf2-sha1$i=0$${salt}$${body}`, "recipient_contact"],
    ["iterations past the app's Int", `$aes-256-cbc/pbkdf2-sha1$i=2147483648$${salt}$${body}`, "recipient_contact"],
    ["a salt that is not base64", `$aes-256-cbc/pbkdf2-sha1$i=1000$not*base64$${body}`, "recipient_contact"],
    ["an 8-byte salt", `$aes-256-cbc/pbkdf2-sha1$i=1000$${Buffer.alloc(8).toString("base64")}$${body}`, "recipient_contact"],
    ["ciphertext of 15 bytes", `$aes-256-cbc/pbkdf2-sha1$i=1000$${salt}$${Buffer.alloc(15).toString("base64")}`, "recipient_contact"],
    ["a sixth chunk", `${good}$extra`, "recipient_contact"],
  ])("recipient_contact: %s", async (_what, recipient, field) => {
    const { ctx } = await setup();
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: recipient, message: text(), encrypted: true }), 400);
    expect(r.data).toMatchObject({ error_code: "invalid_encrypted_value", field });
    expect(await stored(ctx)).toHaveLength(0);
  });

  test("the message is checked the same way, and a missing one is message_required", async () => {
    const { ctx } = await setup();
    const bad = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), message: "hello", encrypted: true }), 400);
    expect(bad.data).toMatchObject({ error_code: "invalid_encrypted_value", field: "message" });
    const none = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), encrypted: true }), 400);
    expect(none.data.error_code).toBe("message_required");
    expect(await stored(ctx)).toHaveLength(0);
  });

  test("any iteration count the app accepts is taken (1, the Python client's 75,000, 2^31-1)", async () => {
    const { ctx } = await setup();
    for (const i of ["1", "75000", "2147483647"]) {
      const value = `$aes-256-cbc/pbkdf2-sha1$i=${i}$${salt}$${body}`;
      expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: value, message: value, encrypted: true }), 200);
    }
  });
});

describe("what the server cannot honour for an encrypted send is refused with its own code", () => {
  test("a cloud number, a failover order naming another route, a template", async () => {
    const { ctx } = await setup();
    const fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    try {
      const cloud = await ctx.cloudDevice(fake);
      const send = (extra: Record<string, unknown>) =>
        ctx.post(SEND_PATH, { recipient_contact: to(), message: text(), encrypted: true, ...extra });
      const onCloud = expectEnvelope(await send({ device_id: cloud.device_id }), 400);
      expect(onCloud.data).toMatchObject({ error_code: "encrypted_needs_phone", field: "device_id", kind: "cloud" });
      const failover = expectEnvelope(await send({ routes: ["phone", "cloud"] }), 400);
      expect(failover.data).toMatchObject({ error_code: "encrypted_needs_phone", field: "routes", route: "cloud" });
      const template = expectEnvelope(
        await ctx.post(SEND_PATH, { recipient_contact: to(), template_id: "OTP", variables: { code: "1" }, encrypted: true }),
        400,
      );
      expect(template.data).toMatchObject({ error_code: "encrypted_option_unsupported", field: "template_id" });
      // The phone alone as its route is fine; the workspace's default order does not apply.
      expectEnvelope(await ctx.post("/v1/api/workspace/settings", { default_routes: ["cloud", "phone"] }), 200);
      const taken = expectEnvelope(await send({}), 200).data;
      expect(expectEnvelope(await ctx.get(`/v1/api/notification/${taken.notification_id}`), 200).data.route).toBe("sms");
      expectEnvelope(await send({ routes: ["phone"] }), 200);
      expect((await stored(ctx)).length).toBe(2);
    } finally {
      fake.stop();
    }
  });

  test("a pool that chooses a cloud number is refused; a pool of phones chooses among them", async () => {
    const { ctx, deviceId } = await setup();
    const fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    try {
      const cloud = await ctx.cloudDevice(fake);
      const cloudPool = expectEnvelope(
        await ctx.post("/v1/api/pool/create", { name: "Cloud", strategy: "sticky", members: [{ device_id: cloud.device_id }] }),
        200,
      ).data;
      const phonePool = expectEnvelope(
        await ctx.post("/v1/api/pool/create", { name: "Phones", strategy: "sticky", members: [{ device_id: deviceId }] }),
        200,
      ).data;
      const refused = expectEnvelope(
        await ctx.post(SEND_PATH, { recipient_contact: to(), message: text(), encrypted: true, pool_id: cloudPool.pool_id }),
        400,
      );
      expect(refused.data).toMatchObject({ error_code: "encrypted_needs_phone", field: "pool_id", kind: "cloud" });
      const taken = expectEnvelope(
        await ctx.post(SEND_PATH, { recipient_contact: to(), message: text(), encrypted: true, pool_id: phonePool.pool_id }),
        200,
      ).data;
      expect(expectEnvelope(await ctx.get(`/v1/api/notification/${taken.notification_id}`), 200).data.device_id).toBe(deviceId);
    } finally {
      fake.stop();
    }
  });
});

describe("the API document describes the flag and its refusals", () => {
  test("every SMS send body has `encrypted` naming each refusal's code; SMSGate's isEncrypted and the workspace switch say theirs", async () => {
    const ctx = await createTestContext();
    const spec = (await ctx.get("/openapi.json", { key: null })).body;
    const text = JSON.stringify(spec);
    const send = spec.paths["/v1/notification/sms/api/send"].post;
    const schema = send.requestBody.content["application/json"].schema;
    const body = schema.$ref ? spec.components.schemas[schema.$ref.split("/").pop()] : schema;
    for (const code of ["invalid_encrypted_value", "encrypted_needs_phone", "encrypted_option_unsupported", "encrypted_sends_disabled"]) {
      expect(body.properties.encrypted.description).toContain(code);
      expect(send.description).toContain(code);
    }
    expect(text).toContain("encryption.passphrase");
    expect(text).toMatch(/isEncrypted[^}]*encrypted_sends_disabled/);
  });
});
