// The chat-app channel against the local fake of the platform, which checks every request body
// against Meta's OpenAPI `Message` schema. Each numbered rule of the chat-app issue has a test here.
import { afterEach, describe, expect, test } from "bun:test";
import twilio from "twilio";
import { waitFor } from "../../helpers/api";
import { createTestContext, expectEnvelope, type TestContext } from "../../helpers/context";
import { startFakeChatApp, type FakeChatApp } from "../../helpers/fake-chatapp";
import { startReceiver, type Receiver } from "../../helpers/receiver";
import { RECIPIENT } from "../../helpers/numbers";

const SECRET = "test-app-secret";
const USER = RECIPIENT;
const USER_DIGITS = "14155552671";
const WABA = "100200300";
const PHONE_ID = "5550100";
const OTHER_WABA = "900800700";
const OTHER_PHONE_ID = "5550200";

let fake: FakeChatApp | null = null;
let receiver: Receiver | null = null;
afterEach(() => {
  fake?.stop();
  receiver?.stop();
  fake = null;
  receiver = null;
});

interface Setup {
  ctx: TestContext;
  fake: FakeChatApp;
  deviceId: number;
  templateId: (name: string) => Promise<number>;
  send: (body: Record<string, unknown>) => Promise<{ status: number; body: any }>;
  dispatch: () => Promise<number>;
  detail: (id: number) => Promise<any>;
}

async function setup(
  opts: {
    throughputPerSecond?: number;
    windowErrors?: "sync" | "async";
    extraWaba?: boolean;
    media?: Record<string, { size: number; contentType: string }>;
    /** An approved template of the authentication category, as one-time codes need. */
    authTemplate?: boolean;
  } = {},
): Promise<Setup> {
  const holder: { ctx?: TestContext } = {};
  fake = startFakeChatApp({
    appSecret: SECRET,
    webhookUrl: "http://localhost/v1/webhooks/chatapp",
    deliverWebhook: (req) => holder.ctx!.app.handle(req),
    throughputPerSecond: opts.throughputPerSecond,
    windowErrors: opts.windowErrors,
    media: opts.media,
    wabas: [
      {
        id: WABA,
        name: "Pigeon Bakery",
        phoneNumbers: [{ id: PHONE_ID, display_phone_number: "1 555 010 0100", verified_name: "Pigeon Bakery", quality_rating: "GREEN" }],
        templates: [
          {
            name: "order_confirmation",
            language: "en_US",
            components: [{ type: "BODY", text: "Hi {{1}}, your order {{2}} is confirmed." }],
          },
          {
            name: "welcome",
            language: "en_US",
            components: [
              { type: "HEADER", format: "TEXT", text: "Welcome {{1}}!" },
              { type: "BODY", text: "Your code is {{1}}." },
              { type: "FOOTER", text: "Pigeon Bakery" },
            ],
          },
          {
            name: "sale_banner",
            language: "en_US",
            components: [
              { type: "HEADER", format: "IMAGE" },
              { type: "BODY", text: "Sale ends {{1}}." },
            ],
          },
          { name: "old_offer", language: "en_US", status: "PAUSED", components: [{ type: "BODY", text: "Offer {{1}}" }] },
          ...(opts.authTemplate
            ? [
                {
                  name: "login_code",
                  language: "en_US",
                  category: "AUTHENTICATION",
                  components: [{ type: "BODY", text: "{{1}} is your verification code." }],
                },
              ]
            : []),
        ],
      },
      ...(opts.extraWaba
        ? [
            {
              id: OTHER_WABA,
              name: "Other shop",
              phoneNumbers: [
                { id: OTHER_PHONE_ID, display_phone_number: "1 555 020 0200", verified_name: "Other shop", quality_rating: "GREEN" },
              ],
              templates: [{ name: "other_hello", language: "en_US", components: [{ type: "BODY", text: "Hello {{1}}" }] }],
            },
          ]
        : []),
    ],
  });
  const ctx = await createTestContext({
    config: { chatapp: { graphUrl: fake.url, graphVersion: "v23.0", appSecret: SECRET, verifyToken: "verify-me" } },
  });
  holder.ctx = ctx;
  ctx.clock.set(Date.now());
  fake.setNow(ctx.clock.now());
  const connected = expectEnvelope(await ctx.post("/v1/api/chatapp/connect", { access_token: "good-token" }), 200).data;
  const device = connected.devices.find((d: { phone_number: string }) => d.phone_number === "+15550100100");
  const f = fake;
  return {
    ctx,
    fake: f,
    deviceId: device.device_id,
    async templateId(name) {
      const list = expectEnvelope(await ctx.get("/v1/api/template/list", { query: { channel: "chatapp", limit: 100 } }), 200).data
        .templates;
      return list.find((t: { name: string }) => t.name === name).template_id;
    },
    async send(body) {
      const r = await ctx.post("/v1/api/chatapp/send", { recipient_contact: USER, ...body });
      return { status: r.status, body: r.body };
    },
    dispatch: () => ctx.services.dispatcher.dispatchDue(),
    detail: async (id) => expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data,
  };
}

