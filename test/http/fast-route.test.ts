// The send routes (the SMS sends, the chat-app sends, SMSGate's) are served by fast handlers
// (src/http/fast-route.ts) outside the framework.
// Here every request goes to two apps on identical databases and clocks, one with the fast handlers
// and one without (every route through Elysia, as before), and the two must answer alike: status,
// headers (but the request id) and body byte for byte, and store the same rows.
import { afterEach, describe, expect, spyOn, test } from "bun:test";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { startFakeChatApp, type FakeChatApp } from "../helpers/fake-chatapp";
import { RECIPIENT, ABROAD } from "../helpers/numbers";

const ADA = RECIPIENT;
/** The template each pair of apps creates (the same id in both). */
let TEMPLATE = 0;

const fakes: FakeChatApp[] = [];
afterEach(() => {
  for (const fake of fakes.splice(0)) fake.stop();
});

/** Two contexts alike but for the fast handlers, each with its own fake of the chat-app platform. */
async function contexts() {
  const make = async (fastRoutes: boolean) => {
    const fake = startFakeChatApp({
      appSecret: "test-app-secret",
      webhookUrl: "http://localhost/v1/webhooks/chatapp",
      deliverWebhook: async () => new Response(null, { status: 200 }),
      media: { "big.jpg": { size: 6 * 1024 * 1024, contentType: "image/jpeg" }, "ok.jpg": { size: 200_000, contentType: "image/jpeg" } },
      wabas: [
        {
          id: "100200300",
          name: "Pigeon Bakery",
          phoneNumbers: [
            { id: "5550100", display_phone_number: "1 555 010 0100", verified_name: "Pigeon Bakery", quality_rating: "GREEN" },
          ],
          templates: [
            {
              name: "order_confirmation",
              language: "en_US",
              components: [{ type: "BODY", text: "Hi {{1}}, your order {{2}} is confirmed." }],
            },
            {
              name: "sale_banner",
              language: "en_US",
              components: [
                { type: "HEADER", format: "IMAGE" },
                { type: "BODY", text: "Sale ends {{1}}." },
              ],
            },
          ],
        },
      ],
    });
    fakes.push(fake);
    const chatapp = { graphUrl: fake.url, graphVersion: "v23.0", appSecret: "test-app-secret", verifyToken: "verify-me" };
    return { ctx: await createTestContext({ fastRoutes, config: { chatapp } }), fake };
  };
  return { fast: await make(true), framework: await make(false) };
}

async function pair() {
  const both = await contexts();
  const fast = both.fast.ctx;
  const framework = both.framework.ctx;
  const templates: number[] = [];
  for (const ctx of [fast, framework]) {
    await ctx.phone();
    const template = await ctx.post("/v1/api/template/create", { name: "ready", body: "Hi {{name}}, order {{order}} is ready" });
    expect(template.status).toBe(200);
    templates.push(template.body.data.template_id);
  }
  expect(templates[0]).toBe(templates[1]);
  TEMPLATE = templates[0];
  return { fast, framework };
}

type Init = {
  method?: string;
  path: string;
  body?: string | Uint8Array<ArrayBuffer> | null;
  headers?: Record<string, string>;
  /** false: none; "basic": the key and secret as HTTP Basic, as SMSGate's clients send them. */
  credentials?: boolean | "basic";
};

function requestFor(ctx: TestContext, init: Init): Request {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.credentials === "basic") headers.authorization ??= `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}`;
  else if (init.credentials !== false) {
    headers.authorization ??= `Bearer ${ctx.key.api_key}`;
    headers["x-api-secret"] ??= ctx.key.api_secret;
  }
  if (init.body !== undefined && init.body !== null) headers["content-type"] ??= "application/json";
  return new Request(`http://localhost${init.path}`, { method: init.method ?? "POST", headers, body: init.body ?? undefined });
}

async function answer(ctx: TestContext, init: Init) {
  const res = await ctx.app.handle(requestFor(ctx, init));
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== "x-request-id") headers[name] = value;
  });
  return { status: res.status, headers, requestId: res.headers.get("x-request-id"), body: await res.text() };
}

