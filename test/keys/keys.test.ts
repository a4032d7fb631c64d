// Scoped keys through every API a key reaches, in process: the scope refusal, the recipient
// allowlist (v1 single, bulk per item, templates, SMSGate's npm client, Twilio's npm client,
// Verify), the daily cap (a bulk counts each message; concurrent sends at cap-1 accept one),
// expiry at authentication, and the /v1/api/key routes.
import { afterAll, describe, expect, test } from "bun:test";
import Client from "android-sms-gateway";
import { expectEnvelope } from "../helpers/context";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";
import { clientRefusal, inProcessHttpClient } from "../helpers/smsgate-client";
import { startTwilioRig, twilioRefusal } from "../helpers/twilio-rig";
import type { KeyOptions } from "../../src/modules/accounts/service";
import { parseRecipients } from "../../src/core/scopes";

const rig = await startTwilioRig();
const { ctx } = rig;
afterAll(() => rig.stop());

const keyWith = (name: string, options: KeyOptions) => ctx.services.accounts.createKey(name, ctx.workspace.id, options);
const stored = async () => Number(((await ctx.sql.get("SELECT count(*) AS n FROM notification")) as { n: number }).n);
const send = (key: Awaited<ReturnType<typeof keyWith>>, to = RECIPIENT, message = "hello") =>
  ctx.post("/v1/api/sms/send", { recipient_contact: to, message }, { key });

describe("scopes", () => {
  test("a key without send is refused 403 key_scope_denied naming the scope, before anything is stored", async () => {
    const reader = await keyWith("reader", { scopes: ["messages:read"] });
    const before = await stored();
    const body = expectEnvelope(await send(reader), 403);
    expect(body.data.error_code).toBe("key_scope_denied");
    expect(body.message).toContain('"send"');
    expect(body.data.scope).toBe("send");
    expect(await stored()).toBe(before);
    // What it has still works.
    expectEnvelope(await ctx.get("/v1/api/notification/list", { key: reader }), 200);
    // Admin-only routes are refused too.
    expect(expectEnvelope(await ctx.get("/v1/api/webhook/list", { key: reader }), 403).data.scope).toBe("admin");
  });

  test("admin implies every scope", async () => {
    const admin = await keyWith("admin", { scopes: ["admin"] });
    expectEnvelope(await send(admin), 200);
    expectEnvelope(await ctx.get("/v1/api/contact/list", { key: admin }), 200);
  });
});