/** The user writes to the business number (opening the 24-hour window). */
async function userWrites(s: Setup, text = "Hello bakery", phoneNumberId = PHONE_ID) {
  const { response } = await s.fake.sendInbound({ phoneNumberId, from: USER_DIGITS, text, name: "Ada" });
  expect(response.status).toBe(200);
}

const lastSent = (f: FakeChatApp) => f.sent.at(-1)! as { wamid: string; phoneNumberId: string; body: any };

/** A "delivered" status for `wamid` kept aside (status_backlog), as the webhook's unit keeps one for a message not yet recorded. */
async function keepAside(s: Awaited<ReturnType<typeof setup>>, wamid: string) {
  const status = (s.fake.statusWebhook(wamid, "delivered").payload.entry[0].changes[0].value as { statuses: unknown[] }).statuses[0];
  await s.ctx.sql.run("INSERT INTO status_backlog (device_id, external_id, payload, received_at) VALUES (?, ?, ?, ?)", [
    s.deviceId,
    wamid,
    JSON.stringify(status),
    s.ctx.clock.now(),
  ]);
}

/** The chatapp:apply-backlog task, as the worker runs it. */
const applyBacklog = (s: Awaited<ReturnType<typeof setup>>) =>
  s.ctx.services.builtChannels
    .flatMap(({ channel, runtime }) => channel.tasks(runtime.service, s.ctx.config))
    .find((t) => t.name === "chatapp:apply-backlog")!
    .run();

describe("connecting a business number (rule 1)", () => {
  test("the token's business accounts and numbers become chatapp devices; templates are synced with {{n}} placeholders", async () => {
    const s = await setup({ extraWaba: true });
    const devices = expectEnvelope(await s.ctx.get("/v1/api/device/list"), 200).data.devices;
    expect(devices.map((d: { kind: string; phone_number: string }) => [d.kind, d.phone_number])).toEqual([
      ["chatapp", "+15550100100"],
      ["chatapp", "+15550200200"],
    ]);
    const templates = expectEnvelope(await s.ctx.get("/v1/api/template/list", { query: { channel: "chatapp", limit: 100 } }), 200).data
      .templates;
    const byName = Object.fromEntries(templates.map((t: { name: string }) => [t.name, t]));
    expect(byName.order_confirmation).toMatchObject({
      channel: "chatapp",
      status: "active",
      language: "en_US",
      variables: ["1", "2"],
      body: "Hi {{1}}, your order {{2}} is confirmed.",
    });
    expect(byName.welcome).toMatchObject({ variables: ["1", "2"], body: "Welcome {{1}}!\n\nYour code is {{2}}.\n\nPigeon Bakery" });
    expect(byName.old_offer.status).toBe("paused");
    expect(byName.other_hello).toBeDefined();
    // Connecting again updates, it does not duplicate.
    await s.ctx.post("/v1/api/chatapp/connect", { access_token: "good-token" });
    expect(expectEnvelope(await s.ctx.get("/v1/api/device/list"), 200).data.pagination.total).toBe(2);
    expect(expectEnvelope(await s.ctx.get("/v1/api/template/list", { query: { channel: "chatapp" } }), 200).data.pagination.total).toBe(5);
  });

  test("templates are fetched across every page", async () => {
    const s = await setup();
    for (let i = 0; i < 130; i++)
      s.fake.addTemplate(WABA, { name: `bulk_${i}`, language: "en_US", components: [{ type: "BODY", text: `n ${i}` }] });
    await s.ctx.post("/v1/api/chatapp/connect", { access_token: "good-token" });
    expect(expectEnvelope(await s.ctx.get("/v1/api/template/list", { query: { channel: "chatapp" } }), 200).data.pagination.total).toBe(
      134,
    );
    expect(s.fake.requests.filter((r) => r.path.endsWith("/message_templates")).length).toBeGreaterThanOrEqual(3);
  });

  test("no business account: 400; an account without a number: 400; a refused token: 400 with the platform's code", async () => {
    const s = await setup();
    s.fake.addToken("no-waba-token", []);
    expect(expectEnvelope(await s.ctx.post("/v1/api/chatapp/connect", { access_token: "no-waba-token" }), 400).data.error_code).toBe(
      "no_business_account",
    );
    s.fake.addWaba({ id: "555", name: "Empty" });
    s.fake.addToken("empty-token", ["555"]);
    expect(expectEnvelope(await s.ctx.post("/v1/api/chatapp/connect", { access_token: "empty-token" }), 400).data.error_code).toBe(
      "no_phone_number",
    );
    const refused = expectEnvelope(await s.ctx.post("/v1/api/chatapp/connect", { access_token: "not-a-token" }), 400);
    expect(refused.data.error_code).toBe(190);
    expect(
      expectEnvelope(await s.ctx.post("/v1/api/chatapp/connect", { access_token: "good-token", phone_number_id: "nope" }), 400).data
        .error_code,
    ).toBe("no_phone_number");
  });
});

