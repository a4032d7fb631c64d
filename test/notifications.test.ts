// Reading, listing and cancelling notifications, and the notification stats.
import { describe, expect, test } from "bun:test";
import { STATS_QUERY } from "../src/modules/stats/repository";
import { smsSender } from "./helpers/api";
import { createTestContext, expectEnvelope } from "./helpers/context";

const TO = "+14155552671";

const send = smsSender({ recipient_contact: TO, message: "x" });

describe("GET /api/notification/:id", () => {
  test("every field and the log", async () => {
    const ctx = createTestContext();
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
      recipient: TO,
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
    expect(n.logs).toEqual([{ at: "2026-01-15T12:00:00.000Z", event: "accepted", status: "pending", error_code: null, detail: expect.stringContaining(`device ${p.device_id}`) }]);
  });

  test("unknown id or another workspace's: 404; not a number: 400", async () => {
    const ctx = createTestContext();
    await ctx.phone();
    const id = await send(ctx, {});
    const other = ctx.otherWorkspace();
    expect((await ctx.get(`/v1/api/notification/${id}`, { key: other.key })).status).toBe(404);
    expect((await ctx.get("/v1/api/notification/424242")).status).toBe(404);
    expect(expectEnvelope(await ctx.get("/v1/api/notification/abc"), 400).data.field).toBe("notification_id");
  });
});

describe("GET /api/notification/list", () => {
  test("newest first, filtered by status, delivery_type, recipient and dates, paged", async () => {
    const ctx = createTestContext();
    await ctx.phone();
    const a = await send(ctx, { message: "a" });
    ctx.clock.advance(86_400_000);
    ctx.db.$client.run("UPDATE device SET last_seen_at = ?", [ctx.clock.now()]);
    const b = await send(ctx, { message: "b", recipient_contact: "+447911123456" });
    const c = await send(ctx, { message: "c" });
    ctx.services.state.transition(c, "sent", { detail: "test" });

    const all = expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data;
    expect(all.notifications.map((n: { notification_id: number }) => n.notification_id)).toEqual([c, b, a]);
    expect(all.pagination).toEqual({ page: 1, limit: 20, total: 3 });
    const ids = async (query: Record<string, string | number>) =>
      expectEnvelope(await ctx.get("/v1/api/notification/list", { query }), 200).data.notifications.map((n: { notification_id: number }) => n.notification_id);
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
    const ctx = createTestContext();
    expect(expectEnvelope(await ctx.get("/v1/api/notification/list", { query: query as Record<string, string> }), 400).data.field).toBe(field);
  });
});

describe("POST /api/notification/cancel", () => {
  test("a pending notification no channel has taken becomes cancelled; a second cancel is 409", async () => {
    const ctx = createTestContext();
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
    const ctx = createTestContext();
    await ctx.phone();
    const sent = await send(ctx, {});
    ctx.services.state.transition(sent, "sent", {});
    expect(expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: sent }), 409).data.status).toBe("sent");
    const handed = await send(ctx, {});
    ctx.db.$client.run("UPDATE notification SET stage = 'dispatching' WHERE id = ?", [handed]);
    const r = expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: handed }), 409);
    expect(r.data.status).toBe("pending");
    expect(r.message).toContain("channel");
  });

  test("unknown or another workspace's: 404; bad body: 400", async () => {
    const ctx = createTestContext();
    await ctx.phone();
    const id = await send(ctx, {});
    const other = ctx.otherWorkspace();
    expect((await ctx.post("/v1/api/notification/cancel", { notification_id: id }, { key: other.key })).status).toBe(404);
    expect((await ctx.post("/v1/api/notification/cancel", { notification_id: 9999 })).status).toBe(404);
    expect(expectEnvelope(await ctx.post("/v1/api/notification/cancel", {}), 400).data.field).toBe("notification_id");
  });
});

describe("GET /api/stats/notifications", () => {
  test("counts by status over day, week and month", async () => {
    const ctx = createTestContext();
    await ctx.phone();
    const old = await send(ctx, {});
    ctx.services.state.transition(old, "delivered", {});
    ctx.clock.advance(3 * 86_400_000);
    ctx.db.$client.run("UPDATE device SET last_seen_at = ?", [ctx.clock.now()]);
    const s1 = await send(ctx, {});
    const f1 = await send(ctx, {});
    await send(ctx, {});
    ctx.services.state.transition(s1, "sent", {});
    ctx.services.state.transition(f1, "failed", { errorCode: "x", reason: "y" });

    const day = expectEnvelope(await ctx.get("/v1/api/stats/notifications", { query: { period: "day" } }), 200).data;
    expect(day).toMatchObject({ period: "day", sent: 1, delivered: 0, failed: 1, pending: 1 });
    const week = (await ctx.get("/v1/api/stats/notifications", { query: { period: "week" } })).body.data;
    expect(week).toMatchObject({ sent: 1, delivered: 1, failed: 1, pending: 1 });
    expect((await ctx.get("/v1/api/stats/notifications")).body.data.period).toBe("day");
    expect(expectEnvelope(await ctx.get("/v1/api/stats/notifications", { query: { period: "year" } }), 400).data.field).toBe("period");
    const other = ctx.otherWorkspace();
    expect((await ctx.get("/v1/api/stats/notifications", { query: { period: "month" }, key: other.key })).body.data).toMatchObject({ sent: 0, pending: 0 });
  });

  test("the stats query uses the workspace/created_at index, not a scan", () => {
    const ctx = createTestContext();
    const plan = ctx.db.$client.query(`EXPLAIN QUERY PLAN ${STATS_QUERY}`).all(1, "sent", 0, 1) as { detail: string }[];
    const text = plan.map((p) => p.detail).join(" | ");
    expect(text).toContain("USING COVERING INDEX notification_workspace_status_idx (workspace_id=? AND status=? AND created_at>? AND created_at<?)");
    expect(text).not.toContain("SCAN");
  });
});
