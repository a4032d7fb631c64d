// Every operation /openapi.json documents, swept twice: once without credentials (401, in the
// envelope for the API, in the phone's own shape for the companion-app routes and in Twilio's for
// its API) and once with
// a key of another workspace aimed at this workspace's ids (404, and no row anywhere changed).
// The list of operations comes from the document, so a route added later is swept without anyone
// remembering to add it here; a route that is public, or whose ids are not ours, must be named
// below with the reason.
import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope, type CallOptions, type Reply, type TestContext } from "../helpers/context";
import { mmsPart, mmsPhone, PNG, threadOf } from "../helpers/mms";
import { RECIPIENT } from "../helpers/numbers";

interface Operation {
  method: string;
  path: string;
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string; schema?: Schema }[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, unknown>;
}

interface Schema {
  type?: string | string[];
  required?: string[];
  properties?: Record<string, Schema>;
  anyOf?: Schema[];
  examples?: unknown[];
  minimum?: number;
  enum?: unknown[];
}

// Open to anyone by design; each answers without an API key for the reason given.
const PUBLIC: Record<string, string> = {
  "GET /health": "liveness probe for load balancers and process managers",
  "GET /v1/webhooks/chatapp": "the platform's verification handshake, checked by its verify token",
  "POST /v1/webhooks/chatapp": "the platform's deliveries, checked by their X-Hub-Signature-256",
  "POST /v1/callbacks/cloud/{device_id}": "the provider's status callbacks, checked by their X-Twilio-Signature",
  "GET /mobile/v1/device": "the app reads its external address here; the device token is optional (with it, the device is shown too)",
  // SMSGate serves its health (and the probes) before its auth middleware; its clients call it bare.
  // (Documented under /3rdparty/v1 only; the /api/3rdparty/v1 copies are the same routes.)
  ...Object.fromEntries(
    ["/health", "/health/live", "/health/ready", "/health/startup"].map((p) => [
      `GET /3rdparty/v1${p}`,
      "SMSGate's health and probes, public there too",
    ]),
  ),
};

// Ids in a body that are not rows of a workspace, so another workspace's value means nothing.
const FOREIGN_IDS: Record<string, string> = {
  business_account_id: "the platform's business account id, given by the user when connecting",
  phone_number_id: "the platform's phone number id, given by the user when connecting",
};

// Fields a body needs beyond what its schema requires (rules the schema cannot state), so the
// call gets as far as looking the id up.
const EXTRA_FIELDS: Record<string, Record<string, unknown>> = {
  "POST /v1/api/chatapp/send": { message: "Hello" },
  "POST /v1/api/chatapp/test": { message: "Hello" },
  "POST /v1/chatapp/send": { message: "Hello" },
};

// The companion app's routes act on the device their token names; ids in their bodies are the
// app's own (its device or webhook ids), checked against that device, not against a workspace.
const PHONE_PREFIX = "/mobile/v1/";

async function operations(ctx: TestContext): Promise<Operation[]> {
  const doc = expectOk(await ctx.get("/openapi.json", { key: null })).body;
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries<Record<string, Operation>>(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) out.push({ ...op, method: method.toUpperCase(), path });
  }
  expect(out.length).toBeGreaterThan(50);
  return out;
}

function expectOk(r: Reply) {
  if (r.status !== 200) throw new Error(`${r.status}: ${r.text.slice(0, 300)}`);
  return r;
}

const label = (op: Operation) => `${op.method} ${op.path}`;
const bodySchema = (op: Operation) => op.requestBody?.content?.["application/json"]?.schema;
const schemes = (op: Operation) => (op.security ?? [{ ApiKeyBearer: [] }]).flatMap((s) => Object.keys(s));