describe("sending (rule 2)", () => {
  test("a template send: the body the platform expects, then sent → delivered by webhook; no credits", async () => {
    const s = await setup();
    const id = expectEnvelope(
      await s.ctx.post("/v1/api/chatapp/send", {
        recipient_contact: USER,
        template_id: await s.templateId("order_confirmation"),
        variables: ["Ada", "A-1001"],
      }),
      200,
    ).data.notification_id;
    expect(await s.dispatch()).toBe(1);
    expect(s.fake.invalidRequests).toEqual([]);
    expect(lastSent(s.fake).body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: USER,
      type: "template",
      template: {
        name: "order_confirmation",
        language: { code: "en_US" },
        components: [
          {
            type: "body",
            parameters: [
              { type: "text", text: "Ada" },
              { type: "text", text: "A-1001" },
            ],
          },
        ],
      },
    });
    const wamid = lastSent(s.fake).wamid;
    let n = await s.detail(id);
    expect(n).toMatchObject({
      status: "sent",
      delivery_type: "chatapp",
      route: "chatapp",
      provider_message_id: wamid,
      cost: 0,
      message: "Hi Ada, your order A-1001 is confirmed.",
    });
    await s.fake.sendStatus(wamid, "delivered");
    n = await s.detail(id);
    expect(n.status).toBe("delivered");
    expect(await s.ctx.services.credits.balance(s.ctx.workspace.id)).toBe(0);
  });

  test("header and body parameters, from one list", async () => {
    const s = await setup();
    await s.send({ template_id: await s.templateId("welcome"), variables: { "1": "Ada", "2": "9911" } });
    await s.dispatch();
    expect(s.fake.invalidRequests).toEqual([]);
    expect(lastSent(s.fake).body.template).toMatchObject({
      components: [
        { type: "header", parameters: [{ type: "text", text: "Ada" }] },
        { type: "body", parameters: [{ type: "text", text: "9911" }] },
      ],
    });
  });

  test("a claimed batch's templates are read together before its calls: each message goes out with its own template", async () => {
    const s = await setup();
    const order = await s.templateId("order_confirmation");
    const welcome = await s.templateId("welcome");
    const sends = [
      { template_id: order, variables: ["Ada", "A-1"] },
      { template_id: welcome, variables: { "1": "Bo", "2": "1234" } },
      { template_id: order, variables: ["Cy", "A-3"] },
      { message: "a freeform line", recipient_contact: USER },
    ];
    await userWrites(s);
    for (const body of sends) expect((await s.send(body)).status).toBe(200);
    // Prepared reads are counted by wrapping the repository the adapter reads through.
    const templates = s.ctx.services.channelCore.templates;
    const byId = templates.byId;
    let single = 0;
    templates.byId = (id) => {
      single++;
      return byId(id);
    };
    try {
      expect(await s.dispatch()).toBe(4);
    } finally {
      templates.byId = byId;
    }
    expect(s.fake.invalidRequests).toEqual([]);
    // The batch's calls run side by side, so they reach the platform in any order: each is matched
    // by its template and first parameter.
    const sent = s.fake.sent.slice(-4).map((m) => (m as { body: any }).body);
    const seen = sent.map((b) => (b.template ? `${b.template.name}:${b.template.components[0].parameters[0].text}` : b.type));
    expect(seen.sort()).toEqual(["order_confirmation:Ada", "order_confirmation:Cy", "text", "welcome:Bo"]);
    expect(single).toBe(0);
  });

  test("statuses are monotonic, de-duplicated and tolerant of disorder; read counts as delivered", async () => {
    const s = await setup();
    const id = (await s.send({ template_id: await s.templateId("order_confirmation"), variables: ["Ada", "1"] })).body.data.notification_id;
    await s.dispatch();
    const wamid = lastSent(s.fake).wamid;
    await s.fake.sendStatus(wamid, "read");
    await s.fake.redeliverLast();
    await s.fake.sendStatus(wamid, "sent");
    await s.fake.sendStatus(wamid, "delivered");
    await s.fake.sendStatus(wamid, "failed", { errorCode: 131026 });
    const n = await s.detail(id);
    expect(n.status).toBe("delivered");
    expect(n.logs.filter((l: { event: string }) => l.event === "delivered")).toHaveLength(1);
  });

  test("the overview form: {to, template, variables} → success and messageId", async () => {
    const s = await setup();
    const r = await s.ctx.post("/v1/chatapp/send", { to: USER, template: "order_confirmation", variables: ["Ada", "7"] });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, data: { success: true } });
    await s.dispatch();
    expect(lastSent(s.fake).body.template.name).toBe("order_confirmation");
  });
});

