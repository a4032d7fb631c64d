// SMSGate's dataMessage in process, sent by the published npm client (android-sms-gateway, its own
// code) over app.handle: what it stores, what the phone pulls, the state read back by the client,
// and the refusals, each with its own error_code and nothing stored. The client's 3.0.0 types have
// no dataMessage field (their Message is text only); its send() posts the request object as it is,
// so the test hands it the reference server's Message shape, typed through a cast.
import { describe, expect, test } from "bun:test";
import Client, { ProcessState, type Message } from "android-sms-gateway";
import { createTestContext, type TestContext } from "../helpers/context";
import { startFakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";
import { clientRefusal, inProcessHttpClient } from "../helpers/smsgate-client";

const UA = "me.capcom.smsgateway/1.68.0";

async function setup() {
  const ctx = await createTestContext();
  const phone = await ctx.phone("SMSGate data phone");
  const client = new Client(ctx.key.api_key, ctx.key.api_secret, inProcessHttpClient(ctx), "http://localhost/3rdparty/v1");
  const mobile = (method: string, body?: unknown) =>
    ctx.app.handle(
      new Request("http://localhost/mobile/v1/message", {
        method,
        headers: { authorization: `Bearer ${phone.device_token}`, "user-agent": UA, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  return { ctx, phone, client, mobile };
}

/** The reference server's Message with a dataMessage, handed to the client's send(). */
const dataSms = (fields: Record<string, unknown>) => fields as unknown as Message;

const count = async (ctx: TestContext) => ((await ctx.sql.get("SELECT count(*) AS n FROM notification")) as { n: number }).n;

describe("SMSGate dataMessage through the npm client", () => {
  test("is sent to every recipient as a data SMS the phone pulls, and its state reads back through the client", async () => {
    const { ctx, client, mobile } = await setup();
    const state = await client.send(
      dataSms({ id: "data-1", dataMessage: { data: "AQIDBA==", port: 53739 }, phoneNumbers: [RECIPIENT, SECOND_RECIPIENT] }),
    );
    expect(state).toMatchObject({ id: "data-1", state: ProcessState.Pending, isEncrypted: false });
    const rows = (await ctx.sql.all("SELECT message, data_message, segments FROM notification ORDER BY id")) as {
      message: string;
      data_message: string;
      segments: number;
    }[];
    expect(rows.map((r) => ({ ...r, data_message: JSON.parse(r.data_message) }))).toEqual([
      { message: "", data_message: { data: "AQIDBA==", port: 53739 }, segments: 1 },
      { message: "", data_message: { data: "AQIDBA==", port: 53739 }, segments: 1 },
    ]);
    const pulled = (await (await mobile("GET")).json()) as { id: string; dataMessage: unknown; phoneNumbers: string[] }[];
    // The app pulls newest first (lifo) by default; the order is not what is checked here.
    expect(pulled.map((m) => [m.phoneNumbers, m.dataMessage]).sort()).toEqual([
      [[RECIPIENT], { data: "AQIDBA==", port: 53739 }],
      [[SECOND_RECIPIENT], { data: "AQIDBA==", port: 53739 }],
    ]);
    for (const m of pulled) {
      const res = await mobile("PATCH", [
        {
          id: m.id,
          state: "Sent",
          recipients: [{ phoneNumber: m.phoneNumbers[0], state: "Sent" }],
          states: { Sent: "2026-01-15T12:00:01.000Z" },
        },
      ]);
      expect(res.status).toBe(204);
    }
    const read = await client.getState("data-1");
    expect(read.state).toBe(ProcessState.Sent);
    expect(read.recipients.map((r) => r.state)).toEqual([ProcessState.Sent, ProcessState.Sent]);
  });

  test.each([
    [{ dataMessage: { data: "AAE=", port: 53739 }, textMessage: { text: "Hi" } }, "content_conflict", undefined],
    [{ dataMessage: { data: "AAE=", port: 53739 }, message: "Hi" }, "content_conflict", undefined],
    [{ dataMessage: { data: "A*E=", port: 53739 } }, "invalid_data_encoding", "dataMessage.data"],
    [{ dataMessage: { data: "", port: 53739 } }, "data_message_empty", "dataMessage.data"],
    [{ dataMessage: { data: Buffer.alloc(134).toString("base64"), port: 53739 } }, "data_message_too_long", "dataMessage.data"],
    [{ dataMessage: { data: "AAE=", port: 0 } }, "invalid_port", "dataMessage.port"],
    [{ dataMessage: { data: "AAE=", port: 70000 } }, "invalid_port", "dataMessage.port"],
  ])("%j → 400 %s, nothing stored", async (fields, code, field) => {
    const { ctx, client } = await setup();
    const e = await clientRefusal(client.send(dataSms({ ...fields, phoneNumbers: [RECIPIENT] })));
    expect(e.status).toBe(400);
    expect(e.body).toMatchObject({ code: 400, data: { error_code: code } });
    if (field) expect(e.body.data.field).toBe(field);
    expect(await count(ctx)).toBe(0);
  });

  test("a cloud number named as deviceId cannot send it", async () => {
    const { ctx, client } = await setup();
    const fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    try {
      const cloud = await ctx.cloudDevice(fake);
      const e = await clientRefusal(
        client.send(dataSms({ dataMessage: { data: "AAE=", port: 1 }, deviceId: String(cloud.device_id), phoneNumbers: [RECIPIENT] })),
      );
      expect(e.body.data).toMatchObject({ error_code: "data_message_unsupported", kind: "cloud" });
      expect(await count(ctx)).toBe(0);
    } finally {
      fake.stop();
    }
  });
});
