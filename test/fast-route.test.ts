// The SMS send routes are served by fast handlers (src/http/fast-route.ts) outside the framework.
// Here every request goes to two apps on identical databases and clocks, one with the fast handlers
// and one without (every route through Elysia, as before), and the two must answer alike: status,
// headers (but the request id) and body byte for byte, and store the same rows.
import { describe, expect, spyOn, test } from "bun:test";
import { createTestContext, type TestContext } from "./helpers/context";

const ADA = "+14155552671";
/** The template each pair of apps creates (the same id in both). */
let TEMPLATE = 0;

async function pair() {
  const fast = await createTestContext();
  const framework = await createTestContext({ fastRoutes: false });
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
  credentials?: boolean;
};

function requestFor(ctx: TestContext, init: Init): Request {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.credentials !== false) {
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
async function same(p: Awaited<ReturnType<typeof pair>>, init: Init) {
  const a = await answer(p.fast, init);
  const b = await answer(p.framework, init);
  expect({ status: a.status, headers: a.headers, body: a.body }).toEqual({ status: b.status, headers: b.headers, body: b.body });
  expect(a.requestId).toMatch(/^[0-9a-f-]{36}$/);
  return a;
}

const json = (value: unknown) => JSON.stringify(value);

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
          { recipient_contact: "+447911123456", message: "b" },
        ],
      }),
    });
    const rows = async (ctx: TestContext) =>
      (await ctx.sql.all("SELECT * FROM notification ORDER BY id")).map((r) => ({
        ...(r as Record<string, unknown>),
        external_id: typeof (r as { external_id: unknown }).external_id,
      }));
    expect(await rows(p.fast)).toEqual(await rows(p.framework));
    expect(await rows(p.fast)).toHaveLength(7);
    const logs = (ctx: TestContext) =>
      ctx.sql.all("SELECT notification_id, at, event, status, error_code, detail FROM notification_log ORDER BY id");
    expect(await logs(p.fast)).toEqual(await logs(p.framework));
  });
});