/** A minimal value that passes `s`, for the required fields around the id under test. */
function sample(s: Schema | undefined): unknown {
  if (!s) return "x";
  if (s.examples?.length) return s.examples[0];
  if (s.enum?.length) return s.enum[0];
  if (s.anyOf?.length) return sample(s.anyOf[0]);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  if (type === "integer" || type === "number") return s.minimum ?? 1;
  if (type === "boolean") return false;
  if (type === "array") return [];
  if (type === "object") return Object.fromEntries((s.required ?? []).map((k) => [k, sample(s.properties?.[k])]));
  return "x";
}

function fillPath(path: string, values: Record<string, unknown> = {}) {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => String(values[name] ?? 1));
}

describe("every documented operation without credentials", () => {
  test("public operations are exactly the ones listed, each with its reason", async () => {
    const ctx = await createTestContext();
    const open = (await operations(ctx)).filter((op) => op.security?.length === 0 || op.security?.some((s) => Object.keys(s).length === 0));
    expect(open.map(label).sort()).toEqual(Object.keys(PUBLIC).sort());
    // /docs is served beside the document, not in it.
    for (const path of ["/health", "/openapi.json", "/docs"]) expect((await ctx.get(path, { key: null })).status).toBe(200);
  });

  test("each operation under /v1 answers 401 unauthorized in the envelope; each phone route and SMSGate route 401 in its own shape", async () => {
    const ctx = await createTestContext();
    const ops = (await operations(ctx)).filter((op) => !PUBLIC[label(op)]);
    let api = 0;
    let phone = 0;
    let smsgate = 0;
    let twilio = 0;
    for (const [i, op] of ops.entries()) {
      // Failed sign-ins are throttled per address (20 a minute); move the clock past each window.
      if (i % 15 === 14) ctx.clock.advance(61_000);
      const body = bodySchema(op) ? sample(bodySchema(op)) : undefined;
      const r = await ctx.call(op.method, fillPath(op.path), { key: null, body });
      const why = `${label(op)} → ${r.status} ${r.text.slice(0, 200)}`;
      if (op.path.startsWith(PHONE_PREFIX)) {
        expect(
          schemes(op).every((s) => s.startsWith("Phone")),
          why,
        ).toBe(true);
        expect(r.status, why).toBe(401);
        expect(r.body, why).toMatchObject({ message: expect.any(String), code: 401 });
        expect(Object.keys(op.responses ?? {}), `${label(op)} documents its 401`).toContain("401");
        phone++;
      } else if (op.path.startsWith("/2010-04-01/") || op.path.startsWith("/v2/Services")) {
        // Twilio's APIs (Messages, Verify) answer in Twilio's error body, with its code for failed authentication.
        expect(schemes(op), why).toEqual(["TwilioBasic"]);
        expect(r.status, why).toBe(401);
        expect(r.body, why).toMatchObject({ code: 20003, status: 401, message: expect.any(String) });
        expect(Object.keys(op.responses ?? {}), `${label(op)} documents its 401`).toContain("401");
        twilio++;
      } else if (op.path.includes("/3rdparty/v1/")) {
        expect(schemes(op), why).toEqual(["SmsGateBasic", "SmsGateBearer"]);
        expect(r.status, why).toBe(401);
        expect(r.body, why).toMatchObject({ message: expect.any(String), code: 401, data: { error_code: "unauthorized" } });
        expect(Object.keys(op.responses ?? {}), `${label(op)} documents its 401`).toContain("401");
        smsgate++;
      } else {
        expect(op.path.startsWith("/v1/"), why).toBe(true);
        expect(schemes(op), why).toContain("ApiKeyBearer");
        expect(r.status, why).toBe(401);
        expect(r.body, why).toMatchObject({ status_id: 401, data: { error_code: "unauthorized" } });
        expect(Object.keys(op.responses ?? {}), `${label(op)} documents its 401`).toContain("401");
        api++;
      }
    }
    expect(api).toBeGreaterThan(40);
    expect(phone).toBeGreaterThan(5);
    expect(smsgate).toBeGreaterThan(20);
    // The Messages API's 5 operations and Verify's 9.
    expect(twilio).toBe(14);
  });
});

