// Reading, listing and cancelling notifications, and the notification stats.
import { describe, expect, test } from "bun:test";
import { smsSender } from "../helpers/api";
import { createTestContext, expectEnvelope, sqliteOnly, testBackend } from "../helpers/context";
import { RECIPIENT, ABROAD } from "../helpers/numbers";

const send = smsSender({ recipient_contact: RECIPIENT, message: "x" });

describe("GET /api/notification/:id", () => {
  test("every field and the log", async () => {
    const ctx = await createTestContext();
    const p = await ctx.phone();
    const id = await send(ctx, { message: "hello", recipient_name: "Ada" });
    const n = expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data;
    expect(n).toMatchObject({
      notification_id: id,
      status: "pending",
      delivery_type: "sms",
      route: "sms",
      template_id: null,
      template_vars: null,
      message: "hello",
      recipient: RECIPIENT,
      recipient_name: "Ada",
      device_id: p.device_id,
      schedule_time: null,
      attempts: 0,
      segments: 1,
      cost: 0,
      error_code: null,
      created_at: "2026-01-15T12:00:00.000Z",
      sent_at: null,
    });
    expect(n.logs).toEqual([
      {
        at: "2026-01-15T12:00:00.000Z",
        event: "accepted",
        status: "pending",
        error_code: null,
        detail: expect.stringContaining(`device ${p.device_id}`),
      },
    ]);
  });

  test("unknown id or another workspace's: 404; not a number: 400", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const id = await send(ctx, {});
    const other = await ctx.otherWorkspace();
    expect((await ctx.get(`/v1/api/notification/${id}`, { key: other.key })).status).toBe(404);
    expect((await ctx.get("/v1/api/notification/424242")).status).toBe(404);
    expect(expectEnvelope(await ctx.get("/v1/api/notification/abc"), 400).data.field).toBe("notification_id");
  });
});

describe("GET /api/notification/list", () => {
  test("newest first, filtered by status, delivery_type, recipient and dates, paged", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const a = await send(ctx, { message: "a" });
    ctx.clock.advance(86_400_000);
    await ctx.sql.run("UPDATE device SET last_seen_at = ?", [ctx.clock.now()]);
    const b = await send(ctx, { message: "b", recipient_contact: ABROAD });
    const c = await send(ctx, { message: "c" });
    await ctx.services.state.transition(c, "sent", { detail: "test" });

    const all = expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data;
    expect(all.notifications.map((n: { notification_id: number }) => n.notification_id)).toEqual([c, b, a]);
    expect(all.pagination).toEqual({ page: 1, limit: 20, total: 3 });
    const ids = async (query: Record<string, string | number>) =>
      expectEnvelope(await ctx.get("/v1/api/notification/list", { query }), 200).data.notifications.map(
        (n: { notification_id: number }) => n.notification_id,
      );
    expect(await ids({ status: "sent" })).toEqual([c]);
    expect(await ids({ status: "pending" })).toEqual([b, a]);
    expect(await ids({ delivery_type: "chatapp" })).toEqual([]);
    expect(await ids({ recipient: "+44 7911 123456" })).toEqual([b]);
    expect(await ids({ from: "2026-01-16" })).toEqual([c, b]);
    expect(await ids({ to: "2026-01-15" })).toEqual([a]);
    expect(await ids({ from: "2026-01-15T00:00:00Z", to: "2026-01-15T23:59:59Z" })).toEqual([a]);
    expect(await ids({ page: 2, limit: 2 })).toEqual([a]);
  });

  test.each([
    [{ status: "lost" }, "status"],
    [{ delivery_type: "fax" }, "delivery_type"],
    [{ limit: 101 }, "limit"],
    [{ from: "yesterday" }, "from"],
  ])("bad filter %o: 400 naming %s", async (query, field) => {
    const ctx = await createTestContext();
    expect(expectEnvelope(await ctx.get("/v1/api/notification/list", { query: query as Record<string, string> }), 400).data.field).toBe(
      field,
    );
  });
});

describe("POST /api/notification/cancel", () => {
  test("a pending notification no channel has taken becomes cancelled; a second cancel is 409", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const id = await send(ctx, { schedule_time: "2026-01-20 10:00:00" });
    const body = expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: id }), 200);
    expect(body.data).toMatchObject({ notification_id: id, status: "cancelled", cancelled_at: "2026-01-15T12:00:00.000Z" });
    const n = expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data;
    expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["scheduled", "cancelled"]);
    const again = expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: id }), 409);
    expect(again.data).toMatchObject({ error_code: "not_cancellable", status: "cancelled" });
  });

  test("sent, delivered, failed, or already with its channel: 409", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const sent = await send(ctx, {});
    await ctx.services.state.transition(sent, "sent", {});
    expect(expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: sent }), 409).data.status).toBe("sent");
    const handed = await send(ctx, {});
    await ctx.sql.run("UPDATE notification SET stage = 'dispatching' WHERE id = ?", [handed]);
    const r = expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: handed }), 409);
    expect(r.data.status).toBe("pending");
    expect(r.message).toContain("channel");
  });

  test("unknown or another workspace's: 404; bad body: 400", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const id = await send(ctx, {});
    const other = await ctx.otherWorkspace();
    expect((await ctx.post("/v1/api/notification/cancel", { notification_id: id }, { key: other.key })).status).toBe(404);
    expect((await ctx.post("/v1/api/notification/cancel", { notification_id: 9999 })).status).toBe(404);
    expect(expectEnvelope(await ctx.post("/v1/api/notification/cancel", {}), 400).data.field).toBe("notification_id");
  });
});