describe("recipients", () => {
  test("a numbers list: another number is refused 403 recipient_not_allowed naming it; nothing stored", async () => {
    const key = await keyWith("listed", { recipients: parseRecipients(RECIPIENT) });
    expectEnvelope(await send(key, RECIPIENT), 200);
    const before = await stored();
    const body = expectEnvelope(await send(key, SECOND_RECIPIENT), 403);
    expect(body.data.error_code).toBe("recipient_not_allowed");
    expect(body.message).toContain(SECOND_RECIPIENT);
    expect(body.data.recipient).toBe(SECOND_RECIPIENT);
    expect(await stored()).toBe(before);
    // A template send goes the same way.
    const t = await ctx.post(
      "/v1/api/sms/send",
      { recipient_contact: SECOND_RECIPIENT, template_id: "OTP", variables: { code: "1", minutes: "5" } },
      { key },
    );
    expect(expectEnvelope(t, 403).data.error_code).toBe("recipient_not_allowed");
  });

  test("a bulk send refuses per item and stores the others", async () => {
    const key = await keyWith("bulk listed", { recipients: parseRecipients(RECIPIENT) });
    const before = await stored();
    const data = expectEnvelope(
      await ctx.post(
        "/v1/api/sms/send/bulk",
        { messages: [RECIPIENT, SECOND_RECIPIENT, RECIPIENT].map((to, i) => ({ recipient_contact: to, message: `m${i}` })) },
        { key },
      ),
      200,
    ).data;
    expect(data.results.map((r: { ok: boolean }) => r.ok)).toEqual([true, false, true]);
    expect(data.results[1].error).toMatchObject({ status_id: 403, error_code: "recipient_not_allowed" });
    expect(await stored()).toBe(before + 2);
  });

  test("contacts and tag:<tag> follow the workspace's contacts", async () => {
    const contacts = await keyWith("contacts only", { recipients: { kind: "contacts" } });
    const tagged = await keyWith("vip only", { recipients: { kind: "tag", tag: "vip" } });
    const stranger = "+14155550177";
    expect(expectEnvelope(await send(contacts, stranger), 403).data.error_code).toBe("recipient_not_allowed");
    expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Known", phone: stranger, tags: ["regular"] }), 200);
    expectEnvelope(await send(contacts, stranger), 200);
    expect(expectEnvelope(await send(tagged, stranger), 403).message).toContain('tagged "vip"');
    const vip = "+14155550178";
    expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "VIP", phone: vip, tags: ["VIP"] }), 200);
    expectEnvelope(await send(tagged, vip), 200);
  });

  test("SMSGate's npm client: a refused recipient is 403 in SMSGate's shape and nothing is stored", async () => {
    const key = await keyWith("smsgate listed", { recipients: parseRecipients(RECIPIENT) });
    const client = new Client(key.api_key, key.api_secret, inProcessHttpClient(ctx), "http://localhost/3rdparty/v1");
    const before = await stored();
    const e = await clientRefusal(client.send({ message: "hi", phoneNumbers: [SECOND_RECIPIENT] }));
    expect(e.status).toBe(403);
    expect(e.body.data.error_code).toBe("recipient_not_allowed");
    expect(await stored()).toBe(before);
    const ok = await client.send({ message: "hi", phoneNumbers: [RECIPIENT] });
    expect(ok.id).toBeString();
  });

  test("SMSGate: a token cannot carry scopes the key lacks, and a reader's token cannot send", async () => {
    const reader = await keyWith("smsgate reader", { scopes: ["messages:read"] });
    const basic = `Basic ${btoa(`${reader.api_key}:${reader.api_secret}`)}`;
    const call = (method: string, path: string, authorization: string, body?: unknown) =>
      ctx.call(method, `/3rdparty/v1${path}`, { key: null, headers: { authorization }, body });
    const denied = await call("POST", "/auth/token", basic, { scopes: ["messages:send"] });
    expect(denied.status).toBe(403);
    expect(denied.body.data.error_code).toBe("key_scope_denied");
    const issued = await call("POST", "/auth/token", basic, { scopes: ["messages:list"] });
    expect(issued.status).toBe(201);
    const bearer = `Bearer ${issued.body.access_token}`;
    expect((await call("GET", "/messages", bearer)).status).toBe(200);
    const sent = await call("POST", "/messages", basic, { message: "x", phoneNumbers: [RECIPIENT] });
    expect(sent.status).toBe(403);
    expect(sent.body.data.error_code).toBe("key_scope_denied");
  });

  test("Twilio's npm client with a limited key: Messages create refused for another number", async () => {
    const key = await keyWith("twilio listed", { recipients: parseRecipients(RECIPIENT) });
    const client = rig.client(key.api_key, key.api_secret, rig.sid);
    const before = await stored();
    const refused = await twilioRefusal(client.messages.create({ to: SECOND_RECIPIENT, from: "+15005550006", body: "hi" }));
    expect(refused.status).toBe(403);
    expect(await stored()).toBe(before);
    const ok = await client.messages.create({ to: RECIPIENT, from: "+15005550006", body: "hi" });
    expect(ok.sid).toStartWith("SM");
  });

  test("Verify's start (it sends a code) is refused for a recipient the key may not text", async () => {
    const key = await keyWith("verify listed", { recipients: parseRecipients(RECIPIENT) });
    const service = expectEnvelope(await ctx.post("/v1/api/verify/service/create", { name: "Keys" }), 200).data;
    const r = await ctx.post("/v1/api/verify/start", { service_id: service.service_id, to: SECOND_RECIPIENT }, { key });
    expect(expectEnvelope(r, 403).data.error_code).toBe("recipient_not_allowed");
    // Through Twilio's Verify API too.
    const client = rig.client(key.api_key, key.api_secret, rig.sid);
    const v2 = client.verify.v2;
    const made = await rig.client().verify.v2.services.create({ friendlyName: "Keys twilio" });
    const refused = await twilioRefusal(v2.services(made.sid).verifications.create({ to: SECOND_RECIPIENT, channel: "sms" }));
    expect(refused.status).toBe(403);
  });
});

describe("daily cap", () => {
  test("each message of a bulk counts; past the cap 403 key_daily_cap with the reset", async () => {
    const key = await keyWith("capped", { dailyCap: 3 });
    const data = expectEnvelope(
      await ctx.post(
        "/v1/api/sms/send/bulk",
        { messages: [1, 2].map((i) => ({ recipient_contact: RECIPIENT, message: `c${i}` })) },
        { key },
      ),
      200,
    ).data;
    expect(data.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
    expectEnvelope(await send(key), 200);
    const body = expectEnvelope(await send(key), 403);
    expect(body.data.error_code).toBe("key_daily_cap");
    expect(body.data.daily_cap).toBe(3);
    expect(body.message).toContain("resets at");
    // A preview says what the send would answer, and stores nothing.
    const preview = expectEnvelope(
      await ctx.post("/v1/api/sms/preview", { recipient_contact: RECIPIENT, message: "c4" }, { key }),
      200,
    ).data;
    expect(preview).toMatchObject({ would: "refuse", error: { error_code: "key_daily_cap" } });
    // The next UTC day starts afresh.
    ctx.clock.advance(24 * 3600 * 1000);
    expectEnvelope(await send(key), 200);
  });

  test("N concurrent sends at cap-1 accept exactly one", async () => {
    const key = await keyWith("raced", { dailyCap: 5 });
    for (let i = 0; i < 4; i++) expectEnvelope(await send(key, RECIPIENT, `pre ${i}`), 200);
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => send(key, RECIPIENT, `race ${i}`)));
    expect(replies.filter((r) => r.status === 200).length).toBe(1);
    expect(replies.filter((r) => r.body?.data?.error_code === "key_daily_cap").length).toBe(7);
    const row = (await ctx.sql.get("SELECT sends FROM api_key_day WHERE key_id = ?", [key.key_id])) as { sends: number };
    expect(Number(row.sends)).toBe(5);
  });
});