/** Every row of every table, so a call that should change nothing can be held to it. */
async function snapshot(ctx: TestContext) {
  const tables = await ctx.sql.all<{ name: string }>(
    ctx.sql.dialect === "sqlite"
      ? "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
      : "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
  );
  // api_key notes when a key was last used, and rate_counter (PostgreSQL) counts the request
  // against its key's limits: every authenticated call does both, by design.
  const names = tables.map((t) => t.name).filter((name) => name !== "api_key" && name !== "rate_counter");
  if (ctx.sql.dialect === "sqlite") {
    const rows: Record<string, unknown[]> = {};
    for (const name of names) rows[name] = await ctx.sql.all(`SELECT * FROM "${name}"`);
    return rows;
  }
  // On PostgreSQL every table in one statement: a probe's two snapshots are two round trips, not
  // two for each of some sixty tables.
  const parts = names.map((name) => `SELECT '${name}' AS name, coalesce(json_agg(x), '[]'::json)::text AS rows FROM "${name}" x`);
  const found = await ctx.sql.all<{ name: string; rows: string }>(parts.join(" UNION ALL "));
  return Object.fromEntries(found.map((t) => [t.name, JSON.parse(t.rows) as unknown[]]));
}

/** This workspace's rows of each kind that an operation can name by id. */
async function ownRows(ctx: TestContext) {
  await ctx.topUp(100);
  // A received MMS with a picture, first: its thread message and attachment are ids 1, which the
  // sweep puts in the path parameters it does not probe.
  await (await mmsPhone(ctx)).download(RECIPIENT, "A picture", [mmsPart(1, "image/png", "p.png", PNG)]);
  const mms = (await threadOf(ctx, RECIPIENT))!.messages[0];
  const phone = await ctx.phone("Mine");
  const contact = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Ada", phone: RECIPIENT }), 200).data;
  const template = expectEnvelope(await ctx.post("/v1/api/template/create", { name: "Hi", body: "Hi {{name}}" }), 200).data;
  const sent = expectEnvelope(
    await ctx.post("/v1/notification/sms/api/send", { recipient_contact: RECIPIENT, message: "Hello", device_id: phone.device_id }),
    200,
  ).data;
  const webhook = expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: "https://example.com/hook", events: "*" }), 200).data;
  // A code sent before the threads are read: its message is in its thread by then.
  const service = expectEnvelope(await ctx.post("/v1/api/verify/service/create", { name: "Mine" }), 200).data;
  const verification = expectEnvelope(await ctx.post("/v1/api/verify/start", { service_id: service.service_id, to: RECIPIENT }), 200).data;
  const thread = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads[0];
  const pool = expectEnvelope(await ctx.post("/v1/api/pool/create", { name: "Mine", members: [{ device_id: phone.device_id }] }), 200).data;
  const rule = expectEnvelope(
    await ctx.post("/v1/api/rule/create", { name: "Mine", match: { any: true }, action: { tag: "mine" } }),
    200,
  ).data;
  const ids: Record<string, number> = {
    device: phone.device_id,
    contact: contact.contact_id,
    template: template.template_id,
    notification: sent.notification_id,
    webhook: webhook.webhook_id,
    thread: thread.thread_id,
    pool: pool.pool_id,
    rule: rule.rule_id,
    service: service.service_id,
    verification: verification.verification_id,
    message: mms.message_id,
    attachment: mms.attachments[0]?.attachment_id,
    key: ctx.key.key_id,
  };
  for (const [kind, id] of Object.entries(ids)) if (!Number.isInteger(id)) throw new Error(`no ${kind} id: ${id}`);
  return ids;
}

// A target named `to_<kind>_id` (reassign's to_device_id) is an id of that kind too, and so is a
// send's fallback `chatapp_template_id` (a template).
const kindOf = (name: string) => name.replace(/^(to|chatapp)_/, "").replace(/_ids?$/, "");

