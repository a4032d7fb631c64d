// Surprises for users, tried as a user would: every send route takes the
// whole field set and honours it or refuses a field it does not know; the reply says when the
// message goes out; `curl -d '{…}'` works; a missing field says it is required; IANA link zones
// such as CET work; a bulk of non-objects is refused whole.
import { afterEach, describe, expect, test } from "bun:test";
import { decodeBody } from "../../src/http/body-format";
import { notificationOf } from "../helpers/api";
import { createTestContext, expectEnvelope, type Reply, type TestContext } from "../helpers/context";
import { startFakeChatApp, type FakeChatApp } from "../helpers/fake-chatapp";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT } from "../helpers/numbers";

let cloud: FakeCloud | null = null;
let chat: FakeChatApp | null = null;
let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(() => {
  cloud?.stop();
  chat?.stop();
  server?.stop(true);
  cloud = chat = server = null;
});

/** Each SMS send route: how to build its body from the common fields, and where the reply keeps the id. */
interface SendRoute {
  path: string;
  body: (fields: Record<string, unknown>) => Record<string, unknown>;
  id: (r: Reply) => number;
  scheduledFor: (r: Reply) => unknown;
  /** The field that names the recipient. */
  recipientField: string;
}

const renameTo = ({ recipient_contact, ...rest }: Record<string, unknown>) => ({ to: recipient_contact, ...rest });

const SMS_ROUTES: SendRoute[] = [
  {
    path: "/v1/notification/sms/api/send",
    body: (f) => f,
    id: (r) => r.body.data.notification_id,
    scheduledFor: (r) => r.body.data.scheduled_for,
    recipientField: "recipient_contact",
  },
  {
    path: "/v1/api/sms/send",
    body: (f) => f,
    id: (r) => r.body.data.notification_id,
    scheduledFor: (r) => r.body.data.scheduled_for,
    recipientField: "recipient_contact",
  },
  {
    path: "/v1/api/sms/send/bulk",
    body: (f) => ({ messages: [f] }),
    id: (r) => r.body.data.results[0].notification_id,
    scheduledFor: (r) => r.body.data.results[0].scheduled_for,
    recipientField: "recipient_contact",
  },
  {
    path: "/v1/sms/send",
    body: renameTo,
    id: (r) => Number(r.body.messageId),
    scheduledFor: (r) => r.body.data.scheduled_for,
    recipientField: "to",
  },
];

/** A workspace with an online phone (the default device) and a cloud number on a local fake provider. */
async function smsSetup() {
  const ctx = await createTestContext();
  cloud = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
  await ctx.phone();
  const device = await ctx.cloudDevice(cloud);
  await ctx.topUp(100);
  return { ctx, cloud, cloudId: device.device_id };
}

const notification = notificationOf;

async function storedCount(ctx: TestContext) {
  return expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data.pagination.total as number;
}

