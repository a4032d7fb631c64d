// The chat-app fake is only worth something if it behaves like the platform, so its own behaviour is
// pinned here with plain fetch calls: schema checks, error codes and statuses, pacing, paging, and
// webhooks checked by a receiver that computes the HMAC itself.
import { afterEach, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import {
  startFakeChatApp,
  validateAgainstOpenApi,
  type FakeChatApp,
  type FakeChatAppOptions,
  type WebhookEnvelope,
} from "../../helpers/fake-chatapp";

const SECRET = "app-secret-for-tests";
const WABA = "102290129340398";
const EMPTY_WABA = "102290129340399";
const PHONE = "106540352242922";
const USER = "+1 (650) 555-1234";
const USER_ID = "16505551234";
const T0 = Date.UTC(2026, 0, 15, 12, 0, 0);

interface Received {
  raw: string;
  signature: string | null;
  contentType: string | null;
  valid: boolean;
  payload: WebhookEnvelope;
}

/** A stand-in for the server under test: it checks signatures with its own HMAC and remembers what came. */
function startReceiver() {
  const got: Received[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method === "GET") {
        const ok = url.searchParams.get("hub.mode") === "subscribe" && url.searchParams.get("hub.verify_token") === "verify-me";
        return ok ? new Response(url.searchParams.get("hub.challenge")) : new Response("forbidden", { status: 403 });
      }
      const raw = await req.text();
      const signature = req.headers.get("x-hub-signature-256");
      const valid = signature === `sha256=${createHmac("sha256", SECRET).update(raw).digest("hex")}`;
      got.push({ raw, signature, contentType: req.headers.get("content-type"), valid, payload: JSON.parse(raw) as WebhookEnvelope });
      return new Response(valid ? "ok" : "bad signature", { status: valid ? 200 : 401 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}/v1/webhooks/chatapp`, got, stop: () => server.stop(true) };
}

const running: Array<{ stop(): void }> = [];
afterEach(() => {
  while (running.length) running.pop()!.stop();
});

const bodyParams = (...values: string[]) => values.map((text) => ({ type: "text", text }));

function setup(extra: Partial<FakeChatAppOptions> = {}) {
  const receiver = startReceiver();
  const fake = startFakeChatApp({
    appSecret: SECRET,
    webhookUrl: receiver.url,
    now: () => T0,
    wabas: [
      {
        id: WABA,
        name: "Acme Support",
        phoneNumbers: [{ id: PHONE, display_phone_number: "+1 555-078-3881", verified_name: "Acme", quality_rating: "GREEN" }],
        templates: [
          {
            name: "order_ready",
            language: "en_US",
            category: "UTILITY",
            components: [
              { type: "HEADER", format: "IMAGE" },
              { type: "BODY", text: "Hi {{1}}, order {{2}} is ready. See you, {{1}}!" },
            ],
          },
          { name: "hello", language: "en_US", components: [{ type: "BODY", text: "Hello there" }] },
          { name: "hello", language: "de", components: [{ type: "BODY", text: "Hallo {{1}}" }] },
          { name: "promo", language: "en_US", category: "MARKETING", status: "PAUSED", components: [{ type: "BODY", text: "Sale" }] },
          { name: "old_promo", language: "en_US", status: "DISABLED", components: [{ type: "BODY", text: "Old" }] },
          { name: "draft", language: "en_US", status: "PENDING", components: [{ type: "BODY", text: "Soon" }] },
        ],
      },
      { id: EMPTY_WABA, name: "Empty" },
    ],
    ...extra,
  });
  running.push(fake, receiver);
  return { fake, receiver };
}

async function call(fake: FakeChatApp, path: string, init: RequestInit & { token?: string } = {}) {
  const headers = new Headers(init.headers);
  if (init.token !== "") headers.set("authorization", `Bearer ${init.token ?? "good-token"}`);
  const response = await fetch(`${fake.url}${path}`, { ...init, headers });
  return { status: response.status, body: (await response.json()) as any };
}

const send = (fake: FakeChatApp, body: unknown, token?: string) =>
  call(fake, `/v23.0/${PHONE}/messages`, {
    method: "POST",
    token,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

const text = (to = USER, body = "hi") => ({
  messaging_product: "whatsapp",
  recipient_type: "individual",
  to,
  type: "text",
  text: { body },
});
const template = (name: string, params: unknown[], language = "en_US", to = USER, header?: unknown[]) => ({
  messaging_product: "whatsapp",
  to,
  type: "template",
  template: {
    name,
    language: { code: language },
    components: [
      ...(header ? [{ type: "header", parameters: header }] : []),
      ...(params.length ? [{ type: "body", parameters: params }] : []),
    ],
  },
});
const imageHeader = (link = "https://example.com/a.jpg") => [{ type: "image", image: { link } }];

// Plain assertions on purpose: Bun's toMatchObject writes asymmetric matchers back into the received
// object, which would spoil later checks on the same body.
function expectPlatformError(result: { status: number; body: any }, status: number, code: number) {
  const error = result.body.error;
  expect([result.status, error.type, error.code]).toEqual([status, "OAuthException", code]);
  expect(error.message).toStartWith(`(#${code}) `);
  expect(error.error_data.messaging_product).toBe("whatsapp");
  expect(typeof error.error_data.details).toBe("string");
  expect(typeof error.fbtrace_id).toBe("string");
}

describe("graph reads", () => {
  test("debug_token lists the WABAs a token was granted; phone_numbers and the WABA itself", async () => {
    const { fake } = setup();
    fake.addToken("narrow-token", [EMPTY_WABA]);

    const debug = await call(fake, "/v23.0/debug_token?input_token=narrow-token");
    expect(debug.status).toBe(200);
    expect(debug.body.data.is_valid).toBe(true);
    expect(debug.body.data.granular_scopes).toEqual([
      { scope: "whatsapp_business_management", target_ids: [EMPTY_WABA] },
      { scope: "whatsapp_business_messaging", target_ids: [EMPTY_WABA] },
    ]);
    const wide = await call(fake, "/v24.0/debug_token?input_token=good-token");
    expect(wide.body.data.granular_scopes[0].target_ids).toEqual([WABA, EMPTY_WABA]);
    const unknown = await call(fake, "/v23.0/debug_token?input_token=nope");
    expect(unknown.body.data.is_valid).toBe(false);

    const waba = await call(fake, `/v23.0/${WABA}`);
    expect(waba.body).toMatchObject({ id: WABA, name: "Acme Support", currency: "USD", timezone_id: "1" });
    const fields = await call(fake, `/v23.0/${WABA}?fields=name`);
    expect(fields.body).toEqual({ id: WABA, name: "Acme Support" });

    const numbers = await call(fake, `/v23.0/${WABA}/phone_numbers`);
    expect(numbers.body.data).toEqual([
      expect.objectContaining({ id: PHONE, display_phone_number: "+1 555-078-3881", verified_name: "Acme", quality_rating: "GREEN" }),
    ]);
    expect(numbers.body.paging.cursors).toEqual({ before: expect.any(String), after: expect.any(String) });
    expect((await call(fake, `/v23.0/${EMPTY_WABA}/phone_numbers`)).body).toEqual({ data: [] });

    // Unknown and not-granted look the same, as on Graph.
    for (const path of ["/v23.0/999", `/v23.0/${WABA}/phone_numbers`]) {
      const hidden = await call(fake, path, { token: path === "/v23.0/999" ? undefined : "narrow-token" });
      expect(hidden.status).toBe(400);
      expect(hidden.body.error).toMatchObject({ code: 100, error_subcode: 33 });
    }
  });

  test("a missing, unknown or expired token is 401 with code 190", async () => {
    const { fake } = setup();
    fake.addToken("old-token");
    fake.expireToken("old-token");
    for (const token of ["", "bogus", "old-token"]) {
      for (const result of [await call(fake, `/v23.0/${WABA}`, { token }), await send(fake, text(), token)]) {
        expect(result.status).toBe(401);
        expect(result.body.error).toMatchObject({
          type: "OAuthException",
          code: 190,
          message: expect.any(String),
          fbtrace_id: expect.any(String),
        });
      }
    }
    expect(fake.sent).toHaveLength(0);
  });

  test("templates page through paging.next across 3 pages", async () => {
    const { fake } = setup();
    fake.addTemplate(WABA, { name: "extra", language: "en_US", components: [{ type: "BODY", text: "x" }] });
    const all = fake.waba(WABA)!.templates;
    expect(all).toHaveLength(7);

    const pages: any[] = [];
    let next: string | undefined = `${fake.url}/v23.0/${WABA}/message_templates?limit=3&fields=name,status,language,components`;
    while (next) {
      const response = await fetch(next, { headers: { authorization: "Bearer good-token" } });
      const page = (await response.json()) as any;
      pages.push(page);
      next = page.paging?.next;
      expect(pages.length).toBeLessThan(5);
    }
    expect(pages.map((p) => p.data.length)).toEqual([3, 3, 1]);
    expect(pages[0].paging.next).toStartWith(`${fake.url}/v23.0/${WABA}/message_templates?`);
    expect(new URL(pages[0].paging.next).searchParams.get("fields")).toBe("name,status,language,components");
    expect(pages[2].paging.next).toBeUndefined();
    expect(pages[2].paging.cursors).toEqual({ before: expect.any(String), after: expect.any(String) });
    expect(pages.flatMap((p) => p.data.map((t: any) => t.id))).toEqual(all.map((t) => t.id));
    expect(Object.keys(pages[0].data[0]).sort()).toEqual(["components", "id", "language", "name", "status"]);

    // The cursor works on its own too, the usual Graph way.
    const after = pages[0].paging.cursors.after;
    const second = await call(fake, `/v23.0/${WABA}/message_templates?limit=3&after=${after}`);
    expect(second.body.data.map((t: any) => t.id)).toEqual(pages[1].data.map((t: any) => t.id));
    const approved = await call(fake, `/v23.0/${WABA}/message_templates?status=APPROVED`);
    expect(approved.body.data.map((t: any) => t.name)).toEqual(["order_ready", "hello", "hello", "extra"]);
  });
});

describe("sending", () => {
  test("a valid template send and a valid text send pass Meta's schema", async () => {
    const { fake } = setup();
    const sentTemplate = await send(fake, template("order_ready", bodyParams("Ann", "A-1"), "en_US", USER, imageHeader()));
    expect(sentTemplate.status).toBe(200);
    expect(sentTemplate.body).toEqual({
      messaging_product: "whatsapp",
      contacts: [{ input: USER, wa_id: USER_ID }],
      messages: [{ id: expect.stringMatching(/^wamid\.[A-Za-z0-9+/=]+$/), message_status: "accepted" }],
    });

    await fake.sendInbound({ phoneNumberId: PHONE, from: USER_ID, text: "hello?" });
    const sentText = await send(fake, { ...text(), context: { message_id: "wamid.X" } });
    expect(sentText.status).toBe(200);
    expect(sentText.body.messages[0].message_status).toBeUndefined();

    expect(fake.invalidRequests).toEqual([]);
    expect(fake.sent.map((m) => [m.type, m.waId, m.phoneNumberId, m.wabaId, m.at])).toEqual([
      ["template", USER_ID, PHONE, WABA, T0],
      ["text", USER_ID, PHONE, WABA, T0],
    ]);
    expect(fake.sent[0].wamid).toBe(sentTemplate.body.messages[0].id);
    expect(fake.requests.filter((r) => r.method === "POST").map((r) => r.path)).toEqual([
      `/v23.0/${PHONE}/messages`,
      `/v23.0/${PHONE}/messages`,
    ]);
  });

  test("an invalid body is 400 (#100) with ajv's details, and is recorded", async () => {
    const { fake } = setup();
    fake.openWindow(PHONE, USER_ID);
    const { messaging_product: _, ...noProduct } = text();
    const { type: __, ...noType } = text();
    const cases: Array<[unknown, RegExp]> = [
      [noProduct, /messaging_product/],
      [noType, /type/],
      [{ ...text(), text: { body: "x", bold: true } }, /unevaluated|additional/],
      [{ ...text(), messaging_product: "sms" }, /allowed values/],
      [{ ...template("hello", []), template: { name: "hello" } }, /language/],
      [{ messaging_product: "whatsapp", to: USER, type: "image", image: { link: "not a url" } }, /url/],
    ];
    for (const [body, detail] of cases) {
      const result = await send(fake, body);
      expectPlatformError(result, 400, 100);
      expect(result.body.error.message).toBe("(#100) Invalid parameter");
      expect(result.body.error.error_data.details).toMatch(detail);
    }
    expect(fake.invalidRequests).toHaveLength(cases.length);
    expect(fake.invalidRequests[0]).toMatchObject({ path: `/v23.0/${PHONE}/messages`, body: noProduct });
    expect(fake.sent).toHaveLength(0);
  });

  test("template semantics: 132001, 132000, 132012, 132015, 132016", async () => {
    const { fake } = setup();
    expectPlatformError(await send(fake, template("nope", [])), 404, 132001);
    expectPlatformError(await send(fake, template("hello", [], "fr")), 404, 132001);
    expectPlatformError(await send(fake, template("draft", [])), 404, 132001);
    expectPlatformError(await send(fake, template("order_ready", bodyParams("Ann"), "en_US", USER, imageHeader())), 400, 132000);
    expectPlatformError(await send(fake, template("hello", bodyParams("extra"))), 400, 132000);
    expectPlatformError(await send(fake, template("order_ready", bodyParams("Ann", "A-1"))), 400, 132012);
    expectPlatformError(await send(fake, template("promo", [])), 400, 132015);
    expectPlatformError(await send(fake, template("old_promo", [])), 400, 132016);
    // Same name, other language, other parameter count.
    expect((await send(fake, template("hello", bodyParams("Ann"), "de"))).status).toBe(200);
    expect((await send(fake, template("hello", []))).status).toBe(200);
    expect(fake.sent).toHaveLength(2);
    expect(fake.invalidRequests).toEqual([]);
  });

  test("freeform outside the 24-hour window: 131047 synchronously, or 200 then a failed status", async () => {
    const { fake, receiver } = setup();
    expectPlatformError(await send(fake, text()), 400, 131047);

    await fake.sendInbound({ phoneNumberId: PHONE, from: USER_ID, text: "hi" });
    fake.advance(24 * 3600_000 - 1);
    expect((await send(fake, text())).status).toBe(200);
    fake.advance(1);
    expectPlatformError(await send(fake, text()), 400, 131047);
    // Templates are what a closed window is for.
    expect((await send(fake, template("hello", []))).status).toBe(200);

    fake.setWindowErrors("async");
    const accepted = await send(fake, text());
    expect(accepted.status).toBe(200);
    await fake.settle();
    const failed = receiver.got.at(-1)!;
    expect(failed.valid).toBe(true);
    const status = failed.payload.entry[0].changes[0].value.statuses as any[];
    expect(status[0]).toMatchObject({ id: accepted.body.messages[0].id, status: "failed", recipient_id: USER_ID });
    expect(status[0].errors[0]).toEqual({
      code: 131047,
      title: "Re-engagement message",
      message: "Re-engagement message",
      error_data: { details: expect.stringContaining("24 hours") },
      href: expect.stringContaining("error-codes"),
    });
    expect(fake.sent.at(-1)!.failure).toBe(131047);
  });

  test("failNext answers with the injected code and the table's HTTP status, once", async () => {
    const { fake, receiver } = setup();
    const table: Array<[number, number]> = [
      [131042, 400],
      [190, 401],
      [131000, 500],
      [133004, 503],
      [130429, 400],
      [131056, 400],
      [368, 403],
      [131057, 500],
    ];
    for (const [code, status] of table) {
      fake.failNext(code);
      const result = await send(fake, template("hello", []));
      expect(result.status).toBe(status);
      expect(result.body.error.code).toBe(code);
      if (code !== 190) expectPlatformError(result, status, code);
      expect((await send(fake, template("hello", []))).status).toBe(200);
    }
    fake.failNext(131000, { status: 502, times: 2 });
    expect((await send(fake, template("hello", []))).status).toBe(502);
    expect((await send(fake, template("hello", []))).status).toBe(502);

    fake.failNext(131026, { async: true });
    const accepted = await send(fake, template("hello", []));
    expect(accepted.status).toBe(200);
    await fake.settle();
    const statuses = receiver.got.at(-1)!.payload.entry[0].changes[0].value.statuses as any[];
    expect(statuses[0]).toMatchObject({ id: accepted.body.messages[0].id, status: "failed" });
    expect(statuses[0].errors[0].code).toBe(131026);
  });

  test("throughput bucket gives 130429 and refills with the clock", async () => {
    const { fake } = setup({ throughputPerSecond: 5 });
    for (let i = 0; i < 5; i++) expect((await send(fake, template("hello", [], "en_US", `+1650555000${i}`))).status).toBe(200);
    const limited = await send(fake, template("hello", [], "en_US", "+16505550009"));
    expectPlatformError(limited, 400, 130429);
    expect(limited.body.error.error_subcode).toBe(2494055);
    fake.advance(200);
    expect((await send(fake, template("hello", [], "en_US", "+16505550009"))).status).toBe(200);
    expect((await send(fake, template("hello", [], "en_US", "+16505550009"))).status).toBe(400);
  });

  test("pair limit: a burst of 45 to one user, then 131056 until 6 s pass", async () => {
    const { fake } = setup();
    fake.openWindow(PHONE, USER_ID);
    for (let i = 0; i < 45; i++) {
      fake.advance(13); // stay under 80/s so only the pair limit can bite
      expect((await send(fake, text())).status).toBe(200);
    }
    fake.advance(13);
    expectPlatformError(await send(fake, text()), 400, 131056);
    // Other users are not affected.
    expect((await send(fake, template("hello", [], "en_US", "+16505559999"))).status).toBe(200);
    fake.advance(6000);
    expect((await send(fake, text())).status).toBe(200);
    fake.advance(13);
    expect((await send(fake, text())).status).toBe(400);
  });

  test("media links to the fake are served and checked against Meta's limits", async () => {
    const { fake, receiver } = setup();
    const small = fake.addMedia("small.jpg", { size: 200_000, contentType: "image/jpeg" });
    const big = fake.addMedia("big.jpg", { size: 6 * 1024 * 1024, contentType: "image/jpeg" });
    const head = await fetch(big, { method: "HEAD" });
    expect([head.status, head.headers.get("content-length"), head.headers.get("content-type")]).toEqual([
      200,
      String(6 * 1024 * 1024),
      "image/jpeg",
    ]);
    const get = await fetch(small);
    expect((await get.arrayBuffer()).byteLength).toBe(200_000);
    expect((await fetch(`${fake.url}/media/missing.jpg`)).status).toBe(404);

    expect((await send(fake, template("order_ready", bodyParams("Ann", "A-1"), "en_US", USER, imageHeader(small)))).status).toBe(200);
    const tooBig = await send(fake, template("order_ready", bodyParams("Ann", "A-1"), "en_US", "+16505550001", imageHeader(big)));
    expect(tooBig.status).toBe(200);
    await fake.settle();
    expect(receiver.got).toHaveLength(1);
    const status = (receiver.got[0].payload.entry[0].changes[0].value.statuses as any[])[0];
    expect(status).toMatchObject({ id: tooBig.body.messages[0].id, status: "failed", errors: [expect.objectContaining({ code: 131053 })] });
  });

  test("a token that cannot see the number's WABA cannot send from it", async () => {
    const { fake } = setup();
    fake.addToken("narrow-token", [EMPTY_WABA]);
    const result = await send(fake, template("hello", []), "narrow-token");
    expect(result.status).toBe(400);
    expect([result.body.error.code, result.body.error.error_subcode]).toEqual([100, 33]);
    expect((await call(fake, `/v23.0/${PHONE}`)).body).toMatchObject({ id: PHONE, verified_name: "Acme" });
  });

  test("manual webhook delivery holds follow-up webhooks until flush", async () => {
    const { fake, receiver } = setup({ webhookDelivery: "manual" });
    fake.failNext(131026, { async: true });
    expect((await send(fake, template("hello", []))).status).toBe(200);
    await fake.settle();
    expect([receiver.got.length, fake.outbox.length]).toEqual([0, 1]);
    const [response] = await fake.flush();
    expect(response.status).toBe(200);
    expect((receiver.got[0].payload.entry[0].changes[0].value.statuses as any[])[0].errors[0].code).toBe(131026);
  });

  test("mark as read shares the endpoint", async () => {
    const { fake } = setup();
    const result = await send(fake, { messaging_product: "whatsapp", status: "read", message_id: "wamid.ABC" });
    expect(result).toEqual({ status: 200, body: { success: true } });
    expect(fake.markedRead).toEqual(["wamid.ABC"]);
  });
});

describe("webhooks", () => {
  test("inbound and status webhooks are signed over the exact bytes and shaped as Meta's", async () => {
    const { fake, receiver } = setup();
    const { wamid, response } = await fake.sendInbound({ phoneNumberId: PHONE, from: USER, text: "Does it come in blue?", name: "Sheena" });
    expect(response.status).toBe(200);
    const inbound = receiver.got[0];
    expect(inbound.valid).toBe(true);
    expect(inbound.contentType).toBe("application/json");
    expect(inbound.signature).toBe(`sha256=${createHmac("sha256", SECRET).update(inbound.raw).digest("hex")}`);
    expect(inbound.payload).toEqual({
      object: "whatsapp_business_account",
      entry: [
        {
          id: WABA,
          changes: [
            {
              field: "messages",
              value: {
                messaging_product: "whatsapp",
                metadata: { display_phone_number: "15550783881", phone_number_id: PHONE },
                contacts: [{ profile: { name: "Sheena" }, wa_id: USER_ID }],
                messages: [
                  { from: USER_ID, id: wamid, timestamp: String(T0 / 1000), type: "text", text: { body: "Does it come in blue?" } },
                ],
              },
            },
          ],
        },
      ],
    });

    const accepted = await send(fake, text());
    const id = accepted.body.messages[0].id as string;
    await fake.sendStatus(id, "sent");
    const sent = receiver.got[1].payload.entry[0].changes[0].value;
    expect(validateAgainstOpenApi("StatusMessageValue", sent)).toBeNull();
    expect((sent.statuses as any[])[0]).toEqual({
      id,
      status: "sent",
      timestamp: String(T0 / 1000),
      recipient_id: USER_ID,
      conversation: { id: expect.any(String), expiration_timestamp: String(T0 / 1000 + 86400), origin: { type: "service" } },
      pricing: { billable: false, pricing_model: "PMP", type: "free_customer_service", category: "service" },
    });
    await fake.sendStatus(id, "failed", { errorCode: 131049 });
    const failed = receiver.got[2].payload.entry[0].changes[0].value;
    expect(validateAgainstOpenApi("StatusMessageValue", failed)).toBeNull();
    expect((failed.statuses as any[])[0].errors[0]).toMatchObject({
      code: 131049,
      title: expect.any(String),
      error_data: { details: expect.any(String) },
    });
  });

  test("wrong secret, redelivery byte for byte, and out-of-order delivery", async () => {
    const { fake, receiver } = setup();
    const accepted = await send(fake, template("hello", []));
    const id = accepted.body.messages[0].id as string;

    expect((await fake.sendStatus(id, "sent", {}, { secret: "not-the-secret" })).status).toBe(401);
    expect((await fake.sendStatus(id, "sent", {}, { omitSignature: true })).status).toBe(401);
    expect(receiver.got.map((r) => r.valid)).toEqual([false, false]);

    const [delivered, sentFirst] = await fake.deliverInOrder([fake.statusWebhook(id, "delivered"), fake.statusWebhook(id, "sent")]);
    expect([delivered.status, sentFirst.status]).toEqual([200, 200]);
    const order = receiver.got.slice(2).map((r) => (r.payload.entry[0].changes[0].value.statuses as any[])[0].status);
    expect(order).toEqual(["delivered", "sent"]);
    expect((receiver.got[2].payload.entry[0].changes[0].value.statuses as any[])[0].pricing).toMatchObject({
      billable: true,
      type: "regular",
      category: "utility",
    });

    expect((await fake.redeliverLast()).status).toBe(200);
    expect(receiver.got[4].raw).toBe(receiver.got[3].raw);
    expect(receiver.got[4].signature).toBe(receiver.got[3].signature);
    expect(fake.webhooks.map((w) => w.status)).toEqual([401, 401, 200, 200, 200]);
  });

  test("automatic sent/delivered/read after each accepted send", async () => {
    const { fake, receiver } = setup({ autoStatuses: ["sent", "delivered", "read"] });
    const accepted = await send(fake, template("hello", []));
    await fake.settle();
    expect(receiver.got.map((r) => (r.payload.entry[0].changes[0].value.statuses as any[])[0])).toEqual([
      expect.objectContaining({ id: accepted.body.messages[0].id, status: "sent" }),
      expect.objectContaining({ status: "delivered" }),
      expect.objectContaining({ status: "read" }),
    ]);
  });

  test("a template status update is posted and followed by the fake's store", async () => {
    const { fake, receiver } = setup();
    const hello = fake.template(WABA, "hello", "en_US")!;
    await fake.sendTemplateStatus({
      wabaId: WABA,
      templateId: hello.id,
      event: "PAUSED",
      otherInfo: { title: "FIRST_PAUSE", description: "low quality" },
    });
    expect(receiver.got[0].valid).toBe(true);
    expect(receiver.got[0].payload.entry[0]).toEqual({
      id: WABA,
      time: T0 / 1000,
      changes: [
        {
          field: "message_template_status_update",
          value: {
            event: "PAUSED",
            message_template_id: Number(hello.id),
            message_template_name: "hello",
            message_template_language: "en_US",
            reason: "NONE",
            message_template_category: "UTILITY",
            other_info: { title: "FIRST_PAUSE", description: "low quality" },
          },
        },
      ],
    });
    expect(hello.status).toBe("PAUSED");
    expectPlatformError(await send(fake, template("hello", [])), 400, 132015);
    await fake.sendTemplateStatus({ wabaId: WABA, templateId: hello.id, event: "REINSTATED" });
    expect((await send(fake, template("hello", []))).status).toBe(200);
  });

  test("the verification handshake", async () => {
    const { fake, receiver } = setup();
    const ok = await fake.verify(receiver.url, "verify-me", "1158201444");
    expect([ok.status, await ok.text()]).toEqual([200, "1158201444"]);
    expect((await fake.verify(receiver.url, "wrong", "1158201444")).status).toBe(403);
  });

  test("webhook payload examples from Meta's OpenAPI", async () => {
    const { fake, receiver } = setup();
    const examples = fake.examplesFromOpenApi();
    expect(examples.length).toBe(16);
    for (const example of examples) {
      expect(example.object).toBe("whatsapp_business_account");
      expect(Array.isArray(example.entry) && example.entry.length > 0).toBe(true);
      expect(example.entry[0].changes[0].value).toEqual(expect.any(Object));
    }
    expect((await fake.deliverPayload(examples[0])).status).toBe(200);
    expect(receiver.got[0].valid).toBe(true);
    expect(receiver.got[0].payload).toEqual(examples[0]);
  });
});
