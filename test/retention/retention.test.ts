// Retention (src/modules/retention): a prune removes finished notifications created before the
// cut-off with their logs, thread messages, SMSGate records, webhook deliveries and events, and
// expired sessions, tokens and idempotency keys; it never touches a pending or scheduled message or
// an opt-out, the statistics stay exactly as they were, and a list's total counts what is left. A
// dry run only counts. On both back ends.
import { describe, expect, test } from "bun:test";
import { smsSender } from "../helpers/api";
import { createTestContext, expectEnvelope, sqliteOnly, type TestContext } from "../helpers/context";
import { workerTasks } from "../../src/worker";
import { RECIPIENT, SECOND_RECIPIENT } from "../helpers/numbers";

const OPTED = SECOND_RECIPIENT;
const DAY = 86_400_000;
const send = smsSender({ recipient_contact: RECIPIENT, message: "Your order is ready" });

async function stats(ctx: TestContext) {
  const out: Record<string, unknown> = {};
  for (const period of ["day", "week", "month"]) {
    const data = expectEnvelope(await ctx.get("/v1/api/stats/notifications", { query: { period } }), 200).data;
    out[period] = { ...data, from: undefined, to: undefined };
  }
  return out;
}

const countOf = async (ctx: TestContext, table: string) =>
  Number((await ctx.sql.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))!.n);

/**
 * Forty days of history: at day 0 a delivered, a failed, an expired and a cancelled message, one
 * left `sent`, one still pending and one scheduled for later, each with its log, the sends in
 * their thread, a webhook event with a finished delivery, and an opt-out; then the clock moves on.
 */
async function history() {
  const ctx = await createTestContext();
  await ctx.phone();
  const ids = {
    delivered: await send(ctx, {}),
    failed: await send(ctx, {}),
    expired: await send(ctx, {}),
    cancelled: await send(ctx, {}),
    sent: await send(ctx, {}),
    pending: await send(ctx, {}),
    scheduled: await send(ctx, { schedule_time: new Date(ctx.clock.now() + 60 * DAY).toISOString().slice(0, 19).replace("T", " ") }),
  };
  const { state } = ctx.services;
  await state.transition(ids.delivered, "sent", { detail: "test" });
  await state.transition(ids.delivered, "delivered", { detail: "test" });
  await state.transition(ids.failed, "failed", { detail: "test", errorCode: "carrier_rejected" });
  await state.transition(ids.expired, "failed", { detail: "test", errorCode: "expired" });
  await state.transition(ids.sent, "sent", { detail: "test" });
  expect((await ctx.post("/v1/api/notification/cancel", { notification_id: ids.cancelled })).status).toBe(200);
  await ctx.services.threads.catchUp(1000);
  expect((await ctx.post("/v1/api/optout/add", { phone: OPTED })).status).toBe(200);
  // A webhook subscription with one finished delivery of an event from then.
  const hook = await ctx.post("/v1/api/webhook/create", { url: "http://127.0.0.1:9/hook", events: ["notification.delivered"] });
  expect(hook.status).toBe(200);
  const [sub] = await ctx.sql.all<{ id: number }>("SELECT id FROM webhook_subscription");
  const at = ctx.clock.now();
  await ctx.sql.run(
    "INSERT INTO event (id, workspace_id, type, data, created_at) VALUES ('evt_old', ?, 'notification.delivered', '{}', ?)",
    [ctx.workspace.id, at],
  );
  await ctx.sql.run(
    "INSERT INTO webhook_delivery (id, subscription_id, event_id, status, attempts, next_attempt_at, created_at) VALUES ('whd_old', ?, 'evt_old', 'delivered', 1, ?, ?)",
    [sub.id, at, at],
  );
  await ctx.sql.run("INSERT INTO webhook_attempt (delivery_id, at, status_code, latency_ms) VALUES ('whd_old', ?, 200, 5)", [at]);
  await ctx.sql.run("INSERT INTO mobile_code (code, workspace_id, expires_at) VALUES ('123456', ?, ?)", [ctx.workspace.id, at + 60_000]);
  ctx.clock.advance(40 * DAY);
  await ctx.sql.run("UPDATE device SET last_seen_at = ?", [ctx.clock.now()]);
  return { ctx, ids };
}

const cutOff = (ctx: TestContext) => ctx.clock.now() - 30 * DAY;

