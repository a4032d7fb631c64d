// A data SMS a paired phone received (the app's sms:data-received webhook): the phone is told to
// post it, it lands in the sender's thread as a data message (payload, the app's port 53739), it
// is announced to Pigeon's webhooks as message.received with data_message and to SMSGate-format
// webhooks as sms:data-received, no keyword or text rule reads it, and SMSGate's inbox lists it as
// DATA_SMS. In process, the phone's webhooks signed as the app signs them.
import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope, type TestContext } from "../../helpers/context";
import { postPhoneWebhook, registerAppPhone } from "../../helpers/phone";
import { startReceiver } from "../../helpers/receiver";
import { DASHBOARD_PASSWORD, dashboardRequests } from "../../helpers/dashboard-requests";
import { RECIPIENT } from "../../helpers/numbers";

const UA = { "user-agent": "me.capcom.smsgateway/1.68.0" };
const SENDER = RECIPIENT;
/** "STOP" in bytes: not a keyword when it comes as data. */
const STOP_BYTES = Buffer.from("STOP").toString("base64");

async function setup() {
  const ctx = await createTestContext();
  const reg = await registerAppPhone(ctx, "Data receiver", UA);
  const deviceId = (await ctx.sql.get<{ id: number }>("SELECT id FROM device WHERE external_id = ?", [reg.id]))!.id;
  let n = 0;
  /**
   * sms:data-received as the app posts it. The payload is the app's SmsEventPayload.SmsDataReceived
   * (app/src/main/java/me/capcom/smsgateway/modules/webhooks/payload/SmsEventPayload.kt, with the
   * MessageEventPayload fields it extends): messageId, sender, recipient, simNumber, phoneNumber
   * (the sender, deprecated), data (Base64.NO_WRAP of the PDU's user data) and receivedAt; the
   * envelope is WebHookEventDTO's {id, webhookId, event, deviceId, payload}.
   */
  async function receiveData(data: string, messageId = `d${++n}`) {
    const body = JSON.stringify({
      id: `evt-${messageId}-${n}`,
      webhookId: "pigeon-sms-data-received",
      event: "sms:data-received",
      deviceId: reg.id,
      payload: {
        messageId,
        sender: SENDER,
        recipient: null,
        simNumber: 1,
        phoneNumber: SENDER,
        data,
        receivedAt: new Date(ctx.clock.now()).toISOString(),
      },
    });
    const res = await postPhoneWebhook(ctx, reg.signingKey, body);
    expect(res.status).toBe(204);
  }
  return { ctx, reg, deviceId, receiveData };
}

async function threadMessages(ctx: TestContext) {
  const [thread] = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads as { thread_id: number; peer: string }[];
  expect(thread.peer).toBe(SENDER);
  return expectEnvelope(await ctx.get(`/v1/api/thread/${thread.thread_id}/messages`), 200).data.messages as Record<string, unknown>[];
}

const eventsOf = async (ctx: TestContext, type: string) =>
  (await ctx.sql.all<{ data: string }>("SELECT data FROM event WHERE type = ? ORDER BY id", [type])).map((r) => JSON.parse(r.data));