describe("the 24-hour window (rules 2 and 3, and threads)", () => {
  test("inbound opens the window: a freeform reply is accepted, sent as text, and both land in one thread", async () => {
    const s = await setup();
    await userWrites(s, "Do you have croissants?");
    const id = expectEnvelope(await s.ctx.post("/v1/api/chatapp/send", { recipient_contact: USER, message: "Yes, fresh at 8!" }), 200).data
      .notification_id;
    await s.dispatch();
    expect(lastSent(s.fake).body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: USER,
      type: "text",
      text: { body: "Yes, fresh at 8!", preview_url: false },
    });
    expect((await s.detail(id)).status).toBe("sent");
    const thread = expectEnvelope(await s.ctx.get("/v1/api/thread/list", { query: { channel: "chatapp" } }), 200).data.threads[0];
    expect(thread).toMatchObject({ channel: "chatapp", peer: USER, peer_name: "Ada", device_id: s.deviceId, window: { open: true } });
    const messages = expectEnvelope(await s.ctx.get(`/v1/api/thread/${thread.thread_id}/messages`), 200).data.messages;
    expect(messages.map((m: { direction: string; body: string; status: string }) => [m.direction, m.body, m.status])).toEqual([
      ["outbound", "Yes, fresh at 8!", "sent"],
      ["inbound", "Do you have croissants?", "received"],
    ]);
  });

  test("statuses the platform sent before a send's outcome was recorded are applied with it, once", async () => {
    const s = await setup();
    await userWrites(s);
    const id = expectEnvelope(await s.ctx.post("/v1/api/chatapp/send", { recipient_contact: USER, message: "Fresh at 8" }), 200).data
      .notification_id;
    await s.dispatch();
    const wamid = lastSent(s.fake).wamid;
    expect((await s.detail(id)).status).toBe("sent");
    // A "delivered" that reached the server while the outcome was still on its way to the database
    // is kept aside (status_backlog); the outcomes recorded together take it and apply it.
    await keepAside(s, wamid);
    const runtime = s.ctx.services.channelRuntimes.find((r) => r.afterOutcomes)!;
    const n = (await s.ctx.services.state.get(id))!;
    const device = (await s.ctx.services.channelCore.devices.byId(s.deviceId))!;
    const outcome = { kind: "accepted" as const, externalId: wamid };
    await s.ctx.services.storage.transaction(async () => runtime.afterOutcomes!([{ n, device, outcome }]));
    expect((await s.detail(id)).status).toBe("delivered");
    expect((await s.ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM status_backlog"))?.n).toBe(0);
    // Taken once: the same outcome again finds nothing left to apply.
    await s.ctx.services.storage.transaction(async () => runtime.afterOutcomes!([{ n, device, outcome }]));
    expect((await s.detail(id)).logs.filter((l: { event: string }) => l.event === "delivered")).toHaveLength(1);
  });

  test("a status kept aside after its message was recorded (the two crossed) is applied by the sweep, once", async () => {
    const s = await setup();
    await userWrites(s);
    const id = expectEnvelope(await s.ctx.post("/v1/api/chatapp/send", { recipient_contact: USER, message: "Fresh at 9" }), 200).data
      .notification_id;
    await s.dispatch();
    const wamid = lastSent(s.fake).wamid;
    // What two units leave on PostgreSQL when neither saw the other's write: the outcome recorded
    // with nothing kept yet, and the status kept for a message not yet recorded.
    await keepAside(s, wamid);
    expect((await s.detail(id)).status).toBe("sent");
    await applyBacklog(s);
    expect((await s.detail(id)).status).toBe("delivered");
    expect((await s.ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM status_backlog"))?.n).toBe(0);
    await applyBacklog(s);
    expect((await s.detail(id)).logs.filter((l: { event: string }) => l.event === "delivered")).toHaveLength(1);
  });

  test("window closed: 403 with error_code 131047, can_send_freeform false and the templates to use", async () => {
    const s = await setup();
    const r = await s.send({ message: "Hello?" });
    expect(r.status).toBe(403);
    expect(r.body.data).toMatchObject({ error_code: 131047, can_send_freeform: false, can_send_template: true });
    expect(r.body.data.available_templates.map((t: { name: string }) => t.name).sort()).toEqual([
      "order_confirmation",
      "sale_banner",
      "welcome",
    ]);
    expect(s.fake.sent).toHaveLength(0);
    // The window closes 24 hours after the user wrote.
    await userWrites(s);
    s.ctx.clock.advance(24 * 3600_000);
    expect((await s.send({ message: "too late" })).status).toBe(403);
  });

  test("the test endpoint: a freeform test while the window is closed and templates exist points to the send with template_id", async () => {
    const s = await setup();
    const r = await s.ctx.post("/v1/api/chatapp/test", { recipient_contact: USER, message: "test" });
    expect(expectEnvelope(r, 403).data).toMatchObject({
      error_code: "use_template",
      can_send_template: true,
      use: "POST /v1/api/chatapp/send with template_id",
    });
    expect(r.body.message).toContain("template_id");
    await userWrites(s);
    expect(expectEnvelope(await s.ctx.post("/v1/api/chatapp/test", { recipient_contact: USER, message: "test" }), 200).data.message).toBe(
      "test",
    );
  });

  test("a platform that reports the closed window later (131047 by webhook) fails the notification with that code", async () => {
    const s = await setup({ windowErrors: "async" });
    await userWrites(s);
    s.fake.closeWindow(PHONE_ID, USER_DIGITS);
    const id = (await s.send({ message: "hi" })).body.data.notification_id;
    await s.dispatch();
    await s.fake.settle();
    // The failed status follows the sent one as a webhook of its own: on a slower back end it may
    // still be on its way once the first has settled.
    const failed = await waitFor("the failed status", async () => {
      const n = await s.detail(id);
      return n.status === "failed" ? n : null;
    });
    expect(failed).toMatchObject({ status: "failed", error_code: "131047" });
  });
});

describe("conditions of spec section 7 (rule 4)", () => {
  test("a template on a business account that is no longer linked: 409", async () => {
    const s = await setup({ extraWaba: true });
    const other = await s.templateId("other_hello");
    const otherDevice = expectEnvelope(await s.ctx.get("/v1/api/device/list"), 200).data.devices.find(
      (d: { phone_number: string }) => d.phone_number === "+15550200200",
    );
    await s.ctx.post("/v1/api/device/batch/delete", { device_ids: [otherDevice.device_id] });
    const r = await s.send({ template_id: other, variables: ["Ada"] });
    expect(r.status).toBe(409);
    expect(r.body.data.error_code).toBe("template_account_unlinked");
  });

  test("device_id of another business account than the template: 409; without device_id the matching number is used", async () => {
    const s = await setup({ extraWaba: true });
    const other = await s.templateId("other_hello");
    const r = await s.send({ template_id: other, variables: ["Ada"], device_id: s.deviceId });
    expect(r.status).toBe(409);
    expect(r.body.data.error_code).toBe("device_account_mismatch");
    expect((await s.send({ template_id: other, variables: ["Ada"] })).status).toBe(200);
    await s.dispatch();
    expect(lastSent(s.fake).phoneNumberId).toBe(OTHER_PHONE_ID);
  });

  test("a plan that forbids URLs: 403", async () => {
    const s = await setup();
    await s.ctx.services.accounts.setAccountPlan(s.ctx.account.id, "free");
    await userWrites(s);
    const r = await s.send({ message: "See https://bakery.example/menu" });
    expect(r.status).toBe(403);
    expect(r.body.data.error_code).toBe("urls_not_allowed");
  });

  test("template variables: the count must match; values must not be empty or multi-line (rule 5)", async () => {
    const s = await setup();
    const t = await s.templateId("order_confirmation");
    for (const variables of [["Ada"], ["Ada", "1", "extra"], ["Ada", ""], ["Ada", "line\nbreak"]]) {
      const r = await s.send({ template_id: t, variables });
      expect(r.status).toBe(400);
      expect(r.body.data.error_code).toBe("invalid_template_variables");
    }
  });

  test.each([
    [131026, "permanent", "Message undeliverable"],
    [133004, "permanent", "Server temporarily unavailable"],
    [132000, "permanent", "Template parameter count mismatch"],
    [100, "permanent", "Invalid parameter"],
    [131000, "retry", "Something went wrong"],
    [131016, "retry", "Service unavailable"],
  ] as const)("platform error %i is %s and mirrored with its code", async (code, cls, title) => {
    const s = await setup();
    const id = (await s.send({ template_id: await s.templateId("order_confirmation"), variables: ["Ada", "1"] })).body.data.notification_id;
    s.fake.failNext(code);
    await s.dispatch();
    const n = await s.detail(id);
    if (cls === "permanent") {
      expect(n).toMatchObject({ status: "failed", error_code: String(code), attempts: 1 });
      expect(n.error_reason).toContain(title);
    } else {
      expect(n).toMatchObject({ status: "pending", attempts: 1 });
      expect(n.logs.at(-1)).toMatchObject({ event: "retry", error_code: String(code) });
    }
  });
});

describe("blocking a number (rule 5)", () => {
  test("131042 blocks the number (device.blocked); later sends fail at once; a relink and a successful send unblock it (device.unblocked)", async () => {
    const s = await setup();
    receiver = startReceiver();
    await s.ctx.post("/v1/api/webhook/create", { url: receiver.url, events: ["device.blocked", "device.unblocked"] });
    const t = await s.templateId("order_confirmation");
    const first = (await s.send({ template_id: t, variables: ["Ada", "1"] })).body.data.notification_id;
    // A second message already queued before the block.
    const queued = (
      await s.send({
        template_id: t,
        variables: ["Ada", "2"],
        schedule_time: new Date(s.ctx.clock.now() + 60_000).toISOString().slice(0, 19).replace("T", " "),
      })
    ).body.data.notification_id;
    s.fake.failNext(131042);
    await s.dispatch();
    expect(await s.detail(first)).toMatchObject({ status: "failed", error_code: "131042" });
    const device = expectEnvelope(await s.ctx.get(`/v1/api/device/${s.deviceId}`), 200).data;
    expect(device).toMatchObject({
      blocked: true,
      blocked_code: "131042",
      blocked_reason: expect.stringContaining("Business eligibility payment issue"),
    });

    const refused = await s.send({ template_id: t, variables: ["Ada", "3"] });
    expect(refused.status).toBe(403);
    expect(refused.body.data).toMatchObject({ error_code: "device_blocked", blocked_code: "131042", device_id: s.deviceId });
    expect(refused.body.data.blocked_reason).toContain("Business eligibility payment issue");
    const calls = s.fake.requests.filter((r) => r.path.endsWith("/messages")).length;
    s.ctx.clock.advance(60_000);
    await s.dispatch();
    expect(await s.detail(queued)).toMatchObject({ status: "failed", error_code: "device_blocked" });
    expect(s.fake.requests.filter((r) => r.path.endsWith("/messages")).length).toBe(calls);

    expectEnvelope(await s.ctx.post("/v1/api/chatapp/relink", { device_id: s.deviceId, access_token: "good-token" }), 200);
    const again = (await s.send({ template_id: t, variables: ["Ada", "4"] })).body.data.notification_id;
    await s.dispatch();
    expect((await s.detail(again)).status).toBe("sent");
    expect(expectEnvelope(await s.ctx.get(`/v1/api/device/${s.deviceId}`), 200).data.blocked).toBe(false);
    while ((await s.ctx.services.webhooks.deliverDue()) > 0);
    // Each delivered once (deliveries go out several at a time, so in either order), and the events in the order they happened.
    expect(receiver.received.map((r) => r.body.type).sort()).toEqual(["device.blocked", "device.unblocked"]);
    const written = await s.ctx.sql.all<{ type: string }>(
      "SELECT type FROM event WHERE type IN ('device.blocked', 'device.unblocked') ORDER BY created_at, seq",
    );
    expect(written.map((e) => e.type)).toEqual(["device.blocked", "device.unblocked"]);
  });

  test("a token error (190) by status webhook blocks the number too", async () => {
    const s = await setup();
    const id = (await s.send({ template_id: await s.templateId("order_confirmation"), variables: ["Ada", "1"] })).body.data.notification_id;
    s.fake.failNext(190, { async: true });
    await s.dispatch();
    await s.fake.settle();
    // On PostgreSQL the status may cross its outcome and wait for the sweep (the test above).
    await applyBacklog(s);
    expect((await s.detail(id)).error_code).toBe("190");
    expect(expectEnvelope(await s.ctx.get(`/v1/api/device/${s.deviceId}`), 200).data.blocked_code).toBe("190");
  });
});

describe("self-healing (rule 6)", () => {
  test("132001: the templates are fetched again once and the send retried once", async () => {
    const s = await setup();
    const t = await s.templateId("order_confirmation");
    // The platform renamed the template since our last sync.
    s.fake.template(WABA, "order_confirmation")!.name = "order_confirmed";
    const id = (await s.send({ template_id: t, variables: ["Ada", "1"] })).body.data.notification_id;
    await s.dispatch();
    const n = await s.detail(id);
    expect(n.status).toBe("sent");
    expect(n.logs.at(-1).detail).toContain("132001");
    expect(lastSent(s.fake).body.template.name).toBe("order_confirmed");
  });

  test("media over the limit is refused before sending; an invalid header URL is dropped", async () => {
    const s = await setup({
      media: { "big.jpg": { size: 6 * 1024 * 1024, contentType: "image/jpeg" }, "ok.jpg": { size: 200_000, contentType: "image/jpeg" } },
    });
    const t = await s.templateId("sale_banner");
    const big = await s.send({ template_id: t, variables: ["Friday"], media: { type: "image", link: `${s.fake.url}/media/big.jpg` } });
    expect(big.status).toBe(400);
    expect(big.body.data).toMatchObject({ error_code: "media_too_large", limit: 5 * 1024 * 1024, size: 6 * 1024 * 1024 });

    await s.send({ template_id: t, variables: ["Friday"], media: { type: "image", link: `${s.fake.url}/media/ok.jpg` } });
    await s.dispatch();
    expect(s.fake.invalidRequests).toEqual([]);
    expect(lastSent(s.fake).body.template.components[0]).toEqual({
      type: "header",
      parameters: [{ type: "image", image: { link: `${s.fake.url}/media/ok.jpg` } }],
    });

    const dropped = (
      await s.send({ template_id: t, variables: ["Friday"], media: { type: "image", link: "ftp://files.example/banner.jpg" } })
    ).body.data.notification_id;
    await s.dispatch();
    expect(JSON.stringify(lastSent(s.fake).body)).not.toContain("ftp://");
    expect((await s.detail(dropped)).error_code).toBe("132012");
  });

  test("a paused template: template.status fires, sends answer 132015, and it is checked again after a day", async () => {
    const s = await setup();
    receiver = startReceiver();
    await s.ctx.post("/v1/api/webhook/create", { url: receiver.url, events: ["template.status"] });
    const t = await s.templateId("order_confirmation");
    const fakeTemplate = s.fake.template(WABA, "order_confirmation")!;
    await s.fake.sendTemplateStatus({
      wabaId: WABA,
      templateId: fakeTemplate.id,
      event: "PAUSED",
      otherInfo: { title: "FIRST_PAUSE", description: "Low quality" },
    });
    const paused = await s.send({ template_id: t, variables: ["Ada", "1"] });
    expect(paused.status).toBe(400);
    expect(paused.body.data.error_code).toBe(132015);

    s.fake.setTemplateStatus(WABA, "order_confirmation", "APPROVED");
    s.ctx.clock.advance(23 * 3600_000);
    expect(await s.ctx.services.chatapp.recheckPaused()).toBe(0);
    s.ctx.clock.advance(3600_000);
    expect(await s.ctx.services.chatapp.recheckPaused()).toBe(1);
    expect((await s.send({ template_id: t, variables: ["Ada", "1"] })).status).toBe(200);
    while ((await s.ctx.services.webhooks.deliverDue()) > 0);
    // Deliveries go out several at a time, so they may arrive in either order: put them in the events' order.
    const received = [...receiver.received].sort((a, b) => Date.parse(a.body.created_at) - Date.parse(b.body.created_at));
    expect(received.map((r) => [r.body.data.status, r.body.data.previous_status])).toEqual([
      ["paused", "active"],
      ["active", "paused"],
    ]);
    expect(received[0].body.data).toMatchObject({ name: "order_confirmation", reason: "FIRST_PAUSE" });
  });

  test("platform throttling backs off the business number; the rest waits without error", async () => {
    const s = await setup({ throughputPerSecond: 2 });
    const t = await s.templateId("order_confirmation");
    for (let i = 0; i < 5; i++) {
      s.fake.openWindow(PHONE_ID, `1415555${1000 + i}`);
      await s.ctx.post("/v1/api/chatapp/send", { recipient_contact: `+1415555${1000 + i}`, template_id: t, variables: ["A", String(i)] });
    }
    await s.dispatch();
    const states = await Promise.all([1, 2, 3, 4, 5].map(async (id) => (await s.detail(id)).status));
    expect(states.filter((x) => x === "sent").length).toBe(2);
    const throttled = await s.detail(states.indexOf("pending") + 1);
    expect(throttled.logs.at(-1)).toMatchObject({ event: "throttled" });
    expect(throttled.attempts).toBe(0);
    expect(await s.dispatch()).toBe(0);
  });
});

describe("the platform webhook (rule 3)", () => {
  test("the verification handshake", async () => {
    const s = await setup();
    const good = await s.ctx.app.handle(
      new Request("http://localhost/v1/webhooks/chatapp?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=verify-me"),
    );
    expect(good.status).toBe(200);
    expect(await good.text()).toBe("1158201444");
    const bad = await s.ctx.app.handle(
      new Request("http://localhost/v1/webhooks/chatapp?hub.mode=subscribe&hub.challenge=1&hub.verify_token=wrong"),
    );
    expect(bad.status).toBe(403);
  });

  test("a bad signature is 401 and changes nothing", async () => {
    const s = await setup();
    const r = await s.fake.sendInbound({ phoneNumberId: PHONE_ID, from: USER_DIGITS, text: "forged" }, { secret: "not-the-secret" });
    expect(r.response.status).toBe(401);
    const missing = await s.fake.sendInbound({ phoneNumberId: PHONE_ID, from: USER_DIGITS, text: "unsigned" }, { omitSignature: true });
    expect(missing.response.status).toBe(401);
    expect(expectEnvelope(await s.ctx.get("/v1/api/thread/list"), 200).data.threads).toEqual([]);
  });

  test("every webhook example in Meta's OpenAPI file is accepted without error", async () => {
    const s = await setup();
    const examples = s.fake.examplesFromOpenApi();
    expect(examples.length).toBeGreaterThan(10);
    for (const example of examples) {
      const res = await s.fake.deliverPayload(example);
      expect(res.status).toBe(200);
    }
    expect(s.ctx.logs.filter((l) => l.includes("internal error"))).toEqual([]);
  });

  test("inbound messages are de-duplicated on re-delivery", async () => {
    const s = await setup();
    await userWrites(s, "once");
    await s.fake.redeliverLast();
    const thread = expectEnvelope(await s.ctx.get("/v1/api/thread/list"), 200).data.threads[0];
    expect(expectEnvelope(await s.ctx.get(`/v1/api/thread/${thread.thread_id}/messages`), 200).data.messages).toHaveLength(1);
  });
});

describe("pacing each business number", () => {
  test("at most its per-second share of send_limit_per_minute each second (80/s by default)", async () => {
    const s = await setup();
    await s.ctx.post("/v1/api/device/update", { device_id: s.deviceId, send_limit_per_minute: 180 });
    const t = await s.templateId("order_confirmation");
    s.ctx.clock.set(Math.floor(s.ctx.clock.now() / 1000) * 1000 + 100);
    for (let i = 0; i < 7; i++)
      await s.ctx.post("/v1/api/chatapp/send", { recipient_contact: `+1415555${2000 + i}`, template_id: t, variables: ["A", String(i)] });
    expect(await s.dispatch()).toBe(3);
    expect(await s.dispatch()).toBe(0);
    s.ctx.clock.advance(1000);
    expect(await s.dispatch()).toBe(3);
    s.ctx.clock.advance(1000);
    expect(await s.dispatch()).toBe(1);
    const defaults = expectEnvelope(await s.ctx.get(`/v1/api/device/${s.deviceId}`), 200).data;
    expect(defaults.send_limit_per_minute).toBe(180);
  });
});

describe("inbound rules on the chat-app channel", () => {
  test("a keyword rule answers through the business number written to, within the window; a tag names the contact by profile", async () => {
    const s = await setup();
    const rule = { name: "Menu", match: { keyword: "menu" }, action: { reply: { text: "Today: rye and spelt" }, tag: "asked menu" } };
    expect((await s.ctx.post("/v1/api/rule/create", rule)).status).toBe(200);
    const before = s.fake.sent.length;
    await userWrites(s, "Menu please");
    await waitFor(
      "the rule's reply",
      async () => (await s.ctx.sql.get("SELECT id FROM notification WHERE message = 'Today: rye and spelt'")) ?? null,
    );
    await s.dispatch();
    expect(s.fake.sent.length).toBe(before + 1);
    expect(lastSent(s.fake)).toMatchObject({
      phoneNumberId: PHONE_ID,
      body: { to: USER, type: "text", text: { body: "Today: rye and spelt" } },
    });
    const contacts = expectEnvelope(await s.ctx.get("/v1/api/contact/list", { query: { tag: "asked menu" } }), 200).data.contacts;
    expect(contacts.map((c: { name: string; phone: string }) => [c.name, c.phone])).toEqual([["Ada", USER]]);
    // A rule for SMS only does not hear it.
    await s.ctx.post("/v1/api/rule/update", {
      rule_id: (await s.ctx.get("/v1/api/rule/list")).body.data.rules[0].rule_id,
      channels: ["sms"],
    });
    const tested = expectEnvelope(await s.ctx.post("/v1/api/rule/test", { body: "menu", channel: "chatapp" }), 200).data.matches;
    expect(tested).toEqual([]);
  });
});

describe("a Twilio-style incoming-message URL on the chat-app channel", () => {
  test("the message is posted with whatsapp: addresses, signed, and the TwiML answer goes back through the business number", async () => {
    const s = await setup();
    const posts: { url: string; signature: string; params: Record<string, string> }[] = [];
    const receiver = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        posts.push({
          url: req.url,
          signature: req.headers.get("x-twilio-signature") ?? "",
          params: Object.fromEntries(new URLSearchParams(await req.text())),
        });
        return new Response("<Response><Message>Fresh rye at 7</Message></Response>", { headers: { "content-type": "text/xml" } });
      },
    });
    try {
      expect((await s.ctx.post("/v1/api/twilio/incoming", { url: `http://127.0.0.1:${receiver.port}/wa` })).status).toBe(200);
      const { auth_token: token } = await s.ctx.services.twilio.credentials(s.ctx.workspace.id);
      await userWrites(s, "Bread today?");
      expect(await s.ctx.services.twilio.posts.deliverDue()).toBe(1);
      expect(posts[0].params).toMatchObject({ From: `whatsapp:${USER}`, To: "whatsapp:+15550100100", Body: "Bread today?" });
      expect(twilio.validateRequest(token, posts[0].signature, posts[0].url, posts[0].params)).toBe(true);
      const before = s.fake.sent.length;
      await s.dispatch();
      expect(s.fake.sent.length).toBe(before + 1);
      expect(lastSent(s.fake)).toMatchObject({
        phoneNumberId: PHONE_ID,
        body: { to: USER, type: "text", text: { body: "Fresh rye at 7" } },
      });
    } finally {
      receiver.stop(true);
    }
  });
});