interface Probe {
  op: Operation;
  name: string;
  path: string;
  options: CallOptions;
}

/** One call per id an operation takes, that id set to one of this workspace's rows. */
function probes(op: Operation, ids: Record<string, number>, key: CallOptions["key"]): Probe[] {
  const out: Probe[] = [];
  const schema = bodySchema(op);
  const base = schema ? { ...(sample(schema) as Record<string, unknown>), ...EXTRA_FIELDS[label(op)] } : undefined;
  for (const p of op.parameters ?? []) {
    if (p.in !== "path" || !p.name.endsWith("_id")) continue;
    out.push({ op, name: p.name, path: fillPath(op.path, { [p.name]: ids[kindOf(p.name)] }), options: { key, body: base } });
  }
  for (const name of Object.keys(schema?.properties ?? {})) {
    if (!/_ids?$/.test(name) || FOREIGN_IDS[name]) continue;
    const id = ids[kindOf(name)];
    const body = { ...base, [name]: name.endsWith("_ids") ? [id] : id };
    out.push({ op, name, path: fillPath(op.path), options: { key, body } });
  }
  return out;
}

describe("every documented operation with another workspace's ids", () => {
  test("answers 404 and changes nothing", async () => {
    const ctx = await createTestContext();
    const ids = await ownRows(ctx);
    const other = await ctx.otherWorkspace();
    await ctx.topUp(100, other.workspace.id);
    const ops = (await operations(ctx)).filter((op) => !PUBLIC[label(op)] && !op.path.startsWith(PHONE_PREFIX));
    const all = ops.flatMap((op) => probes(op, ids, other.key));
    const covered = new Set<string>();
    for (const [i, probe] of all.entries()) {
      // The other key's plan allows 60 requests a minute: a minute passes every 50 probes.
      if (i % 50 === 49) ctx.clock.advance(61_000);
      expect(ids[kindOf(probe.name)], `${label(probe.op)}: an id of a kind this sweep does not make: ${probe.name}`).toBeDefined();
      const before = await snapshot(ctx);
      const r = await ctx.call(probe.op.method, probe.path, probe.options);
      const why = `${label(probe.op)} with ${probe.name} → ${r.status} ${r.text.slice(0, 300)}`;
      expect(Object.keys(probe.op.responses ?? {}), `${label(probe.op)} documents its 404`).toContain("404");
      expect(r.status, why).toBe(404);
      expect(r.body?.status_id, why).toBe(404);
      expect(r.body?.data?.error_code, why).toBe("not_found");
      expect(await snapshot(ctx), why).toEqual(before);
      // The same read with this workspace's own key finds the row, so the 404 above is the
      // workspace boundary and not an id that exists nowhere.
      if (probe.op.method === "GET")
        expect((await ctx.call("GET", probe.path, { ...probe.options, key: undefined })).status, why).toBe(200);
      covered.add(`${label(probe.op)} ${probe.name}`);
    }
    expect(all.length).toBeGreaterThan(30);

    // The paths the hand-written tenancy list named, each still among those swept.
    for (const expected of [
      "GET /v1/api/device/{device_id} device_id",
      "GET /v1/api/device/{device_id}/health device_id",
      "GET /v1/api/device/{device_id}/stats device_id",
      "GET /v1/api/device/{device_id}/usage device_id",
      "GET /v1/api/device/{device_id}/rate-limit device_id",
      "GET /v1/api/contact/{contact_id} contact_id",
      "GET /v1/api/template/{template_id} template_id",
      "POST /v1/api/device/batch/delete device_ids",
      "POST /v1/api/device/batch/update-status device_ids",
      "POST /v1/api/contact/update contact_id",
      "POST /v1/api/contact/delete contact_id",
      "POST /v1/api/template/update template_id",
      "POST /v1/api/template/delete template_id",
    ]) {
      expect(covered.has(expected), expected).toBe(true);
    }
    // Two snapshots of every table a probe, a hundred probes: room for a loaded machine.
  }, 120_000);
});