describe("every SMS send route takes the full field set and honours it", () => {
  test.each(SMS_ROUTES.map((r) => [r.path, r] as const))(
    "%s: schedule_time + timezone + device_id + recipient_name are honoured, the reply says when, the worker waits",
    async (_path, route) => {
      const { ctx, cloud, cloudId } = await smsSetup();
      // 09:30 in New York on 16 January is 14:30 UTC; the clock stands at 15 January 12:00 UTC.
      const r = await ctx.post(
        route.path,
        route.body({
          recipient_contact: RECIPIENT,
          message: "Your table is ready",
          recipient_name: "Ada",
          schedule_time: "2026-01-16 09:30:00",
          timezone: "America/New_York",
          device_id: String(cloudId),
        }),
      );
      expectEnvelope(r, 200);
      expect(route.scheduledFor(r)).toBe("2026-01-16T14:30:00.000Z");
      const id = route.id(r);
      expect(await notification(ctx, id)).toMatchObject({
        status: "pending",
        schedule_time: "2026-01-16T14:30:00.000Z",
        timezone: "America/New_York",
        device_id: cloudId,
        route: "cloud",
        recipient_name: "Ada",
      });

      expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
      ctx.clock.set(Date.UTC(2026, 0, 16, 14, 29, 59));
      expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
      expect(cloud.creates).toHaveLength(0);
      ctx.clock.set(Date.UTC(2026, 0, 16, 14, 30, 0));
      expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
      expect(cloud.creates).toHaveLength(1);
      expect(cloud.creates[0]).toMatchObject({ To: RECIPIENT, Body: "Your table is ready" });
      expect((await notification(ctx, id)).status).toBe("sent");
    },
  );

  test.each(SMS_ROUTES.map((r) => [r.path, r] as const))(
    "%s: pool_id sends through the pool's member, not the default device",
    async (_path, route) => {
      const { ctx, cloudId } = await smsSetup();
      const pool = expectEnvelope(
        await ctx.post("/v1/api/pool/create", { name: "Cloud only", members: [{ device_id: cloudId }] }),
        200,
      ).data;
      const r = await ctx.post(route.path, route.body({ recipient_contact: RECIPIENT, message: "pooled", pool_id: pool.pool_id }));
      expectEnvelope(r, 200);
      const n = await notification(ctx, route.id(r));
      expect(n).toMatchObject({ device_id: cloudId, route: "cloud" });
      expect(n.logs.some((l: { event: string }) => l.event === "pool")).toBe(true);
    },
  );

  test.each(SMS_ROUTES.map((r) => [r.path, r] as const))("%s: an immediate send answers scheduled_for null", async (_path, route) => {
    const { ctx } = await smsSetup();
    const r = await ctx.post(route.path, route.body({ recipient_contact: RECIPIENT, message: "now" }));
    expectEnvelope(r, 200);
    expect(route.scheduledFor(r)).toBeNull();
    expect((await notification(ctx, route.id(r))).schedule_time).toBeNull();
  });

  test.each(SMS_ROUTES.map((r) => [r.path, r] as const))(
    "%s: an unknown field is 400 naming it, and nothing is stored",
    async (_path, route) => {
      const { ctx } = await smsSetup();
      // A misspelt schedule_time must not quietly become "send now".
      const body = expectEnvelope(
        await ctx.post(route.path, { ...route.body({ recipient_contact: RECIPIENT, message: "x" }), schedule_tme: "2026-01-16 09:30:00" }),
        400,
      );
      expect(body.data).toMatchObject({ error_code: "validation_error", field: "schedule_tme", location: "body" });
      expect(body.message).toContain("schedule_tme");
      expect(await storedCount(ctx)).toBe(0);
    },
  );

  test("a bulk item with an unknown field fails alone, naming the field", async () => {
    const { ctx } = await smsSetup();
    const data = expectEnvelope(
      await ctx.post("/v1/api/sms/send/bulk", {
        messages: [
          { recipient_contact: RECIPIENT, message: "a" },
          { recipient_contact: RECIPIENT, message: "b", colour: "blue" },
        ],
      }),
      200,
    ).data;
    expect(data).toMatchObject({ total: 2, accepted: 1, failed: 1 });
    expect(data.results[1].error).toMatchObject({ error_code: "validation_error", field: "colour" });
    expect(await storedCount(ctx)).toBe(1);
  });

  test("the OpenAPI description lists the full field set and scheduled_for on every SMS send route", async () => {
    const { ctx } = await smsSetup();
    const spec = (await ctx.get("/openapi.json", { key: null })).body;
    const resolve = (schema: any) => (schema?.$ref ? spec.components.schemas[schema.$ref.split("/").pop()] : schema);
    for (const route of SMS_ROUTES) {
      const path = route.path.replace(/^\/v1/, "");
      const op = (spec.paths[route.path] ?? spec.paths[path]).post;
      const body = resolve(op.requestBody.content["application/json"].schema);
      if (route.path.endsWith("/bulk")) {
        expect(body.additionalProperties).toBe(false);
        continue;
      }
      expect(Object.keys(body.properties).sort()).toEqual(
        [
          route.recipientField,
          "message",
          // A data SMS in place of the text (test/sending/data-message.test.ts).
          "data_message",
          "template_id",
          "variables",
          "recipient_name",
          "schedule_time",
          "timezone",
          "device_id",
          // The companion app's send options.
          "sim_number",
          "priority",
          "with_delivery_report",
          "ttl",
          "valid_until",
          // Safe sending: failover, its chat-app template, and the quiet-hours exemption.
          "routes",
          "chatapp_template_id",
          "transactional",
          // Sender pools.
          "pool_id",
          // End-to-end encrypted recipient and text.
          "encrypted",
          // Why the sender sends it, shown to whoever approves it (docs/approval.md).
          "reason",
        ].sort(),
      );
      expect(body.additionalProperties).toBe(false);
      const reply = resolve(op.responses["200"].content["application/json"].schema);
      expect(resolve(reply.properties.data).properties).toHaveProperty("scheduled_for");
      expect(op.description).toContain("scheduled_for");
    }
  });
});