describe("Verify on the chat-app channel", () => {
  test("Channel whatsapp sends the code in the approved authentication template; the check approves it; the stored values are masked", async () => {
    const s = await setup({ authTemplate: true });
    const { account_sid: sid, auth_token: token } = await s.ctx.services.twilio.credentials(s.ctx.workspace.id);
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => s.ctx.app.handle(req) });
    try {
      const c = twilio(sid, token);
      c.verify.baseUrl = `http://127.0.0.1:${server.port}`;
      const service = await c.verify.v2.services.create({ friendlyName: "Bakery" });
      const started = await c.verify.v2.services(service.sid).verifications.create({ to: USER, channel: "whatsapp" });
      expect(started).toMatchObject({ channel: "whatsapp", status: "pending" });
      await s.dispatch();
      const sent = lastSent(s.fake).body;
      expect(sent).toMatchObject({ to: USER, type: "template", template: { name: "login_code" } });
      const code = JSON.stringify(sent.template.components).match(/"text":"(\d{6})"/)?.[1];
      expect(code).toMatch(/^\d{6}$/);
      const [stored] = await s.ctx.sql.all<{ vars: string }>("SELECT template_vars AS vars FROM notification WHERE recipient = ?", [USER]);
      expect(stored.vars).not.toContain(code!);
      expect((await c.verify.v2.services(service.sid).verificationChecks.create({ to: USER, code: code! })).status).toBe("approved");
    } finally {
      server.stop(true);
    }
  });

  test("without an approved authentication template the whatsapp channel is refused, and nothing is sent", async () => {
    const s = await setup();
    const service = await s.ctx.services.verify.createService(s.ctx.workspace.id, { name: "Bakery" });
    const before = s.fake.sent.length;
    const r = await s.ctx.post("/v1/api/verify/start", { service_id: service.id, to: USER, channel: "whatsapp" });
    expect(expectEnvelope(r, 400).data).toMatchObject({ error_code: "validation_error", field: "channel" });
    await s.dispatch();
    expect(s.fake.sent.length).toBe(before);
    expect(await s.ctx.sql.all("SELECT id FROM verification")).toEqual([]);
  });
});