describe("pigeon prune's retention", () => {
  test("finished messages go with their logs and threads; pending, scheduled, sent and opt-outs stay; stats are unchanged", async () => {
    const { ctx, ids } = await history();
    const before = await stats(ctx);
    const listTotal = async () => expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data.pagination.total;
    expect(await listTotal()).toBe(7);
    // Every event of that day (the sends' and the opt-out's, and the one delivered to the webhook) is old enough.
    const events = await countOf(ctx, "event");
    expect(events).toBeGreaterThan(4);
    const report = await ctx.services.retention.prune(cutOff(ctx));
    expect(report).toMatchObject({ notifications: 4, webhook_deliveries: 1, webhook_attempts: 1, events, tokens: 1 });
    // The stored lines: each finished message's outcome at least (its first line, accepted, is made from its row when read).
    expect(report.notification_logs).toBeGreaterThanOrEqual(4);
    expect(report.thread_messages).toBe(4);

    const left = (await ctx.sql.all<{ id: number }>("SELECT id FROM notification ORDER BY id")).map((r) => r.id);
    expect(left).toEqual([ids.sent, ids.pending, ids.scheduled]);
    for (const gone of [ids.delivered, ids.failed, ids.expired, ids.cancelled]) {
      expect((await ctx.get(`/v1/api/notification/${gone}`)).status).toBe(404);
      expect(await ctx.sql.get("SELECT 1 AS x FROM notification_log WHERE notification_id = ?", [gone])).toBeNull();
      expect(await ctx.sql.get("SELECT 1 AS x FROM thread_message WHERE notification_id = ?", [gone])).toBeNull();
    }
    // What stays keeps its logs and its thread messages.
    expect(
      Number((await ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM notification_log WHERE notification_id = ?", [ids.sent]))!.n),
    ).toBeGreaterThan(0);
    expect(expectEnvelope(await ctx.get(`/v1/api/notification/${ids.pending}`), 200).data.logs[0].event).toBe("accepted");
    expect(await countOf(ctx, "thread_message")).toBe(3);
    expect(expectEnvelope(await ctx.get("/v1/api/optout/list", { query: { active: "true" } }), 200).data.entries.length).toBe(1);
    expect(await countOf(ctx, "webhook_delivery")).toBe(0);
    expect(await countOf(ctx, "event")).toBe(0);
    expect(await ctx.sql.get("SELECT 1 AS x FROM event WHERE id = 'evt_old'")).toBeNull();

    // The statistics are exactly as they were; the list counts what is left.
    expect(await stats(ctx)).toEqual(before);
    expect(await listTotal()).toBe(3);
    // The credits of the removed messages stay spent: the ledger keeps its entries.
    expect(await ctx.sql.get("SELECT 1 AS x FROM credit_ledger WHERE notification_id IN (?, ?)", [ids.delivered, ids.failed])).toBeNull();

    // Again: nothing more to remove.
    expect(await ctx.services.retention.prune(cutOff(ctx))).toMatchObject({ notifications: 0, events: 0, webhook_deliveries: 0 });
  });

  test("a dry run counts what a prune removes and removes nothing", async () => {
    const { ctx } = await history();
    const rows = await countOf(ctx, "notification");
    const dry = await ctx.services.retention.prune(cutOff(ctx), { dryRun: true });
    expect(dry.dry_run).toBe(true);
    expect(await countOf(ctx, "notification")).toBe(rows);
    const real = await ctx.services.retention.prune(cutOff(ctx));
    for (const kind of [
      "notifications",
      "notification_logs",
      "thread_messages",
      "webhook_deliveries",
      "webhook_attempts",
      "events",
      "tokens",
    ] as const)
      expect({ kind, n: dry[kind] }).toEqual({ kind, n: real[kind] });
  });

  test("a cut-off before the messages were made removes nothing of them", async () => {
    const { ctx } = await history();
    const report = await ctx.services.retention.prune(ctx.clock.now() - 41 * DAY);
    expect(report.notifications).toBe(0);
    expect(await countOf(ctx, "notification")).toBe(7);
  });

  test("PIGEON_RETENTION_DAYS runs the prune as a worker task; 0 runs none", async () => {
    const off = await createTestContext();
    expect(workerTasks(off.services).some((t) => t.name === "retention:prune")).toBe(false);
    const { ctx } = await history();
    const on = await createTestContext({ config: { retentionDays: 30 } });
    expect(workerTasks(on.services).some((t) => t.name === "retention:prune")).toBe(true);
    // The task of a server keeping 30 days, on the forty-day-old history.
    const retention = (await import("../../src/modules/retention")).createRetentionModule({
      storage: ctx.services.storage,
      sqlite: ctx.db?.$client ?? null,
      clock: ctx.clock,
      days: 30,
      log: () => undefined,
    }).service;
    await retention.tick();
    expect(await countOf(ctx, "notification")).toBe(3);
  });
});

describe("the space a prune frees", () => {
  sqliteOnly("a new database gives freed pages back to the disk", async () => {
    const { ctx } = await history();
    const sqlite = ctx.db!.$client;
    expect((sqlite.query("PRAGMA auto_vacuum").get() as { auto_vacuum: number }).auto_vacuum).toBe(2);
    // Bulk of finished history, then a prune of all of it.
    const at = ctx.clock.now() - 35 * DAY;
    sqlite.run(
      `INSERT INTO notification (workspace_id, delivery_type, route, recipient, message, status, stage, next_attempt_at, created_at, updated_at)
       WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 5000)
       SELECT ?, 'sms', 'sms', '${RECIPIENT}', hex(randomblob(200)), 'delivered', 'done', ?, ?, ? FROM k`,
      [ctx.workspace.id, at, at, at],
    );
    const pages = () => (sqlite.query("PRAGMA page_count").get() as { page_count: number }).page_count;
    const grown = pages();
    const report = await ctx.services.retention.prune(cutOff(ctx));
    expect(report.notifications).toBe(5004);
    expect(report.space).toBe("returned");
    expect(report.pages_freed).toBeGreaterThan(100);
    expect(pages()).toBeLessThan(grown - 100);
    expect((sqlite.query("PRAGMA freelist_count").get() as { freelist_count: number }).freelist_count).toBe(0);
  });
});