describe("a data SMS the phone received", () => {
  test("the phone is told to post sms:data-received to Pigeon", async () => {
    const { ctx, reg } = await setup();
    const res = await ctx.app.handle(new Request("http://localhost/mobile/v1/webhooks", { headers: reg.auth }));
    const hooks = (await res.json()) as { event: string; url: string }[];
    expect(hooks.map((h) => h.event)).toContain("sms:data-received");
    expect(hooks.find((h) => h.event === "sms:data-received")!.url).toBe("https://pigeon.test/mobile/v1/webhook");
  });

  test("lands in the sender's thread as a data message on port 53739, once, announced with data_message", async () => {
    const { ctx, deviceId, receiveData } = await setup();
    await receiveData("AQID", "same");
    // The phone posting it again (a retry, an export) changes nothing.
    await receiveData("AQID", "same");
    const messages = await threadMessages(ctx);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ direction: "inbound", body: "", status: "received", data_message: { data: "AQID", port: 53739 } });
    const [event] = await eventsOf(ctx, "message.received");
    expect(event).toMatchObject({
      channel: "sms",
      from: SENDER,
      body: "",
      data_message: { data: "AQID", port: 53739 },
      device_id: deviceId,
    });
    expect(await eventsOf(ctx, "message.received")).toHaveLength(1);
  });

  test("the dashboard's conversation shows it as a data SMS with its port and payload", async () => {
    const { ctx, receiveData } = await setup();
    await receiveData("AQID");
    await ctx.services.users.createUser({ email: "owner@example.com", password: DASHBOARD_PASSWORD });
    let cookie = "";
    const pages = dashboardRequests(
      () => ctx,
      () => cookie,
      "/dashboard/inbox",
    );
    ({ cookie } = await pages.signIn("owner@example.com"));
    const [thread] = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads as { thread_id: number }[];
    expect(await pages.text(`/dashboard/inbox/${thread.thread_id}`)).toContain("Data SMS to port 53739: AQID");
  });

  test("the thread list and the dashboard inbox preview it by port and size, received or sent; a text after it is its own preview", async () => {
    const { ctx, receiveData } = await setup();
    await ctx.services.users.createUser({ email: "owner@example.com", password: DASHBOARD_PASSWORD });
    let cookie = "";
    const pages = dashboardRequests(
      () => ctx,
      () => cookie,
      "/dashboard/inbox",
    );
    ({ cookie } = await pages.signIn("owner@example.com"));
    const last = async () => {
      const [thread] = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads as {
        last_message: { body: string; direction: string };
      }[];
      return thread.last_message;
    };
    // Four bytes received on the app's port.
    await receiveData("AQIDBA==");
    expect(await last()).toMatchObject({ body: "[data SMS to port 53739, 4 bytes]", direction: "inbound" });
    expect(await pages.text("/dashboard/inbox")).toContain("[data SMS to port 53739, 4 bytes]");
    // One byte sent to port 9200, later.
    ctx.clock.advance(1000);
    expectEnvelope(await ctx.post("/v1/api/sms/send", { recipient_contact: SENDER, data_message: { data: "AQ==", port: 9200 } }), 200);
    expect(await last()).toMatchObject({ body: "[data SMS to port 9200, 1 byte]", direction: "outbound" });
    expect(await pages.text("/dashboard/inbox")).toContain("You: [data SMS to port 9200, 1 byte]");
    // The messages themselves keep an empty body beside their data_message.
    const messages = await threadMessages(ctx);
    expect(messages.map((m) => m.body)).toEqual(["", ""]);
    ctx.clock.advance(1000);
    expectEnvelope(await ctx.post("/v1/api/sms/send", { recipient_contact: SENDER, message: "Plain words" }), 200);
    expect(await last()).toMatchObject({ body: "Plain words", direction: "outbound" });
  });

  test("bad base64 from the phone is ignored, not stored", async () => {
    const { ctx, receiveData } = await setup();
    await receiveData("not base64!");
    expect(expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads).toEqual([]);
  });

  test("STOP in its bytes is no opt-out; keyword and regex rules do not see it, a rule matching any message does", async () => {
    const { ctx, receiveData } = await setup();
    for (const [name, match] of [
      ["keyword", { keyword: "STOP" }],
      ["regex", { regex: ".*" }],
      ["any", { any: true }],
    ] as const) {
      const r = await ctx.post("/v1/api/rule/create", { name, match, action: { tag: `rule-${name}` }, continue: true });
      expect(r.status).toBe(200);
    }
    await receiveData(STOP_BYTES);
    expect(expectEnvelope(await ctx.get("/v1/api/optout/list"), 200).data.entries).toEqual([]);
    expect(await eventsOf(ctx, "contact.opted_out")).toEqual([]);
    const tagged = (tag: string) => ctx.get("/v1/api/contact/list", { query: { tag } });
    expect(expectEnvelope(await tagged("rule-any"), 200).data.contacts.map((c: { phone: string }) => c.phone)).toEqual([SENDER]);
    expect(expectEnvelope(await tagged("rule-keyword"), 200).data.contacts).toEqual([]);
    expect(expectEnvelope(await tagged("rule-regex"), 200).data.contacts).toEqual([]);
  });

  test("reaches SMSGate-format webhooks as the app's sms:data-received, not as sms:received; the inbox lists it as DATA_SMS", async () => {
    const { ctx, deviceId, receiveData } = await setup();
    const receiver = startReceiver();
    try {
      const gate = (method: string, path: string, body?: unknown) =>
        ctx.call(method, `/3rdparty/v1${path}`, {
          key: null,
          headers: { authorization: `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}` },
          body,
        });
      expect((await gate("POST", "/webhooks", { id: "data", url: receiver.url, event: "sms:data-received" })).status).toBe(201);
      expect((await gate("POST", "/webhooks", { id: "text", url: receiver.url, event: "sms:received" })).status).toBe(201);
      await receiveData("AQIDBA==");
      await ctx.services.webhooks.deliverDue();
      expect(receiver.received.map((r) => r.body.webhookId)).toEqual(["data"]);
      const [hit] = receiver.received;
      // The app's envelope and SmsDataReceived payload (SmsEventPayload.kt): no port, the app receives on one.
      expect(hit.body).toEqual({
        id: expect.any(String),
        webhookId: "data",
        event: "sms:data-received",
        deviceId: String(deviceId),
        payload: {
          messageId: expect.any(String),
          sender: SENDER,
          recipient: null,
          simNumber: null,
          phoneNumber: SENDER,
          data: "AQIDBA==",
          receivedAt: new Date(ctx.clock.now()).toISOString(),
        },
      });
      const inbox = await gate("GET", "/inbox");
      expect(inbox.status).toBe(200);
      expect(inbox.body).toEqual([expect.objectContaining({ type: "DATA_SMS", sender: SENDER, contentPreview: "AQIDBA==" })]);
      expect(
        (
          await ctx.call("GET", "/3rdparty/v1/inbox", {
            key: null,
            query: { type: "SMS" },
            headers: { authorization: `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}` },
          })
        ).body,
      ).toEqual([]);
    } finally {
      receiver.stop();
    }
  });
});
