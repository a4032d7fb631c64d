// One person's data (src/modules/privacy): the export holds everything the workspace has about a
// number; the erasure leaves no trace of it in any column of any table (every text column is
// searched, for the number with and without its +), answers with counts, is audited without the
// number, keeps another person's data, and keeps the opt-out in force through a keyed digest. On
// both back ends.
import { describe, expect, test } from "bun:test";
import { smsSender, waitFor } from "../helpers/api";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { recordInbound } from "../../src/modules/threads/inbound";
import { RECIPIENT, ABROAD } from "../helpers/numbers";

const ADA = RECIPIENT;
const ADA_DIGITS = "14155552671";
const BOB = ABROAD;
const send = smsSender({ recipient_contact: ADA, message: "Your order is ready" });

/** Every column of every table of the database, as the back end lists them. */
async function columns(ctx: TestContext): Promise<{ table: string; column: string }[]> {
  if (ctx.databaseUrl) {
    return ctx.sql.all<{ table: string; column: string }>(
      `SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns
       WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
    );
  }
  const tables = await ctx.sql.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
  const out: { table: string; column: string }[] = [];
  for (const { name } of tables)
    for (const c of await ctx.sql.all<{ name: string }>(`SELECT name FROM pragma_table_info('${name}')`))
      out.push({ table: name, column: c.name });
  return out;
}

/** Where a value holding `needle` is stored: "table.column (n rows)". */
async function traces(ctx: TestContext, needle: string): Promise<string[]> {
  const found: string[] = [];
  const all = await columns(ctx);
  // A hundred columns a statement: some four hundred round trips were most of this test's time on
  // PostgreSQL (SQLite, in process, reads them as fast one by one, within its compound-select limit).
  for (let at = 0; at < all.length; at += 100) {
    const some = all.slice(at, at + 100);
    const rows = await ctx.sql.all<{ at: string; n: number }>(
      some
        .map(
          ({ table, column }) => `SELECT '${table}.${column}' AS at, count(*) AS n FROM "${table}" WHERE CAST("${column}" AS TEXT) LIKE ?`,
        )
        .join(" UNION ALL "),
      some.map(() => `%${needle}%`),
    );
    for (const r of rows) if (Number(r.n) > 0) found.push(`${r.at} (${r.n})`);
  }
  return found;
}

/** Ada, everywhere: a contact, messages in every state, an inbound reply, an SMSGate-API message, a stored reply, webhook events and deliveries, a platform status waiting, an opt-out. Bob, beside her. */
async function adaEverywhere() {
  const ctx = await createTestContext();
  const phone = await ctx.phone("Shop phone");
  // A pool that keeps her on its member and counts her among its distinct recipients, and a rule that answers her thanks.
  const pool = { name: "Shop", is_default: true, members: [{ device_id: phone.device_id, monthly_unique_recipients: 1000 }] };
  expect((await ctx.post("/v1/api/pool/create", pool)).status).toBe(200);
  const thanks = { name: "Thanks", match: { keyword: "thanks" }, action: { reply: { text: "You are welcome" }, tag: "grateful" } };
  expect((await ctx.post("/v1/api/rule/create", thanks)).status).toBe(200);
  expect((await ctx.post("/v1/api/webhook/create", { url: "http://127.0.0.1:9/hook", events: ["*"] })).status).toBe(200);
  expect((await ctx.post("/v1/api/contact/create", { name: "Ada Lovelace", phone: ADA })).status).toBe(200);
  const delivered = await send(ctx, {});
  await ctx.services.state.transition(delivered, "sent", { detail: "test" });
  await ctx.services.state.transition(delivered, "delivered", { detail: "test" });
  const waiting = await send(ctx, { message: "See you tomorrow" });
  const keyed = await ctx.call("POST", "/v1/api/sms/send", {
    body: { recipient_contact: ADA, message: "Receipt" },
    headers: { "idempotency-key": "receipt-1" },
  });
  expect(keyed.status).toBe(200);
  const gate = await ctx.call("POST", "/3rdparty/v1/messages", {
    key: null,
    headers: { authorization: `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}` },
    body: { textMessage: { text: "Gate hello" }, phoneNumbers: [ADA, BOB], deviceId: String(phone.device_id) },
  });
  expect(gate.status).toBe(202);
  const bobs = await send(ctx, { recipient_contact: BOB, message: "Bob's order" });
  await ctx.services.storage.transaction(() =>
    recordInbound(
      ctx.services.channelCore.threads,
      ctx.services.events,
      {
        workspaceId: ctx.workspace.id,
        channel: "sms",
        deviceId: phone.device_id,
        from: ADA,
        fromName: "Ada",
        body: "Thanks! Call me on 4155552671",
        externalId: "in-1",
        at: ctx.clock.now(),
      },
      ctx.services.channelCore.onInbound,
    ),
  );
  await waitFor("the rule's reply", () => ctx.sql.get("SELECT id FROM notification WHERE message = 'You are welcome'"));
  await ctx.services.threads.catchUp(1000);
  await ctx.sql.run("INSERT INTO status_backlog (device_id, external_id, payload, received_at) VALUES (?, 'wamid.X', ?, ?)", [
    phone.device_id,
    JSON.stringify({ id: "wamid.X", status: "delivered", recipient_id: ADA_DIGITS }),
    ctx.clock.now(),
  ]);
  expect((await ctx.post("/v1/api/optout/add", { phone: ADA, reason: "Ada asked by phone" })).status).toBe(200);
  return { ctx, delivered, waiting, bobs };
}

describe("privacy: one person's data", () => {
  test("the export holds the contact, the messages with their logs, the threads, the opt-out and the webhook events", async () => {
    const { ctx, delivered, waiting } = await adaEverywhere();
    const data = expectEnvelope(await ctx.get("/v1/api/privacy/export", { query: { phone: "+1 (415) 555-2671" } }), 200).data;
    expect(data.phone).toBe(ADA);
    expect(data.contacts).toEqual([expect.objectContaining({ name: "Ada Lovelace", phone: ADA })]);
    const ids = data.notifications.map((n: { notification_id: number }) => n.notification_id);
    expect(ids).toEqual(expect.arrayContaining([delivered, waiting]));
    expect(ids).toHaveLength(5);
    expect(data.notifications.find((n: { notification_id: number }) => n.notification_id === delivered).logs.length).toBeGreaterThanOrEqual(
      3,
    );
    const messages = data.threads.flatMap((t: { messages: { direction: string; body: string }[] }) => t.messages);
    expect(messages).toEqual(
      expect.arrayContaining([expect.objectContaining({ direction: "inbound", body: "Thanks! Call me on 4155552671" })]),
    );
    expect(data.opt_out).toMatchObject({ opted_out: true, source: "api" });
    expect(data.opt_out_history).toEqual([expect.objectContaining({ action: "opted_out", reason: "Ada asked by phone" })]);
    const types = new Set(data.webhook_events.map((e: { type: string }) => e.type));
    for (const type of ["notification.delivered", "message.received", "contact.opted_out"]) expect(types.has(type)).toBe(true);
    expect(data.webhook_deliveries.length).toBe(data.webhook_events.length);
    // Another person's messages are not in it.
    expect(JSON.stringify(data)).not.toContain("Bob's order");
  });

  test("erasure leaves no trace of the number in any column, keeps Bob's data, and the opt-out still holds", async () => {
    const { ctx, bobs } = await adaEverywhere();
    // The search finds Ada before (the test would fail if it could not see her).
    expect((await traces(ctx, ADA_DIGITS)).length).toBeGreaterThan(8);
    const credit = await ctx.get("/v1/api/stats/notifications", { query: { period: "day" } });
    const reply = expectEnvelope(await ctx.post("/v1/api/privacy/erase", { phone: ADA }), 200);
    expect(reply.data.phone).toBe(ADA);
    expect(reply.data.in_flight).toBe(0);
    expect(reply.data.erased).toMatchObject({ contacts: 1, notifications: 5, smsgate_messages: 0, platform_statuses: 1 });
    // Her pool member, her place among its distinct recipients (kept as a digest), the rule's reply to her.
    expect(reply.data.erased.routing_traces).toBe(3);
    expect(Number((await ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM pool_recipient"))!.n)).toBe(2);
    expect(reply.data.erased.threads).toBeGreaterThanOrEqual(1);
    expect(reply.data.erased.events).toBeGreaterThan(4);
    expect(reply.data.erased.webhook_deliveries).toBe(reply.data.erased.events);

    expect(await traces(ctx, ADA_DIGITS)).toEqual([]);
    expect(await traces(ctx, "Ada Lovelace")).toEqual([]);
    expect(await traces(ctx, "Ada asked by phone")).toEqual([]);

    // Bob keeps his message and his SMSGate recipient; the statistics keep their counts.
    expect(expectEnvelope(await ctx.get(`/v1/api/notification/${bobs}`), 200).data.recipient).toBe(BOB);
    expect(await ctx.sql.get("SELECT 1 AS x FROM smsgate_recipient WHERE phone_number = ?", [BOB])).not.toBeNull();
    expect((await ctx.get("/v1/api/stats/notifications", { query: { period: "day" } })).body.data).toMatchObject({
      ...credit.body.data,
      from: expect.any(String),
      to: expect.any(String),
    });

    // Ada stays opted out: a send is refused, the list shows a digest, not her number.
    const refused = await ctx.post("/v1/api/sms/send", { recipient_contact: ADA, message: "Back again?" });
    expect(refused.status).toBe(403);
    expect(refused.body.data.error_code).toBe("recipient_opted_out");
    const active = expectEnvelope(await ctx.get("/v1/api/optout/list", { query: { active: "true" } }), 200).data.entries;
    expect(active).toHaveLength(1);
    expect(active[0].phone).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect((await ctx.get("/v1/api/optout/list", { query: { phone: ADA, active: "true" } })).body.data.entries).toHaveLength(1);
    // The export now finds nothing but the opt-out in force.
    const after = expectEnvelope(await ctx.get("/v1/api/privacy/export", { query: { phone: ADA } }), 200).data;
    expect(after).toMatchObject({ contacts: [], notifications: [], threads: [], opt_out_history: [], webhook_events: [] });
    expect(after.opt_out.opted_out).toBe(true);

    // The audit says when, by which key and how much; never the number (the search above covered it).
    const [entry] = await ctx.services.privacy.erasures(ctx.workspace.id);
    expect(entry).toMatchObject({ actor: `key:${ctx.key.key_id}`, counts: reply.data.erased });

    // Ada opts back in by asking: the digest goes, and she can be texted.
    expect((await ctx.post("/v1/api/optout/remove", { phone: ADA })).body.data.changed).toBe(true);
    expect((await ctx.post("/v1/api/sms/send", { recipient_contact: ADA, message: "Welcome back" })).status).toBe(200);
  });

  test("a number never seen erases to zeros; a bad number is 400 with nothing done", async () => {
    const { ctx } = await adaEverywhere();
    const none = expectEnvelope(await ctx.post("/v1/api/privacy/erase", { phone: "+12025550123" }), 200).data.erased;
    expect(Object.values(none).every((n) => n === 0)).toBe(true);
    for (const body of [{ phone: "not a number" }, { phone: "" }, {}, { phone: ADA, extra: 1 }]) {
      const bad = await ctx.post("/v1/api/privacy/erase", body);
      expect(bad.status).toBe(400);
      expect(bad.body.data.error_code).toEqual(expect.any(String));
    }
    expect((await ctx.get("/v1/api/privacy/export", { query: { phone: "12" } })).status).toBe(400);
    expect((await ctx.get("/v1/api/privacy/export")).status).toBe(400);
    expect((await traces(ctx, ADA_DIGITS)).length).toBeGreaterThan(8);
    // Another workspace's key erases in its own workspace only.
    const other = await ctx.otherWorkspace();
    const elsewhere = expectEnvelope(await ctx.post("/v1/api/privacy/erase", { phone: ADA }, { key: other.key }), 200).data.erased;
    expect(elsewhere.notifications).toBe(0);
    expect((await traces(ctx, ADA_DIGITS)).length).toBeGreaterThan(8);
  });
});