describe("the chat-app send routes too", () => {
  async function chatSetup() {
    const holder: { ctx?: TestContext } = {};
    chat = startFakeChatApp({
      appSecret: "secret",
      webhookUrl: "http://localhost/v1/webhooks/chatapp",
      deliverWebhook: (req) => holder.ctx!.app.handle(req),
      wabas: [
        {
          id: "100200300",
          name: "Bakery",
          phoneNumbers: [{ id: "5550100", display_phone_number: "1 555 010 0100", verified_name: "Bakery", quality_rating: "GREEN" }],
          templates: [
            {
              name: "order_confirmation",
              language: "en_US",
              components: [{ type: "BODY", text: "Hi {{1}}, your order {{2}} is confirmed." }],
            },
          ],
        },
      ],
    });
    const ctx = await createTestContext({
      config: { chatapp: { graphUrl: chat.url, graphVersion: "v23.0", appSecret: "secret", verifyToken: "v" } },
    });
    holder.ctx = ctx;
    chat.setNow(ctx.clock.now());
    const device = expectEnvelope(await ctx.post("/v1/api/chatapp/connect", { access_token: "good-token" }), 200).data.devices[0];
    return { ctx, chat, deviceId: device.device_id as number };
  }

  test("POST /chatapp/send (overview form) honours schedule_time, timezone and device_id and says when", async () => {
    const { ctx, chat, deviceId } = await chatSetup();
    const r = await ctx.post("/v1/chatapp/send", {
      to: RECIPIENT,
      template: "order_confirmation",
      variables: ["Ada", "A-7"],
      schedule_time: "2026-01-16 09:30:00",
      timezone: "CET",
      device_id: deviceId,
      recipient_name: "Ada",
    });
    expect(expectEnvelope(r, 200).data.scheduled_for).toBe("2026-01-16T08:30:00.000Z");
    expect(await notification(ctx, Number(r.body.messageId))).toMatchObject({
      schedule_time: "2026-01-16T08:30:00.000Z",
      timezone: "CET",
      device_id: deviceId,
      recipient_name: "Ada",
    });
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    expect(chat.sent).toHaveLength(0);
  });

  test.each([
    ["/v1/api/chatapp/send", { recipient_contact: RECIPIENT, message: "x", colour: "blue" }],
    ["/v1/api/chatapp/test", { recipient_contact: RECIPIENT, message: "x", colour: "blue" }],
    ["/v1/chatapp/send", { to: RECIPIENT, template: "order_confirmation", colour: "blue" }],
  ])("%s: an unknown field is 400 naming it", async (path, body) => {
    const { ctx } = await chatSetup();
    expect(expectEnvelope(await ctx.post(path, body), 400).data).toMatchObject({ error_code: "validation_error", field: "colour" });
    expect(await storedCount(ctx)).toBe(0);
  });
});

