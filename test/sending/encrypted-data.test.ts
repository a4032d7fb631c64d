// An end-to-end encrypted data SMS (`encrypted: true` with `data_message`) on Pigeon's own send
// routes, in process: its `data` is one value in the app's encrypted format whose plaintext is the
// payload's base64, its port is plain. It follows the rules of an encrypted send (the workspace
// switch, a paired phone only, no template) and of a data SMS (one segment, one plan SMS), is
// stored verbatim, pulled as the app's dataMessage with isEncrypted, and reported back by its
// ciphertext. The values come from the encryptor written from the format alone
// (test/helpers/app-encryption.ts); the binary with the simulated phone is
// test/binary/encrypted-data-e2e.test.ts.
import { describe, expect, test } from "bun:test";
import { notificationOf, SEND_PATH } from "../helpers/api";
import { appEncrypt } from "../helpers/app-encryption";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { startFakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT } from "../helpers/numbers";
import { pullMessages, reportStates } from "../helpers/mobile";

const PASS = "correct horse battery staple";
const to = () => appEncrypt(PASS, RECIPIENT);
/** A payload of `bytes` bytes, as the base64 text that is encrypted. */
const b64 = (bytes: number) => Buffer.alloc(bytes, 0x5a).toString("base64");
const sealed = (plain = "3q2+7w==") => appEncrypt(PASS, plain);
const cipherBytes = (value: string) => Buffer.from(value.split("$")[4], "base64").length;

async function setup(enable = true) {
  const ctx = await createTestContext();
  const phone = await ctx.phone("Data phone");
  if (enable) expectEnvelope(await ctx.post("/v1/api/workspace/settings", { encrypted_sends: true }), 200);
  return { ctx, phone };
}

const stored = async (ctx: TestContext) => ((await ctx.sql.get("SELECT count(*) AS n FROM notification")) as { n: number }).n;