describe("GET /api/stats/notifications", () => {
  test("counts by status over day, week and month", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const old = await send(ctx, {});
    await ctx.services.state.transition(old, "delivered", {});
    ctx.clock.advance(3 * 86_400_000);
    await ctx.sql.run("UPDATE device SET last_seen_at = ?", [ctx.clock.now()]);
    const s1 = await send(ctx, {});
    const f1 = await send(ctx, {});
    await send(ctx, {});
    await ctx.services.state.transition(s1, "sent", {});
    await ctx.services.state.transition(f1, "failed", { errorCode: "x", reason: "y" });

    const day = expectEnvelope(await ctx.get("/v1/api/stats/notifications", { query: { period: "day" } }), 200).data;
    expect(day).toMatchObject({ period: "day", sent: 1, delivered: 0, failed: 1, pending: 1 });
    const week = (await ctx.get("/v1/api/stats/notifications", { query: { period: "week" } })).body.data;
    expect(week).toMatchObject({ sent: 1, delivered: 1, failed: 1, pending: 1 });
    expect((await ctx.get("/v1/api/stats/notifications")).body.data.period).toBe("day");
    expect(expectEnvelope(await ctx.get("/v1/api/stats/notifications", { query: { period: "year" } }), 400).data.field).toBe("period");
    const other = await ctx.otherWorkspace();
    expect((await ctx.get("/v1/api/stats/notifications", { query: { period: "month" }, key: other.key })).body.data).toMatchObject({
      sent: 0,
      pending: 0,
    });
  });

  test("counts come from the hourly rollup and agree with counting rows, for any range, status and channel, through every change", async () => {
    const ctx = await createTestContext();
    const db = ctx.sql;
    const repo = ctx.services.channelCore.notifications;
    const device = (await db.get<{ id: number }>(
      "INSERT INTO device (workspace_id, name, kind, external_id, created_at, updated_at) VALUES (?, 'p', 'sms', 'x', 0, 0) RETURNING id",
      [ctx.workspace.id],
    ))!;
    // A deterministic spread of 600 notifications over three days (the last 100 in one statement), in both channels and every status.
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const start = Date.UTC(2026, 0, 10, 0, 17, 23);
    const statuses = ["pending", "sent", "delivered", "failed", "cancelled"] as const;
    const row = () => {
      const at = start + Math.floor(next() * 3 * 86_400_000);
      return [ctx.workspace.id, next() < 0.3 ? "chatapp" : "sms", device.id, statuses[Math.floor(next() * 5)], at, at, at];
    };
    const insert =
      "INSERT INTO notification (workspace_id, delivery_type, route, device_id, recipient, message, status, stage, next_attempt_at, created_at, updated_at) VALUES ";
    const values = "(?, ?, 'sms', ?, '+14155552671', 'x', ?, 'queued', ?, ?, ?)";
    await ctx.services.storage.transaction(async () => {
      for (let i = 0; i < 500; i++) await db.run(insert + values, row());
      // A bulk send's rows come in one statement (PostgreSQL counts them once a statement).
      const many = Array.from({ length: 100 }, row);
      await db.run(insert + many.map(() => values).join(", "), many.flat());
    });
    // Status changes move a row from one bucket to another; a deleted row leaves its bucket.
    await db.run("UPDATE notification SET status = 'failed' WHERE id % 7 = 0");
    await db.run("UPDATE notification SET delivery_type = 'sms' WHERE id % 11 = 0");
    await db.run("DELETE FROM notification WHERE id % 13 = 0");
    const brute = async (f: { status?: string; deliveryType?: string; from?: number; to?: number }) => {
      const where = ["workspace_id = ?", "created_at >= ?", "created_at <= ?"];
      const args: (string | number)[] = [ctx.workspace.id, f.from ?? -1, f.to ?? Number.MAX_SAFE_INTEGER];
      if (f.status !== undefined) {
        where.push("status = ?");
        args.push(f.status);
      }
      if (f.deliveryType !== undefined) {
        where.push("delivery_type = ?");
        args.push(f.deliveryType);
      }
      return (await db.get<{ n: number }>(`SELECT count(*) AS n FROM notification WHERE ${where.join(" AND ")}`, args))!.n;
    };
    let checked = 0;
    for (let i = 0; i < 300; i++) {
      const a = start - 3_600_000 + Math.floor(next() * 4 * 86_400_000);
      const b = a + Math.floor(next() * (i % 3 === 0 ? 5_400_000 : 2 * 86_400_000));
      const f = {
        ...(next() < 0.7 ? { status: statuses[Math.floor(next() * 5)] } : {}),
        ...(next() < 0.4 ? { deliveryType: next() < 0.5 ? "sms" : "chatapp" } : {}),
        ...(next() < 0.9 ? { from: a } : {}),
        ...(next() < 0.9 ? { to: b } : {}),
      } as Parameters<typeof repo.count>[1];
      const counted = await brute(f);
      expect({ f, n: await repo.count(ctx.workspace.id, f) }).toEqual({ f, n: counted });
      checked += counted > 0 ? 1 : 0;
    }
    expect(checked).toBeGreaterThan(100);
    // On PostgreSQL the count changes wait as appended deltas (counted above) until the leader
    // folds them in; folding changes no answer. SQLite's triggers update the rollup in place.
    const total = await repo.count(ctx.workspace.id, {});
    const folded = await repo.foldHourly();
    expect({ backend: testBackend(), folded: folded > 0 }).toEqual({ backend: testBackend(), folded: testBackend() === "postgres" });
    expect(await repo.count(ctx.workspace.id, {})).toBe(total);
    // The rollup is the rows grouped, bucket for bucket (none negative, none missing).
    const rollup = await db.all(
      "SELECT status, hour, delivery_type, n FROM notification_hourly WHERE workspace_id = ? AND n <> 0 ORDER BY 1, 2, 3",
      [ctx.workspace.id],
    );
    const grouped = await db.all(
      "SELECT status, created_at / 3600000 AS hour, delivery_type, count(*) AS n FROM notification WHERE workspace_id = ? GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
      [ctx.workspace.id],
    );
    expect(rollup.length).toBeGreaterThan(50);
    expect(rollup).toEqual(grouped);
  });

  sqliteOnly("the hourly sum and the edge counts use their indexes, never a scan of the notification table", async () => {
    const ctx = await createTestContext();
    const plan = (sql: string, ...args: unknown[]) =>
      (ctx.db!.$client.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(args as [])) as { detail: string }[]).map((p) => p.detail).join(" | ");
    const hourly = plan(
      "SELECT coalesce(sum(n), 0) AS n FROM notification_hourly WHERE workspace_id = ? AND status = ? AND hour >= ? AND hour < ?",
      1,
      "sent",
      0,
      1,
    );
    expect(hourly).toContain(
      "notification_hourly USING INDEX sqlite_autoindex_notification_hourly_1 (workspace_id=? AND status=? AND hour>? AND hour<?)",
    );
    const edge = plan(
      "SELECT count(*) AS n FROM notification WHERE workspace_id = ? AND status = ? AND created_at >= ? AND created_at <= ?",
      1,
      "sent",
      0,
      1,
    );
    expect(edge).toContain(
      "USING COVERING INDEX notification_workspace_status_idx (workspace_id=? AND status=? AND created_at>? AND created_at<?)",
    );
    const edgeAll = plan("SELECT count(*) AS n FROM notification WHERE workspace_id = ? AND created_at >= ? AND created_at <= ?", 1, 0, 1);
    expect(edgeAll).toContain("notification_workspace_created_idx");
    expect(`${hourly} ${edge} ${edgeAll}`).not.toContain("SCAN");
  });

  sqliteOnly(
    "what a device was handed in a window is counted through the index of handed rows, which a stored send does not enter",
    async () => {
      const ctx = await createTestContext();
      const plan = (sql: string, ...args: unknown[]) =>
        (ctx.db!.$client.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(args as [])) as { detail: string }[]).map((p) => p.detail).join(" | ");
      // The phone's pacing, the device's statistics, and the dispatcher's per-device counts.
      const counts = [
        plan("SELECT count(*) AS n FROM notification WHERE device_id = ? AND dispatched_at >= ? AND priority < ?", 1, 0, 100),
        plan("SELECT count(*) AS n FROM notification WHERE device_id = ? AND dispatched_at >= ?", 1, 0),
        plan("SELECT device_id FROM notification WHERE device_id IN (?, ?) AND dispatched_at >= ?", 1, 2, 0),
      ];
      for (const p of counts) expect(p).toContain("INDEX notification_device_dispatched_idx (device_id=? AND dispatched_at>?)");
      await ctx.phone();
      expect((await ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, message: "Waiting" })).status).toBe(200);
      const index = (ctx.db!.$client.query("PRAGMA index_list(notification)").all() as { name: string; partial: number }[]).find(
        (i) => i.name === "notification_device_dispatched_idx",
      );
      expect(index?.partial).toBe(1);
      // The stored send, not yet handed, is not in it: counted through the index, there is none.
      const handed = ctx
        .db!.$client.query(
          "SELECT count(*) AS n FROM notification INDEXED BY notification_device_dispatched_idx WHERE dispatched_at IS NOT NULL",
        )
        .get() as { n: number };
      expect(handed.n).toBe(0);
      expect((ctx.db!.$client.query("SELECT count(*) AS n FROM notification").get() as { n: number }).n).toBe(1);
    },
  );
});