describe("expiry", () => {
  test("a key past its expiry is refused at authentication: 401 key_expired", async () => {
    const key = await keyWith("short-lived", { expiresAt: ctx.clock.now() + 60_000 });
    expectEnvelope(await ctx.get("/v1/api/notification/list", { key }), 200);
    ctx.clock.advance(61_000);
    const body = expectEnvelope(await ctx.get("/v1/api/notification/list", { key }), 401);
    expect(body.data.error_code).toBe("key_expired");
    // SMSGate's Basic with it as well.
    const r = await ctx.call("GET", "/3rdparty/v1/messages", {
      key: null,
      headers: { authorization: `Basic ${btoa(`${key.api_key}:${key.api_secret}`)}` },
    });
    expect(r.status).toBe(401);
    expect(r.body.data.error_code).toBe("key_expired");
  });
});

describe("/v1/api/key routes", () => {
  test("create answers the secret once, list shows the limits, update changes them; admin only", async () => {
    const created = expectEnvelope(
      await ctx.post("/v1/api/key/create", { name: "agent", scopes: ["send"], recipients: "contacts", daily_cap: 10, expires: "30d" }),
      200,
    ).data;
    expect(created.api_secret).toStartWith("sk_");
    expect(created).toMatchObject({ scopes: ["send"], recipients: "contacts", daily_cap: 10 });
    expect(Date.parse(created.expires_at)).toBe(ctx.clock.now() + 30 * 86_400_000);
    const listed = expectEnvelope(await ctx.get("/v1/api/key/list"), 200).data.keys.find(
      (k: { key_id: number }) => k.key_id === created.key_id,
    );
    expect(listed).toMatchObject({ scopes: ["send"], recipients: "contacts", daily_cap: 10 });
    expect(listed.api_secret).toBeUndefined();
    const updated = expectEnvelope(
      await ctx.post("/v1/api/key/update", { key_id: created.key_id, scopes: null, daily_cap: null }),
      200,
    ).data;
    expect(updated).toMatchObject({ scopes: null, daily_cap: null, recipients: "contacts" });
    // The agent key itself may not manage keys.
    const agent = { ...created, api_secret: created.api_secret };
    await ctx.post("/v1/api/key/update", { key_id: created.key_id, scopes: ["send"] });
    expect(expectEnvelope(await ctx.post("/v1/api/key/create", { name: "more" }, { key: agent }), 403).data.scope).toBe("admin");
    // Bad input is a 400.
    expect(expectEnvelope(await ctx.post("/v1/api/key/create", { name: "x", recipients: "+1 nope" }), 400).data.error_code).toBe(
      "validation_error",
    );
    expect(expectEnvelope(await ctx.post("/v1/api/key/create", { name: "x", scopes: ["write"] }), 400).data.error_code).toBe(
      "validation_error",
    );
    expect(expectEnvelope(await ctx.post("/v1/api/key/create", { name: "x", expires: "2001-01-01" }), 400).data.error_code).toBe(
      "validation_error",
    );
    // A key made to need approval says so, and its sends wait; update turns it off.
    const held = expectEnvelope(await ctx.post("/v1/api/key/create", { name: "held", needs_approval: true }), 200).data;
    expect(held.needs_approval).toBe(true);
    expect(created.needs_approval).toBe(false);
    expect(
      expectEnvelope(await ctx.post("/v1/api/key/update", { key_id: held.key_id, needs_approval: false }), 200).data.needs_approval,
    ).toBe(false);
    expect(expectEnvelope(await ctx.post("/v1/api/key/create", { name: "x", needs_approval: "yes" }), 400).data.error_code).toBe(
      "validation_error",
    );
    // Another workspace's key is not found.
    const other = await ctx.otherWorkspace("Keys other");
    expectEnvelope(await ctx.post("/v1/api/key/update", { key_id: other.key.key_id, daily_cap: 1 }), 404);
  });
});
