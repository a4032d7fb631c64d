// SMSGate's encrypted data message (`isEncrypted: true` with `dataMessage`) in process, sent by the
// published npm client (android-sms-gateway, its own code) over app.handle: `dataMessage.data` and
// each of `phoneNumbers` are values in the app's encrypted format (from the encryptor written from
// the format alone, test/helpers/app-encryption.ts), the port is plain. What is stored, what the
// phone pulls (the shape of the app's GatewayApi.Message), the state read back by the client with
// each recipient under its ciphertext, and the refusals, each with its code and nothing stored.
// The client's 3.0.0 types have neither dataMessage nor isEncrypted; its send() posts the request
// object as it is, so the body is the reference server's Message, typed through a cast.
import { describe, expect, test } from "bun:test";
import Client, { ProcessState, type Message } from "android-sms-gateway";
import { appEncrypt } from "../helpers/app-encryption";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { startFakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";
import { clientRefusal, inProcessHttpClient } from "../helpers/smsgate-client";

const UA = "me.capcom.smsgateway/1.68.0";
const PASS = "smsgate data passphrase";
const sealed = (plain: string) => appEncrypt(PASS, plain);

async function setup(enable = true) {
  const ctx = await createTestContext();
  const phone = await ctx.phone("SMSGate encrypted data phone");
  if (enable) expectEnvelope(await ctx.post("/v1/api/workspace/settings", { encrypted_sends: true }), 200);
  const client = new Client(ctx.key.api_key, ctx.key.api_secret, inProcessHttpClient(ctx), "http://localhost/3rdparty/v1");
  const mobile = (method: string, body?: unknown) =>
    ctx.app.handle(
      new Request("http://localhost/mobile/v1/message", {
        method,
        headers: { authorization: `Bearer ${phone.device_token}`, "user-agent": UA, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  return { ctx, client, mobile };
}

const asMessage = (fields: Record<string, unknown>) => fields as unknown as Message;

const count = async (ctx: TestContext) => ((await ctx.sql.get("SELECT count(*) AS n FROM notification")) as { n: number }).n;

describe("SMSGate's encrypted data message through the npm client", () => {
  test("stored verbatim, pulled as the app reads it, and read back by the client with each recipient under its ciphertext", async () => {
    const { ctx, client, mobile } = await setup();
    const first = sealed(RECIPIENT);
    const second = sealed(SECOND_RECIPIENT);
    const data = sealed("AQIDBA==");
    const state = await client.send(
      asMessage({ id: "enc-data-1", dataMessage: { data, port: 53739 }, phoneNumbers: [first, second], isEncrypted: true }),
    );
    expect(state).toMatchObject({ id: "enc-data-1", state: ProcessState.Pending, isEncrypted: true });
    expect(state.recipients.map((r) => r.phoneNumber)).toEqual([first, second]);
    const rows = (await ctx.sql.all("SELECT recipient, message, data_message, segments, encrypted FROM notification ORDER BY id")) as {
      recipient: string;
      message: string;
      data_message: string;
      segments: number;
      encrypted: number | boolean;
    }[];
    expect(rows.map((r) => ({ ...r, data_message: JSON.parse(r.data_message), encrypted: Boolean(r.encrypted) }))).toEqual([
      { recipient: first, message: "", data_message: { data, port: 53739 }, segments: 1, encrypted: true },
      { recipient: second, message: "", data_message: { data, port: 53739 }, segments: 1, encrypted: true },
    ]);

    const pulled = (await (await mobile("GET")).json()) as Record<string, unknown>[];
    // GatewayApi.Message: the content is `_dataMessage ?: _textMessage ?: _message`, and with
    // isEncrypted MessagesService decrypts dataMessage.data and each of phoneNumbers on its own.
    const byNumber = Object.fromEntries(pulled.map((m) => [(m.phoneNumbers as string[])[0], m]));
    for (const number of [first, second]) {
      expect(byNumber[number]).toEqual({
        id: expect.any(String),
        dataMessage: { data, port: 53739 },
        phoneNumbers: [number],
        isEncrypted: true,
        withDeliveryReport: true,
        priority: 0,
        state: "Pending",
        createdAt: expect.any(String),
      });
    }

    // The phone reports by the ciphertext it was given: the first went out, the second number did
    // not decrypt (the app's "sendSMS: " and the platform's padding error).
    const badPad = "sendSMS: error:1e000065:Cipher functions:OPENSSL_internal:BAD_DECRYPT";
    const sent = await mobile("PATCH", [
      {
        id: byNumber[first].id,
        state: "Sent",
        recipients: [{ phoneNumber: first, state: "Sent" }],
        states: { Sent: "2026-01-15T12:00:01.000Z" },
      },
      { id: byNumber[second].id, state: "Failed", recipients: [{ phoneNumber: second, state: "Failed", error: badPad }] },
    ]);
    expect(sent.status).toBe(204);
    const read = await client.getState("enc-data-1");
    // The client's MessageState type has no isEncrypted; the answer carries it.
    expect((read as unknown as { isEncrypted: boolean }).isEncrypted).toBe(true);
    expect(Object.fromEntries(read.recipients.map((r) => [r.phoneNumber, [r.state, r.error]]))).toEqual({
      [first]: [ProcessState.Sent, null],
      [second]: [ProcessState.Failed, badPad],
    });
  });

  const good = () => sealed("AAE=");
  test.each([
    ["plain base64 as data", () => ({ dataMessage: { data: "AAE=", port: 53739 } }), "invalid_encrypted_value", "dataMessage.data"],
    [
      "a ciphertext past 192 bytes",
      () => ({ dataMessage: { data: sealed("A".repeat(192)), port: 53739 } }),
      "invalid_encrypted_value",
      "dataMessage.data",
    ],
    ["port 0", () => ({ dataMessage: { data: good(), port: 0 } }), "invalid_port", "dataMessage.port"],
    ["port 70000", () => ({ dataMessage: { data: good(), port: 70000 } }), "invalid_port", "dataMessage.port"],
    [
      "a textMessage beside it",
      () => ({ dataMessage: { data: good(), port: 1 }, textMessage: { text: sealed("Hi") } }),
      "content_conflict",
      undefined,
    ],
    [
      "a plain number",
      () => ({ dataMessage: { data: good(), port: 1 }, phoneNumbers: [sealed(RECIPIENT), RECIPIENT] }),
      "invalid_encrypted_value",
      "recipient_contact",
    ],
  ])("%s → 400, nothing stored", async (_what, fields, code, field) => {
    const { ctx, client } = await setup();
    const e = await clientRefusal(client.send(asMessage({ phoneNumbers: [sealed(RECIPIENT)], isEncrypted: true, ...fields() })));
    expect(e.status).toBe(400);
    expect(e.body).toMatchObject({ code: 400, data: { error_code: code } });
    if (field) expect(e.body.data.field).toBe(field);
    else expect(e.body.data.fields).toContain("dataMessage");
    expect(await count(ctx)).toBe(0);
  });

  test("off until the workspace turns encrypted sends on; a cloud number as deviceId needs a phone", async () => {
    const off = await setup(false);
    const body = () => asMessage({ dataMessage: { data: sealed("AAE="), port: 1 }, phoneNumbers: [sealed(RECIPIENT)], isEncrypted: true });
    const disabled = await clientRefusal(off.client.send(body()));
    expect(disabled.status).toBe(403);
    expect(disabled.body.data.error_code).toBe("encrypted_sends_disabled");
    expect(await count(off.ctx)).toBe(0);

    const { ctx, client } = await setup();
    const fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    try {
      const cloud = await ctx.cloudDevice(fake);
      const e = await clientRefusal(client.send(asMessage({ ...body(), deviceId: String(cloud.device_id) })));
      expect(e.body.data).toMatchObject({ error_code: "encrypted_needs_phone", kind: "cloud" });
      expect(await count(ctx)).toBe(0);
    } finally {
      fake.stop();
    }
  });
});