describe("curl -d '{…}' (a JSON body declared as a form)", () => {
  test("a JSON body with Content-Type application/x-www-form-urlencoded, over real HTTP, is read as JSON", async () => {
    const { ctx } = await smsSetup();
    server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => ctx.app.handle(req) });
    // What `curl -d '{"recipient_contact":…}' URL` sends: the text as it is, declared a form.
    const res = await fetch(`http://127.0.0.1:${server.port}/v1/notification/sms/api/send`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${ctx.key.api_key}`,
        "x-api-secret": ctx.key.api_secret,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: JSON.stringify({
        recipient_contact: RECIPIENT,
        message: "from curl",
        schedule_time: "2026-01-16 09:30:00",
        timezone: "Europe/Berlin",
      }),
    });
    const body = (await res.json()) as { status_id: number; data: { notification_id: number; scheduled_for: string } };
    expect(res.status).toBe(200);
    expect(body.data.scheduled_for).toBe("2026-01-16T08:30:00.000Z");
    expect(await notification(ctx, body.data.notification_id)).toMatchObject({ message: "from curl", recipient: RECIPIENT });
  });

  test("the same for the bulk and overview routes, with leading whitespace", async () => {
    const { ctx } = await smsSetup();
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const bulk = await ctx.call("POST", "/v1/api/sms/send/bulk", {
      raw: ` \n${JSON.stringify({ messages: [{ recipient_contact: RECIPIENT, message: "a" }] })}`,
      headers: form,
    });
    expect(expectEnvelope(bulk, 200).data.accepted).toBe(1);
    const overview = await ctx.call("POST", "/v1/sms/send", { raw: JSON.stringify({ to: RECIPIENT, message: "b" }), headers: form });
    expect(expectEnvelope(overview, 200).data.success).toBe(true);
  });

  test("a real form body is still read as a form", async () => {
    const { ctx } = await smsSetup();
    const raw = new URLSearchParams({ recipient_contact: RECIPIENT, message: "a real form" }).toString();
    const r = await ctx.call("POST", "/v1/notification/sms/api/send", {
      raw,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect((await notification(ctx, expectEnvelope(r, 200).data.notification_id)).message).toBe("a real form");
  });

  test("decodeBody: JSON objects and arrays declared as forms are JSON; forms, and form-like text that is not JSON, stay forms", () => {
    const FORM = "application/x-www-form-urlencoded; charset=utf-8";
    expect(decodeBody('{"a":1,"b":[true]}', FORM)).toEqual({ a: 1, b: [true] });
    expect(decodeBody("  [1, 2]", FORM)).toEqual([1, 2]);
    expect(decodeBody("MessageSid=SM1&MessageStatus=delivered", FORM)).toEqual({ MessageSid: "SM1", MessageStatus: "delivered" });
    expect(decodeBody("{a}=1&b=2", FORM)).toEqual({ "{a}": "1", b: "2" });
    expect(decodeBody('{"a":1}&b=2', FORM)).toEqual({ '{"a":1}': "", b: "2" });
    expect(decodeBody("", FORM)).toEqual({});
    expect(decodeBody('{"a":1}', "text/plain")).toEqual({ a: 1 });
    expect(decodeBody("", "application/json")).toEqual({});
    expect(() => decodeBody("{", "application/json")).toThrow("not valid JSON");
  });
});

describe("a missing required field says '<field> is required'", () => {
  test.each(SMS_ROUTES.filter((r) => !r.path.endsWith("/bulk")).map((r) => [r.path, r] as const))(
    "%s without its recipient",
    async (_path, route) => {
      const { ctx } = await smsSetup();
      const body = expectEnvelope(await ctx.post(route.path, { message: "x" }), 400);
      expect(body.message).toBe(`${route.recipientField} is required`);
      expect(body.data).toMatchObject({ error_code: "validation_error", field: route.recipientField, reason: "is required" });
    },
  );

  test("bulk without messages", async () => {
    const { ctx } = await smsSetup();
    const body = expectEnvelope(await ctx.post("/v1/api/sms/send/bulk", {}), 400);
    expect(body.message).toBe("messages is required");
    expect(body.data.field).toBe("messages");
  });

  test("a bulk item without its recipient fails alone, saying so", async () => {
    const { ctx } = await smsSetup();
    const data = expectEnvelope(await ctx.post("/v1/api/sms/send/bulk", { messages: [{ message: "x" }] }), 200).data;
    expect(data.results[0].error).toMatchObject({
      error_code: "validation_error",
      field: "recipient_contact",
      message: "recipient_contact is required",
    });
  });
});

describe("IANA link and legacy zone names are time zones", () => {
  // Local 09:00 on 15 January and 15 July 2027, and the UTC instants they are.
  test.each([
    ["CET", "08:00", "07:00"],
    ["MET", "08:00", "07:00"],
    ["EET", "07:00", "06:00"],
    ["WET", "09:00", "08:00"],
    ["EST5EDT", "14:00", "13:00"],
    ["CST6CDT", "15:00", "14:00"],
    ["MST7MDT", "16:00", "15:00"],
    ["PST8PDT", "17:00", "16:00"],
    ["US/Eastern", "14:00", "13:00"],
    ["Etc/GMT+5", "14:00", "14:00"],
    ["UTC", "09:00", "09:00"],
    ["Europe/Kiev", "07:00", "06:00"],
    ["Asia/Calcutta", "03:30", "03:30"],
  ])("%s", async (zone, winter, summer) => {
    const { ctx } = await smsSetup();
    for (const [date, utc] of [
      ["2027-01-15", winter],
      ["2027-07-15", summer],
    ]) {
      const r = await ctx.post("/v1/notification/sms/api/send", {
        recipient_contact: RECIPIENT,
        message: "x",
        schedule_time: `${date} 09:00:00`,
        timezone: zone,
      });
      const data = expectEnvelope(r, 200).data;
      expect(data.scheduled_for).toBe(`${date}T${utc}:00.000Z`);
      expect(await notification(ctx, data.notification_id)).toMatchObject({ schedule_time: `${date}T${utc}:00.000Z`, timezone: zone });
    }
  });

  test("a made-up zone is still 400 invalid_timezone", async () => {
    const { ctx } = await smsSetup();
    const r = await ctx.post("/v1/notification/sms/api/send", {
      recipient_contact: RECIPIENT,
      message: "x",
      schedule_time: "2027-01-15 09:00:00",
      timezone: "CEST",
    });
    expect(expectEnvelope(r, 400).data.error_code).toBe("invalid_timezone");
  });
});

describe("a bulk whose items are not objects is refused whole", () => {
  test.each([
    ["a number", 42],
    ["a string", "hello"],
    ["null", null],
    ["an array", [{ recipient_contact: RECIPIENT, message: "x" }]],
    ["a boolean", true],
  ])("%s at index 2: 400 naming messages[2], nothing stored", async (_kind, item) => {
    const { ctx } = await smsSetup();
    const ok = { recipient_contact: RECIPIENT, message: "fine" };
    const body = expectEnvelope(await ctx.post("/v1/api/sms/send/bulk", { messages: [ok, ok, item, ok] }), 400);
    expect(body.data).toMatchObject({ error_code: "validation_error", field: "messages[2]", location: "body" });
    expect(body.message).toContain("messages[2]");
    expect(await storedCount(ctx)).toBe(0);
  });

  test("a list of nothing but numbers: 400 naming the first", async () => {
    const { ctx } = await smsSetup();
    expect(expectEnvelope(await ctx.post("/v1/api/sms/send/bulk", { messages: [1, 2, 3] }), 400).data.field).toBe("messages[0]");
    expect(await storedCount(ctx)).toBe(0);
  });
});