describe("an encrypted data SMS is stored verbatim, pulled as an encrypted dataMessage, and reported by its ciphertext", () => {
  test("the API shows the ciphertext and the plain port; the phone gets the app's shape; its reports move the notification", async () => {
    const { ctx, phone } = await setup();
    const recipient = to();
    const data = sealed();
    const r = expectEnvelope(
      await ctx.post(SEND_PATH, { recipient_contact: recipient, data_message: { data, port: 9200 }, encrypted: true }),
      200,
    );
    expect(r.data).toMatchObject({ message: "", data_message: { data, port: 9200 }, template_id: null });
    const n = await notificationOf(ctx, r.data.notification_id);
    expect(n).toMatchObject({
      recipient,
      message: "",
      data_message: { data, port: 9200 },
      encrypted: true,
      segments: 1,
      cost: 0,
      routes: null,
    });

    const items = await pullMessages(ctx, phone.device_token);
    expect(items).toHaveLength(1);
    // The app's GatewayApi.Message: `content` is `_dataMessage ?: _textMessage ?: _message`, and
    // MessagesService.sendSMS, for MessageContent.Data with isEncrypted, decrypts `data` and
    // base64-decodes what it reads; each of `phoneNumbers` is decrypted on its own. So the
    // ciphertext goes in `dataMessage.data` as given, the port beside it, and no text at all.
    expect(items[0]).toEqual({
      id: expect.any(String),
      dataMessage: { data, port: 9200 },
      phoneNumbers: [recipient],
      isEncrypted: true,
      withDeliveryReport: true,
      priority: 0,
      state: "Pending",
      createdAt: expect.any(String),
    });

    // The app reports by the ciphertext it was given: it never encrypts back.
    await reportStates(ctx, phone.device_token, [
      {
        id: items[0].id,
        state: "Sent",
        recipients: [{ phoneNumber: recipient, state: "Sent" }],
        states: { Sent: "2026-01-15T12:00:02.000Z" },
      },
    ]);
    expect((await notificationOf(ctx, r.data.notification_id)).status).toBe("sent");
    await reportStates(ctx, phone.device_token, [
      { id: items[0].id, state: "Delivered", recipients: [{ phoneNumber: recipient, state: "Delivered" }] },
    ]);
    expect((await notificationOf(ctx, r.data.notification_id)).status).toBe("delivered");
  });

  test("a payload the phone cannot decrypt or decode fails the notification with the app's reason", async () => {
    const { ctx, phone } = await setup();
    const recipient = to();
    const id = expectEnvelope(
      await ctx.post(SEND_PATH, { recipient_contact: recipient, data_message: { data: sealed("not*base64?"), port: 9 }, encrypted: true }),
      200,
    ).data.notification_id;
    const [item] = await pullMessages(ctx, phone.device_token);
    const reason = `Can't send message: Invalid Base64 data for message ${item.id}`;
    await reportStates(ctx, phone.device_token, [
      { id: item.id, state: "Failed", recipients: [{ phoneNumber: recipient, state: "Failed", error: reason }] },
    ]);
    expect(await notificationOf(ctx, id)).toMatchObject({ status: "failed", error_reason: reason, cost: 0, encrypted: true });
  });

  test("every SMS send route takes it: short, overview, bulk (a bad item fails alone) and the preview", async () => {
    const { ctx } = await setup();
    const one = { recipient_contact: to(), data_message: { data: sealed(), port: 1 }, encrypted: true };
    expect(expectEnvelope(await ctx.post("/v1/api/sms/send", one), 200).data.data_message).toEqual(one.data_message);
    const overview = await ctx.post("/v1/sms/send", { to: to(), data_message: { data: sealed(), port: 65535 }, encrypted: true });
    expect(overview.status).toBe(200);
    expect(await notificationOf(ctx, Number(overview.body.messageId))).toMatchObject({ encrypted: true, data_message: { port: 65535 } });
    const bulk = expectEnvelope(
      await ctx.post("/v1/api/sms/send/bulk", {
        messages: [
          one,
          { ...one, data_message: { data: "3q2+7w==", port: 1 } },
          { recipient_contact: to(), message: sealed("hi"), encrypted: true },
        ],
      }),
      200,
    ).data;
    expect(bulk.results.map((x: { ok: boolean }) => x.ok)).toEqual([true, false, true]);
    expect(bulk.results[1].error).toMatchObject({ error_code: "invalid_encrypted_value", field: "data_message.data" });
    expect(bulk.results[2]).not.toHaveProperty("data_message");
    const preview = expectEnvelope(await ctx.post("/v1/api/sms/preview", one), 200).data;
    expect(preview).toMatchObject({ would: "send", cost: 0, encrypted: true, characters: null, encoding: null, segments: 1 });
    expect(await stored(ctx)).toBe(4);
  });

  test("counts as one SMS of the plan; joins no thread; a plan without links takes it, as a plain data SMS", async () => {
    const { ctx } = await setup();
    const before = await ctx.services.sending.smsUsedThisMonth(ctx.account.id);
    await ctx.services.accounts.setAccountPlan(ctx.account.id, "free");
    expectEnvelope(
      await ctx.post(SEND_PATH, { recipient_contact: to(), data_message: { data: sealed(b64(133)), port: 9 }, encrypted: true }),
      200,
    );
    expect(await ctx.services.sending.smsUsedThisMonth(ctx.account.id)).toBe(before + 1);
    // An encrypted text under the same plan is still refused: its text could hold a link.
    const text = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), message: sealed("hi"), encrypted: true }), 400);
    expect(text.data).toMatchObject({ error_code: "encrypted_option_unsupported", field: "message" });
    await ctx.services.threads.catchUp();
    expect(expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads).toEqual([]);
  });
});

describe("the ciphertext's bound: what a 133-byte payload's base64 can need", () => {
  test("133 bytes are 180 base64 characters, which encrypt to 192 bytes: taken; 192 plaintext bytes (208 of ciphertext) are not", async () => {
    const { ctx } = await setup();
    expect(b64(133)).toHaveLength(180);
    const most = sealed(b64(133));
    expect(cipherBytes(most)).toBe(192);
    expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), data_message: { data: most, port: 7 }, encrypted: true }), 200);
    // The same base64 in lines of 76 with CRLF, as a MIME encoder writes it, still fits in 192.
    const wrapped = sealed(
      `${b64(133)
        .match(/.{1,76}/g)!
        .join("\r\n")}\r\n`,
    );
    expect(cipherBytes(wrapped)).toBe(192);
    expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), data_message: { data: wrapped, port: 7 }, encrypted: true }), 200);
    const over = sealed("A".repeat(192));
    expect(cipherBytes(over)).toBe(208);
    const r = expectEnvelope(
      await ctx.post(SEND_PATH, { recipient_contact: to(), data_message: { data: over, port: 7 }, encrypted: true }),
      400,
    );
    expect(r.data).toMatchObject({ error_code: "invalid_encrypted_value", field: "data_message.data" });
    expect(r.data.reason).toContain("at most 192");
    expect(await stored(ctx)).toBe(2);
  });
});

