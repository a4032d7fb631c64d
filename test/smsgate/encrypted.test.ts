// SMSGate's isEncrypted on /3rdparty/v1/messages, in process: off until the workspace turns
// encrypted sends on, each number and the text checked for the app's format, stored and handed to
// the phone as given, and each recipient's state reported back by its ciphertext. The values come
// from test/helpers/app-encryption.ts, written from the format alone.
import { describe, expect, test } from "bun:test";
import { appEncrypt } from "../helpers/app-encryption";
import { createTestContext, expectEnvelope, type CallOptions } from "../helpers/context";
import { registerAppPhone } from "../helpers/phone";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";

const PASS = "smsgate passphrase";

async function setup(enable = true) {
  const ctx = await createTestContext();
  const phone = await registerAppPhone(ctx, "Phone", { "user-agent": "me.capcom.smsgateway/1.68.0" });
  const deviceId = (expectEnvelope(await ctx.get("/v1/api/device/list"), 200).data.devices as { device_id: number }[])[0].device_id;
  await ctx.sql.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [ctx.clock.now(), deviceId]);
  if (enable) expectEnvelope(await ctx.post("/v1/api/workspace/settings", { encrypted_sends: true }), 200);
  const authorization = `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}`;
  const gate = (method: string, path: string, o: CallOptions = {}, base = "/3rdparty/v1") =>
    ctx.call(method, `${base}${path}`, { ...o, key: null, headers: { authorization, ...o.headers } });
  const messages = async () => Number((await ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM notification"))?.n ?? 0);
  return { ctx, phone, gate, messages };
}

describe("SMSGate's isEncrypted", () => {
  test("off until the workspace turns it on: 403 encrypted_sends_disabled in SMSGate's shape, nothing stored", async () => {
    const { gate, messages } = await setup(false);
    const r = await gate("POST", "/messages", {
      body: { textMessage: { text: appEncrypt(PASS, "Hi") }, phoneNumbers: [appEncrypt(PASS, RECIPIENT)], isEncrypted: true },
    });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: 403, data: { error_code: "encrypted_sends_disabled" } });
    expect(await messages()).toBe(0);
  });

  test("each number and the text go to the phone as given; the state is isEncrypted and each recipient is reported by its ciphertext", async () => {
    const { ctx, phone, gate } = await setup();
    const first = appEncrypt(PASS, RECIPIENT);
    const second = appEncrypt(PASS, SECOND_RECIPIENT);
    const text = appEncrypt(PASS, "Your parcel is at the desk");
    // Under both bases, and skipPhoneValidation does not apply to ciphertext.
    const r = await gate("POST", "/messages", {
      body: { id: "enc-1", textMessage: { text }, phoneNumbers: [first, second], isEncrypted: true },
      query: { skipPhoneValidation: true },
    });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ id: "enc-1", isEncrypted: true, recipients: [{ phoneNumber: first }, { phoneNumber: second }] });
    const other = await gate(
      "POST",
      "/message",
      { body: { message: text, phoneNumbers: [appEncrypt(PASS, RECIPIENT)], isEncrypted: true } },
      "/api/3rdparty/v1",
    );
    expect(other.status).toBe(202);

    const pulled = (await (await ctx.app.handle(new Request("http://localhost/mobile/v1/message", { headers: phone.auth }))).json()) as {
      id: string;
      isEncrypted: boolean;
      phoneNumbers: string[];
      textMessage: { text: string };
    }[];
    expect(pulled).toHaveLength(3);
    for (const m of pulled) expect(m).toMatchObject({ isEncrypted: true, textMessage: { text } });
    // The same number encrypted twice is two ciphertexts (a fresh salt each time): matched exactly.
    const toFirst = pulled.find((m) => m.phoneNumbers[0] === first)!;
    const toSecond = pulled.find((m) => m.phoneNumbers[0] === second)!;
    const report = (id: string, phoneNumber: string, state: string, error?: string) => ({
      id,
      state,
      recipients: [{ phoneNumber, state, ...(error ? { error } : {}) }],
    });
    const res = await ctx.app.handle(
      new Request("http://localhost/mobile/v1/message", {
        method: "PATCH",
        headers: { ...phone.auth, "content-type": "application/json" },
        body: JSON.stringify([report(toFirst.id, first, "Sent"), report(toSecond.id, second, "Failed", "sendSMS: Passphrase is not set")]),
      }),
    );
    expect(res.status).toBeLessThan(300);
    const state = (await gate("GET", "/messages/enc-1")).body;
    expect(state.isEncrypted).toBe(true);
    const byNumber = Object.fromEntries(state.recipients.map((x: { phoneNumber: string }) => [x.phoneNumber, x]));
    expect(byNumber[second]).toMatchObject({ state: "Failed", error: "sendSMS: Passphrase is not set" });
    expect(byNumber[first]).toMatchObject({ state: "Sent", error: null });
    expect(state.state).toBe("Sent");
  });

  test("a value not in the app's format is 400 invalid_encrypted_value, and no recipient is stored", async () => {
    const { gate, messages } = await setup();
    const r = await gate("POST", "/messages", {
      body: { textMessage: { text: appEncrypt(PASS, "Hi") }, phoneNumbers: [appEncrypt(PASS, RECIPIENT), RECIPIENT], isEncrypted: true },
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ data: { error_code: "invalid_encrypted_value", field: "recipient_contact" } });
    expect(await messages()).toBe(0);
  });
});