/** Sends `init` to both apps; their answers must be the same. Returns the fast one's. */
async function same(p: { fast: TestContext; framework: TestContext }, init: Init) {
  const a = await answer(p.fast, init);
  const b = await answer(p.framework, init);
  expect({ status: a.status, headers: a.headers, body: a.body }).toEqual({ status: b.status, headers: b.headers, body: b.body });
  expect(a.requestId).toMatch(/^[0-9a-f-]{36}$/);
  return a;
}

const json = (value: unknown) => JSON.stringify(value);

/** The stored notifications, the phone's random message id reduced to its type. */
const storedNotifications = async (ctx: TestContext) =>
  (await ctx.sql.all("SELECT * FROM notification ORDER BY id")).map((r) => ({
    ...(r as Record<string, unknown>),
    external_id: typeof (r as { external_id: unknown }).external_id,
  }));

describe("fast send routes answer as the framework does", () => {
  test("the fast handler serves the send; the framework reference goes through Elysia's own handler", async () => {
    const p = await pair();
    const fastFetch = spyOn(p.fast.app, "fetch");
    const frameworkFetch = spyOn(p.framework.app, "fetch");
    await same(p, { path: "/v1/api/sms/send", body: json({ recipient_contact: ADA, message: "Your order is ready" }) });
    expect(fastFetch).not.toHaveBeenCalled();
    expect(frameworkFetch).toHaveBeenCalledTimes(1);
    // Without a body it is left to the framework.
    await same(p, { path: "/v1/api/sms/send" });
    expect(fastFetch).toHaveBeenCalledTimes(1);
  });

  test("single sends, both forms: accepted, refused and malformed bodies", async () => {
    const p = await pair();
    const bodies: (string | Uint8Array<ArrayBuffer>)[] = [
      json({ recipient_contact: ADA, message: "Your order is ready" }),
      json({ recipient_contact: ADA, message: "x", colour: "red" }),
      json({ message: "no recipient" }),
      json({ recipient_contact: ADA, message: 123 }),
      json({ recipient_contact: "not a number", message: "x" }),
      json({ recipient_contact: ADA, message: "x".repeat(5000) }),
      json({ recipient_contact: ADA, message: "" }),
      json({ recipient_contact: ADA, message: "Later", schedule_time: "2026-01-16 09:30:00", timezone: "Europe/Paris" }),
      json({ recipient_contact: ADA, message: "Too late", schedule_time: "2020-01-01 00:00:00" }),
      json({ recipient_contact: ADA, message: "x", timezone: "Mars/Olympus" }),
      json({ recipient_contact: ADA, template_id: TEMPLATE, variables: { name: "Ada", order: "A-7" } }),
      json({ recipient_contact: ADA, template_id: TEMPLATE, variables: { name: "Ada" } }),
      json({ recipient_contact: ADA, template_id: 999 }),
      json({ recipient_contact: ADA, message: "x", device_id: 999 }),
      json({ recipient_contact: ADA, message: "x", priority: 500 }),
      json({ recipient_contact: ADA, message: "x", sim_number: 2, priority: 100, with_delivery_report: false, ttl: 3600 }),
      json({ recipient_contact: ADA, message: "x", ttl: 60, valid_until: "2026-01-16T00:00:00Z" }),
      json({ recipient_contact: ADA, message: "x", routes: ["phone", "phone"] }),
      json({ recipient_contact: ADA, message: "x", routes: ["cloud", "phone"] }),
      json({ recipient_contact: ADA, message: "Visit https://example.com" }),
      json([1, 2]),
      "null",
      '"text"',
      "{",
      '{"recipient_contact": "+14155552671", "message": "\\ud800"}',
      "[".repeat(40) + "]".repeat(40),
      new Uint8Array([0x7b, 0x22, 0x6d, 0xff, 0xfe, 0x22, 0x7d]),
    ];
    for (const path of ["/v1/api/sms/send", "/v1/notification/sms/api/send"]) for (const body of bodies) await same(p, { path, body });
    // Other content types: JSON sent as a form or as text is read as JSON; a real form is a form.
    await same(p, {
      path: "/v1/api/sms/send",
      body: json({ recipient_contact: ADA, message: "curl -d" }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    await same(p, {
      path: "/v1/api/sms/send",
      body: json({ recipient_contact: ADA, message: "as text" }),
      headers: { "content-type": "text/plain" },
    });
    await same(p, {
      path: "/v1/api/sms/send",
      body: "recipient_contact=%2B14155552671&message=form",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    await same(p, { path: "/v1/api/sms/send?x=%ff", body: json({ recipient_contact: ADA, message: "x" }) });
  });

  test("credentials, idempotency and the rate-limit headers", async () => {
    const p = await pair();
    const body = json({ recipient_contact: ADA, message: "Once" });
    await same(p, { path: "/v1/api/sms/send", body, credentials: false });
    await same(p, { path: "/v1/api/sms/send", body, headers: { "x-api-secret": "wrong" } });
    await same(p, { path: "/v1/api/sms/send", body, headers: { authorization: "Bearer nope" } });
    const first = await same(p, { path: "/v1/api/sms/send", body, headers: { "idempotency-key": "order-7" } });
    expect(first.status).toBe(200);
    const again = await same(p, { path: "/v1/api/sms/send", body, headers: { "idempotency-key": "order-7" } });
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(
      (
        await same(p, {
          path: "/v1/api/sms/send",
          body: json({ recipient_contact: ADA, message: "Other" }),
          headers: { "idempotency-key": "order-7" },
        })
      ).status,
    ).toBe(409);
    await same(p, { path: "/v1/api/sms/send", body, headers: { "idempotency-key": "k".repeat(300) } });
    expect(first.headers["x-ratelimit-limit"]).toBeDefined();
  });

  test("the overview form and bulk sends", async () => {
    const p = await pair();
    await same(p, { path: "/v1/sms/send", body: json({ to: ADA, message: "Overview form" }) });
    await same(p, { path: "/v1/sms/send", body: json({ to: ADA }) });
    await same(p, { path: "/v1/sms/send", body: json({ recipient_contact: ADA, message: "wrong name" }) });
    const bulk = await same(p, {
      path: "/v1/api/sms/send/bulk",
      body: json({
        messages: [
          { recipient_contact: ADA, message: "One" },
          { recipient_contact: "nope", message: "Two" },
          { recipient_contact: ADA, message: "Three", colour: "red" },
          { recipient_contact: ADA, template_id: TEMPLATE, variables: { name: "Ada", order: "B-1" } },
          { recipient_contact: ADA, message: 5 },
        ],
      }),
    });
    expect(JSON.parse(bulk.body).data).toMatchObject({ total: 5, accepted: 2, failed: 3 });
    await same(p, { path: "/v1/api/sms/send/bulk", body: json({ messages: [{ recipient_contact: ADA, message: "ok" }, 7] }) });
    await same(p, { path: "/v1/api/sms/send/bulk", body: json({ messages: "all of them" }) });
    await same(p, { path: "/v1/api/sms/send/bulk", body: json({ messages: [] }) });
    await same(p, {
      path: "/v1/api/sms/send/bulk",
      body: json({ messages: Array.from({ length: 1001 }, () => ({ recipient_contact: ADA, message: "x" })) }),
    });
    await same(p, { path: "/v1/api/sms/send/bulk", body: json({ messages: [{ recipient_contact: ADA, message: "x" }], extra: 1 }) });
  });

  test("what was stored is the same", async () => {
    const p = await pair();
    for (let i = 0; i < 5; i++)
      await same(p, { path: "/v1/api/sms/send", body: json({ recipient_contact: ADA, message: `Message ${i}`, priority: i }) });
    await same(p, {
      path: "/v1/api/sms/send/bulk",
      body: json({
        messages: [
          { recipient_contact: ADA, message: "a" },
          { recipient_contact: ABROAD, message: "b" },
        ],
      }),
    });
    expect(await storedNotifications(p.fast)).toEqual(await storedNotifications(p.framework));
    expect(await storedNotifications(p.fast)).toHaveLength(7);
    const logs = (ctx: TestContext) =>
      ctx.sql.all("SELECT notification_id, at, event, status, error_code, detail FROM notification_log ORDER BY id");
    expect(await logs(p.fast)).toEqual(await logs(p.framework));
  });
});

/** Both contexts with the chat-app business number connected; the template ids are the same in both. */
async function chatPair() {
  const both = await contexts();
  const ids: Record<string, number>[] = [];
  for (const { ctx } of [both.fast, both.framework]) {
    expectEnvelope(await ctx.post("/v1/api/chatapp/connect", { access_token: "good-token" }), 200);
    const list = expectEnvelope(await ctx.get("/v1/api/template/list", { query: { channel: "chatapp", limit: 100 } }), 200).data.templates;
    ids.push(Object.fromEntries(list.map((t: { name: string; template_id: number }) => [t.name, t.template_id])));
  }
  expect(ids[0]).toEqual(ids[1]);
  return { fast: both.fast.ctx, framework: both.framework.ctx, templates: ids[0], fakeUrls: [both.fast.fake.url, both.framework.fake.url] };
}

describe("the chat-app send routes answer as the framework does", () => {
  test("the fast handlers serve them: send, test and the overview form", async () => {
    const p = await chatPair();
    const fastFetch = spyOn(p.fast.app, "fetch");
    const frameworkFetch = spyOn(p.framework.app, "fetch");
    const accepted = await same(p, {
      path: "/v1/api/chatapp/send",
      body: json({ recipient_contact: ADA, template_id: p.templates.order_confirmation, variables: ["Ada", "A-7"] }),
    });
    expect(accepted.status).toBe(200);
    await same(p, { path: "/v1/chatapp/send", body: json({ to: ADA, template: "order_confirmation", variables: ["Ada", "A-8"] }) });
    await same(p, { path: "/v1/api/chatapp/test", body: json({ recipient_contact: ADA, message: "window closed" }) });
    expect(fastFetch).not.toHaveBeenCalled();
    expect(frameworkFetch).toHaveBeenCalledTimes(3);
  });

  test("accepted, refused and malformed bodies; credentials and idempotency", async () => {
    const p = await chatPair();
    const order = p.templates.order_confirmation;
    const bodies = [
      json({ recipient_contact: ADA, template_id: order, variables: { 1: "Ada", 2: "A-7" } }),
      json({ recipient_contact: ADA, template_id: order, variables: ["Ada"] }),
      json({ recipient_contact: ADA, template_id: order, variables: ["Ada", "two\nlines"] }),
      json({ recipient_contact: ADA, template_id: 99999 }),
      json({ recipient_contact: ADA, message: "freeform while the window is closed" }),
      json({ recipient_contact: ADA, template_id: order, variables: ["Ada", "A-7"], sim_number: 1 }),
      json({ recipient_contact: ADA, template_id: order, variables: ["Ada", "A-7"], colour: "red" }),
      json({ recipient_contact: "not a number", template_id: order, variables: ["Ada", "A-7"] }),
      json({ template_id: order }),
      json({ recipient_contact: ADA, template_id: order, variables: ["Ada", "A-7"], ttl: 60, valid_until: "2026-01-16T00:00:00Z" }),
      json({ recipient_contact: ADA, template_id: order, variables: ["Ada", "A-7"], schedule_time: "2020-01-01 00:00:00" }),
      json({ recipient_contact: ADA, template_id: order, variables: ["Ada", "A-7"], device_id: 999 }),
      json({ recipient_contact: ADA, template_id: order, variables: ["Ada", "Visit https://example.com"] }),
      json({
        recipient_contact: ADA,
        template_id: p.templates.sale_banner,
        variables: ["Friday"],
        media: { type: "image", link: "ftp://x/a.jpg" },
      }),
      json({ recipient_contact: ADA, template_id: p.templates.sale_banner, variables: ["Friday"], media: { type: "sound", link: "x" } }),
      json([1]),
      "null",
      "{",
    ];
    for (const path of ["/v1/api/chatapp/send", "/v1/api/chatapp/test"]) for (const body of bodies) await same(p, { path, body });
    await same(p, { path: "/v1/chatapp/send", body: json({ to: ADA, template: "no_such_template" }) });
    await same(p, { path: "/v1/chatapp/send", body: json({ recipient_contact: ADA, template: "order_confirmation" }) });
    const body = json({ recipient_contact: ADA, template_id: order, variables: ["Ada", "Once"] });
    await same(p, { path: "/v1/api/chatapp/send", body, credentials: false });
    await same(p, { path: "/v1/api/chatapp/send", body, headers: { "x-api-secret": "wrong" } });
    expect((await same(p, { path: "/v1/api/chatapp/send", body, headers: { "idempotency-key": "c-1" } })).status).toBe(200);
    const again = await same(p, { path: "/v1/api/chatapp/send", body, headers: { "idempotency-key": "c-1" } });
    expect(again.headers["idempotent-replayed"]).toBe("true");
    const other = json({ recipient_contact: ADA, template_id: order, variables: ["Ada", "Other"] });
    expect((await same(p, { path: "/v1/api/chatapp/send", body: other, headers: { "idempotency-key": "c-1" } })).status).toBe(409);
  });

  test("header media is checked alike, on each context's own fake platform", async () => {
    const p = await chatPair();
    // Each context fetches from its own fake, so the link differs by the fake's port; the answers must still match.
    for (const file of ["big.jpg", "ok.jpg"]) {
      const answers = [];
      for (const [i, ctx] of [p.fast, p.framework].entries()) {
        answers.push(
          await answer(ctx, {
            path: "/v1/api/chatapp/send",
            body: json({
              recipient_contact: ADA,
              template_id: p.templates.sale_banner,
              variables: ["Friday"],
              media: { type: "image", link: `${p.fakeUrls[i]}/media/${file}` },
            }),
          }),
        );
      }
      expect({ status: answers[0].status, body: answers[0].body }).toEqual({ status: answers[1].status, body: answers[1].body });
      expect(answers[0].status).toBe(file === "big.jpg" ? 400 : 200);
    }
  });

  test("what was stored is the same", async () => {
    const p = await chatPair();
    for (let i = 0; i < 3; i++)
      await same(p, {
        path: "/v1/api/chatapp/send",
        body: json({ recipient_contact: ADA, template_id: p.templates.order_confirmation, variables: ["Ada", `A-${i}`] }),
      });
    await same(p, { path: "/v1/chatapp/send", body: json({ to: ADA, template: "order_confirmation", variables: ["Bo", "B-1"] }) });
    expect(await storedNotifications(p.fast)).toHaveLength(4);
    expect(await storedNotifications(p.fast)).toEqual(await storedNotifications(p.framework));
  });
});

describe("SMSGate's send routes answer as the framework does", () => {
  const send = (body: unknown, path = "/3rdparty/v1/messages"): Init => ({ path, body: json(body), credentials: "basic" });

  test("the fast handlers serve both bases and the /message alias; a query string goes to the framework", async () => {
    const p = await pair();
    const fastFetch = spyOn(p.fast.app, "fetch");
    for (const path of ["/3rdparty/v1/messages", "/3rdparty/v1/message", "/api/3rdparty/v1/messages", "/api/3rdparty/v1/message"]) {
      const r = await same(
        p,
        send({ id: `via-${path.length}-${path.at(-1)}`, textMessage: { text: `via ${path}` }, phoneNumbers: [ADA] }, path),
      );
      expect(r.status).toBe(202);
      expect(r.headers.location).toStartWith(path.replace(/message(s?)$/, "messages/"));
    }
    expect(fastFetch).not.toHaveBeenCalled();
    const queried = await same(
      p,
      send(
        { id: "queried", textMessage: { text: "checked" }, phoneNumbers: ["+1 415 555 2671"] },
        "/3rdparty/v1/messages?skipPhoneValidation=true",
      ),
    );
    expect(queried.status).toBe(202);
    await same(p, send({ textMessage: { text: "x" }, phoneNumbers: [ADA] }, "/3rdparty/v1/messages?deviceActiveWithin=nope"));
    expect(fastFetch).toHaveBeenCalledTimes(2);
  });

  test("accepted, refused and malformed bodies, and credentials, in SMSGate's shape", async () => {
    const p = await pair();
    const bodies: unknown[] = [
      { id: "order-1", message: "older form", phoneNumbers: [ADA, ABROAD] },
      { id: "order-1", message: "same id again", phoneNumbers: [ADA] },
      { id: "order-2", textMessage: { text: "unknown fields are dropped", font: "serif" }, phoneNumbers: [ADA], colour: "red" },
      { textMessage: { text: "x" }, phoneNumbers: [] },
      { textMessage: { text: "x" } },
      { phoneNumbers: [ADA] },
      { id: "data-1", dataMessage: { data: "AAE=", port: 53739 }, phoneNumbers: [ADA] },
      { dataMessage: { data: "AAE", port: 0 }, phoneNumbers: [ADA] },
      { textMessage: { text: "x" }, phoneNumbers: [ADA], isEncrypted: true },
      { textMessage: { text: "x" }, phoneNumbers: ["nope"] },
      { textMessage: { text: "x" }, phoneNumbers: [ADA], ttl: 60, validUntil: "2030-01-01T00:00:00Z" },
      { textMessage: { text: "x" }, phoneNumbers: [ADA], scheduleAt: "not a time" },
      { textMessage: { text: "x" }, phoneNumbers: [ADA], simNumber: 9 },
      { textMessage: { text: "x" }, phoneNumbers: [ADA], deviceId: "no-such-phone" },
      { textMessage: { text: "x" }, phoneNumbers: [ADA], deviceId: "a", poolId: 1 },
      { id: "order-3", textMessage: { text: "later" }, phoneNumbers: [ADA], scheduleAt: "2030-01-01T09:00:00+02:00", priority: 100 },
      [1],
      null,
    ];
    for (const body of bodies) await same(p, send(body));
    await same(p, { path: "/3rdparty/v1/messages", body: "{", credentials: "basic" });
    const body = { id: "order-4", textMessage: { text: "x" }, phoneNumbers: [ADA] };
    await same(p, { ...send(body), credentials: false });
    await same(p, { ...send(body), headers: { authorization: "Basic bm9wZTpub3Bl" } });
    await same(p, { ...send(body), credentials: true });
  });

  test("a token's scope is checked before the body is used", async () => {
    const p = await pair();
    const answers = [];
    for (const ctx of [p.fast, p.framework]) {
      const basic = `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}`;
      const made = await ctx.call("POST", "/3rdparty/v1/auth/token", {
        key: null,
        headers: { authorization: basic },
        body: { scopes: ["messages:list"] },
      });
      expect(made.status).toBe(201);
      const init = {
        ...send({ textMessage: { text: "x" }, phoneNumbers: [ADA] }),
        headers: { authorization: `Bearer ${made.body.access_token}` },
      };
      const a = await answer(ctx, init);
      answers.push({ status: a.status, body: a.body });
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[0].status).toBe(403);
  });

  test("what was stored is the same", async () => {
    const p = await pair();
    for (let i = 0; i < 3; i++) await same(p, send({ id: `m-${i}`, textMessage: { text: `Message ${i}` }, phoneNumbers: [ADA, ABROAD] }));
    expect(await storedNotifications(p.fast)).toHaveLength(6);
    expect(await storedNotifications(p.fast)).toEqual(await storedNotifications(p.framework));
  });
});