describe("refusals: each with its code, nothing stored", () => {
  test("off until the workspace turns encrypted sends on: 403 encrypted_sends_disabled", async () => {
    const { ctx } = await setup(false);
    const r = expectEnvelope(
      await ctx.post(SEND_PATH, { recipient_contact: to(), data_message: { data: sealed(), port: 9 }, encrypted: true }),
      403,
    );
    expect(r.data.error_code).toBe("encrypted_sends_disabled");
    expect(await stored(ctx)).toBe(0);
  });

  const good = sealed();
  const [, , , salt] = good.split("$");
  test.each([
    ["plain base64 as data", { data_message: { data: "3q2+7w==", port: 9 } }, "invalid_encrypted_value", "data_message.data"],
    ["data that is not a string", { data_message: { data: 42, port: 9 } }, "validation_error", "data_message"],
    [
      "another algorithm",
      { data_message: { data: good.replace("aes-256-cbc", "aes-128-cbc"), port: 9 } },
      "invalid_encrypted_value",
      "data_message.data",
    ],
    [
      "a ciphertext of 15 bytes",
      { data_message: { data: `$aes-256-cbc/pbkdf2-sha1$i=1000$${salt}$${Buffer.alloc(15).toString("base64")}`, port: 9 } },
      "invalid_encrypted_value",
      "data_message.data",
    ],
    ["port 0", { data_message: { data: good, port: 0 } }, "invalid_port", "data_message.port"],
    ["port 65536", { data_message: { data: good, port: 65536 } }, "invalid_port", "data_message.port"],
    ["a text beside it", { data_message: { data: good, port: 9 }, message: sealed("hi") }, "content_conflict", undefined],
    ["a template beside it", { data_message: { data: good, port: 9 }, template_id: "OTP" }, "content_conflict", undefined],
    ["variables", { data_message: { data: good, port: 9 }, variables: { code: "1" } }, "encrypted_option_unsupported", "variables"],
    [
      "a plain recipient",
      { data_message: { data: good, port: 9 }, recipient_contact: RECIPIENT },
      "invalid_encrypted_value",
      "recipient_contact",
    ],
    [
      "a failover order naming the cloud",
      { data_message: { data: good, port: 9 }, routes: ["phone", "cloud"] },
      "encrypted_needs_phone",
      "routes",
    ],
  ])("%s", async (_what, extra, code, field) => {
    const { ctx } = await setup();
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: to(), encrypted: true, ...extra }), 400);
    expect(r.data.error_code).toBe(code);
    if (field) expect(String(r.data.field)).toStartWith(field);
    else expect(r.data.fields).toContain("data_message");
    expect(await stored(ctx)).toBe(0);
  });

  test("a cloud number named, or a pool that chooses one: encrypted_needs_phone; the default order does not apply", async () => {
    const { ctx, phone } = await setup();
    const fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    try {
      const cloud = await ctx.cloudDevice(fake);
      const body = { recipient_contact: to(), data_message: { data: sealed(), port: 9 }, encrypted: true };
      const named = expectEnvelope(await ctx.post(SEND_PATH, { ...body, device_id: cloud.device_id }), 400);
      expect(named.data).toMatchObject({ error_code: "encrypted_needs_phone", field: "device_id", kind: "cloud" });
      const pool = expectEnvelope(
        await ctx.post("/v1/api/pool/create", { name: "Cloud", strategy: "sticky", members: [{ device_id: cloud.device_id }] }),
        200,
      ).data;
      const pooled = expectEnvelope(await ctx.post(SEND_PATH, { ...body, pool_id: pool.pool_id }), 400);
      expect(pooled.data).toMatchObject({ error_code: "encrypted_needs_phone", field: "pool_id", kind: "cloud" });
      expect(await stored(ctx)).toBe(0);
      expectEnvelope(await ctx.post("/v1/api/workspace/settings", { default_routes: ["cloud", "phone"] }), 200);
      const taken = expectEnvelope(await ctx.post(SEND_PATH, body), 200).data;
      expect(await notificationOf(ctx, taken.notification_id)).toMatchObject({ route: "sms", routes: null, device_id: phone.device_id });
    } finally {
      fake.stop();
    }
  });
});