describe("the passphrase, when a user pushes it to the phones", () => {
  const mobileSettings = async (ctx: Awaited<ReturnType<typeof setup>>["ctx"], auth: Record<string, string>) =>
    (await (await ctx.app.handle(new Request("http://localhost/mobile/v1/settings", { headers: auth }))).json()) as Record<string, any>;

  test("not given to the phone until chosen; set through SMSGate's settings it is, sealed at rest and never read back", async () => {
    const { ctx, phone, gate } = await setup();
    expect((await mobileSettings(ctx, phone.auth)).encryption).toBeUndefined();
    const secret = "a passphrase only the phones should know";
    const patched = await gate("PATCH", "/settings", { body: { encryption: { passphrase: secret } } });
    expect(patched.status).toBe(200);
    expect(JSON.stringify(patched.body)).not.toContain(secret);
    expect(patched.body.encryption).toEqual({ passphrase_set: true });
    expect((await mobileSettings(ctx, phone.auth)).encryption).toEqual({ passphrase: secret });
    // Read back as set, never as itself: SMSGate's read, Pigeon's device, the stored row.
    const read = await gate("GET", "/settings");
    expect(read.body.encryption).toEqual({ passphrase_set: true });
    const device = expectEnvelope(await ctx.get("/v1/api/device/list"), 200).data.devices[0];
    expect(device.encryption_passphrase_set).toBe(true);
    expect(JSON.stringify(device)).not.toContain(secret);
    const row = await ctx.sql.get<{ p: string }>('SELECT encryption_passphrase AS "p" FROM device WHERE id = ?', [device.device_id]);
    expect(row!.p).toStartWith("enc:v1:");
    expect(row!.p).not.toContain(secret);
    // What a read gave, written back, changes nothing; null takes it back (the phone is told null: none).
    expect((await gate("PUT", "/settings", { body: read.body })).status).toBe(200);
    expect((await mobileSettings(ctx, phone.auth)).encryption).toEqual({ passphrase: secret });
    expect((await gate("PATCH", "/settings", { body: { encryption: { passphrase: null } } })).body.encryption).toEqual({
      passphrase_set: false,
    });
    expect((await mobileSettings(ctx, phone.auth)).encryption).toEqual({ passphrase: null });
    const bad = await gate("PATCH", "/settings", { body: { encryption: { passphrase: "" } } });
    expect(bad.status).toBe(400);
  });

  test("Pigeon's own device update sets it for one phone; a cloud number has none to set", async () => {
    const { ctx, phone } = await setup();
    const deviceId = expectEnvelope(await ctx.get("/v1/api/device/list"), 200).data.devices[0].device_id;
    const updated = expectEnvelope(
      await ctx.post("/v1/api/device/update", { device_id: deviceId, encryption_passphrase: "per phone" }),
      200,
    ).data;
    expect(updated.encryption_passphrase_set).toBe(true);
    expect(JSON.stringify(updated)).not.toContain("per phone");
    expect((await mobileSettings(ctx, phone.auth)).encryption).toEqual({ passphrase: "per phone" });
    const { startFakeCloud } = await import("../helpers/fake-cloud");
    const fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    try {
      const cloud = await ctx.cloudDevice(fake);
      const r = expectEnvelope(await ctx.post("/v1/api/device/update", { device_id: cloud.device_id, encryption_passphrase: "x" }), 400);
      expect(r.data).toMatchObject({ error_code: "option_not_supported", field: "encryption_passphrase" });
    } finally {
      fake.stop();
    }
  });
});
