import { describe, expect, test } from "bun:test";
import { notificationRows } from "../../src/modules/notifications/model";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { RECIPIENT } from "../helpers/numbers";

async function register(ctx: TestContext, devices: unknown[]) {
  return expectEnvelope(await ctx.post("/v1/api/device/batch/register", { devices }), 200).data.devices;
}

function addNotification(
  ctx: TestContext,
  deviceId: number,
  status: "pending" | "sent" | "delivered" | "failed",
  createdAt = ctx.clock.now(),
) {
  const { sql, params } = notificationRows.insert({
    workspaceId: ctx.workspace.id,
    deliveryType: "sms",
    route: "sms",
    deviceId,
    recipient: RECIPIENT,
    message: "hello",
    status,
    nextAttemptAt: createdAt,
    createdAt,
    updatedAt: createdAt,
  });
  return ctx.sql.run(sql, params);
}

describe("device registration", () => {
  test("registers up to 10 devices; each gets an id, and sms devices a token", async () => {
    const ctx = await createTestContext();
    const devices = await register(ctx, [
      { name: "Front desk" },
      {
        name: "Cloud line",
        kind: "cloud",
        phone_number: "+1 (415) 555-2671",
        cloud: { account_sid: "AC1", auth_token: "secret-auth-token-xyz", from_number: RECIPIENT },
      },
    ]);
    expect(devices).toHaveLength(2);
    expect(devices[0]).toMatchObject({ name: "Front desk", kind: "sms", status: "active", online: false, blocked: false });
    expect(devices[0].device_token).toMatch(/^[\w-]{21}$/);
    expect(devices[1]).toMatchObject({ kind: "cloud", phone_number: RECIPIENT, device_token: null });
    expect(JSON.stringify(devices[1])).not.toContain("secret-auth-token-xyz");
    const stored = (await ctx.sql.get("SELECT token_hash FROM device WHERE id = ?", [devices[0].device_id])) as { token_hash: string };
    expect(stored.token_hash).not.toBe(devices[0].device_token);
  });

  test("11 devices: 400 naming the limit, nothing stored", async () => {
    const ctx = await createTestContext();
    const r = await ctx.post("/v1/api/device/batch/register", { devices: Array.from({ length: 11 }, (_, i) => ({ name: `d${i}` })) });
    const body = expectEnvelope(r, 400);
    expect(body.data).toMatchObject({ error_code: "validation_error", field: "devices" });
    expect(body.message).toContain("10");
    expect((await ctx.get("/v1/api/device/list")).body.data.pagination.total).toBe(0);
  });

  test.each([
    ["empty list", { devices: [] }, "devices"],
    ["missing devices", {}, "devices"],
    ["name of wrong type", { devices: [{ name: 7 }] }, "devices.0.name"],
    ["empty name", { devices: [{ name: "" }] }, "devices.0.name"],
    ["unknown kind", { devices: [{ name: "x", kind: "pager" }] }, "devices.0.kind"],
    ["devices not an array", { devices: 5 }, "devices"],
  ])("%s: 400 validation_error", async (_, body, field) => {
    const ctx = await createTestContext();
    const r = expectEnvelope(await ctx.post("/v1/api/device/batch/register", body), 400);
    expect(r.data.error_code).toBe("validation_error");
    expect(r.data.field).toStartWith(field);
    expect((await ctx.get("/v1/api/device/list")).body.data.pagination.total).toBe(0);
  });

  test("one bad phone number stores none of the batch", async () => {
    const ctx = await createTestContext();
    const r = await ctx.post("/v1/api/device/batch/register", { devices: [{ name: "ok" }, { name: "bad", phone_number: "12345" }] });
    const body = expectEnvelope(r, 400);
    expect(body.data.error_code).toBe("invalid_phone_number");
    expect(body.message).toContain("Invalid phone number");
    expect((await ctx.get("/v1/api/device/list")).body.data.pagination.total).toBe(0);
  });
});

describe("device list and get", () => {
  test("pages with pagination {page, limit, total} and filters by status", async () => {
    const ctx = await createTestContext();
    const devices = await register(
      ctx,
      Array.from({ length: 5 }, (_, i) => ({ name: `d${i}` })),
    );
    await ctx.post("/v1/api/device/batch/update-status", { device_ids: [devices[0].device_id], status: "inactive" });

    const page2 = expectEnvelope(await ctx.get("/v1/api/device/list", { query: { page: 2, limit: 2 } }), 200).data;
    expect(page2.pagination).toEqual({ page: 2, limit: 2, total: 5 });
    expect(page2.devices.map((d: { name: string }) => d.name)).toEqual(["d2", "d3"]);

    const inactive = (await ctx.get("/v1/api/device/list", { query: { status: "inactive" } })).body.data;
    expect(inactive.pagination.total).toBe(1);
    expect(inactive.devices[0].name).toBe("d0");
    const defaults = (await ctx.get("/v1/api/device/list")).body.data.pagination;
    expect(defaults).toEqual({ page: 1, limit: 20, total: 5 });
  });

  test.each([
    [{ limit: 101 }, "limit"],
    [{ limit: 0 }, "limit"],
    [{ limit: "ten" }, "limit"],
    [{ page: 0 }, "page"],
    [{ status: "broken" }, "status"],
  ])("bad query %o: 400 naming %s", async (query, field) => {
    const ctx = await createTestContext();
    const body = expectEnvelope(await ctx.get("/v1/api/device/list", { query: query as Record<string, string> }), 400);
    expect(body.data).toMatchObject({ error_code: "validation_error", field, location: "query" });
    if (field === "limit") expect(body.message).toContain("100");
  });

  test("get by id: device_id, name, status; unknown id 404; non-numeric id 400", async () => {
    const ctx = await createTestContext();
    const [d] = await register(ctx, [{ name: "Phone" }]);
    const got = expectEnvelope(await ctx.get(`/v1/api/device/${d.device_id}`), 200).data;
    expect(got).toMatchObject({ device_id: d.device_id, name: "Phone", status: "active" });
    expect(got.device_token).toBeUndefined();
    expect(expectEnvelope(await ctx.get("/v1/api/device/999"), 404).data.error_code).toBe("not_found");
    expect(expectEnvelope(await ctx.get("/v1/api/device/abc"), 400).data.field).toBe("device_id");
  });
});

describe("device health, stats, usage and rate limit", () => {
  test("health_score follows recency of contact and the failure rate", async () => {
    const ctx = await createTestContext();
    const [d] = await register(ctx, [{ name: "Phone" }]);
    let health = expectEnvelope(await ctx.get(`/v1/api/device/${d.device_id}/health`), 200).data;
    expect(health).toMatchObject({ health_score: 40, last_sync: null, online: false });

    await ctx.sql.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [ctx.clock.now(), d.device_id]);
    health = (await ctx.get(`/v1/api/device/${d.device_id}/health`)).body.data;
    expect(health).toMatchObject({ health_score: 100, online: true, last_sync: new Date(ctx.clock.now()).toISOString() });

    await addNotification(ctx, d.device_id, "failed");
    await addNotification(ctx, d.device_id, "delivered");
    health = (await ctx.get(`/v1/api/device/${d.device_id}/health`)).body.data;
    expect(health.health_score).toBe(80);
    expect(health.failure_rate).toBe(0.5);

    ctx.clock.advance(25 * 3600_000);
    health = (await ctx.get(`/v1/api/device/${d.device_id}/health`)).body.data;
    expect(health).toMatchObject({ online: false, health_score: 20 });

    await ctx.sql.run("UPDATE device SET blocked_code = '131042', blocked_reason = 'payment' WHERE id = ?", [d.device_id]);
    expect((await ctx.get(`/v1/api/device/${d.device_id}/health`)).body.data.health_score).toBe(0);
  });

  test("stats count sent (incl. delivered), failed and pending", async () => {
    const ctx = await createTestContext();
    const [d, other] = await register(ctx, [{ name: "A" }, { name: "B" }]);
    for (const s of ["sent", "delivered", "delivered", "failed", "pending", "pending", "pending"] as const)
      await addNotification(ctx, d.device_id, s);
    await addNotification(ctx, other.device_id, "failed");
    const stats = expectEnvelope(await ctx.get(`/v1/api/device/${d.device_id}/stats`), 200).data;
    expect(stats).toEqual({ device_id: d.device_id, sent: 3, failed: 1, pending: 3 });
  });

  test("usage: used this month against the plan's monthly SMS", async () => {
    const ctx = await createTestContext();
    const [d] = await register(ctx, [{ name: "A" }]);
    await addNotification(ctx, d.device_id, "sent");
    await addNotification(ctx, d.device_id, "failed");
    await addNotification(ctx, d.device_id, "sent", Date.UTC(2025, 11, 20));
    let usage = expectEnvelope(await ctx.get(`/v1/api/device/${d.device_id}/usage`), 200).data;
    expect(usage).toMatchObject({ used: 1, limit: -1, remaining: -1, unlimited: true });

    await ctx.services.accounts.setAccountPlan(ctx.account.id, "free");
    usage = (await ctx.get(`/v1/api/device/${d.device_id}/usage`)).body.data;
    expect(usage).toMatchObject({ used: 1, limit: 10, remaining: 9, unlimited: false, period_start: "2026-01-01T00:00:00.000Z" });
  });

  test("rate-limit: the device's per-minute window", async () => {
    const ctx = await createTestContext();
    const [d] = await register(ctx, [{ name: "A", send_limit_per_minute: 5 }]);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 30));
    await ctx.sql.run(
      "INSERT INTO notification (workspace_id, delivery_type, route, device_id, recipient, message, next_attempt_at, created_at, updated_at, dispatched_at) VALUES (?, 'sms', 'sms', ?, '+14155552671', 'x', 0, 0, 0, ?)",
      [ctx.workspace.id, d.device_id, ctx.clock.now() - 5000],
    );
    const rl = expectEnvelope(await ctx.get(`/v1/api/device/${d.device_id}/rate-limit`), 200).data;
    expect(rl).toEqual({
      device_id: d.device_id,
      limit: 5,
      window_seconds: 60,
      requests_remaining: 4,
      reset_at: "2026-01-15T12:01:00.000Z",
    });
  });
});

describe("batch delete and status", () => {
  test("deletes up to 50; deleted devices disappear from every endpoint", async () => {
    const ctx = await createTestContext();
    const [a, b] = await register(ctx, [{ name: "A" }, { name: "B" }]);
    const body = expectEnvelope(await ctx.post("/v1/api/device/batch/delete", { device_ids: [a.device_id] }), 200).data;
    expect(body).toEqual({ deleted: [a.device_id], count: 1 });
    expect((await ctx.get(`/v1/api/device/${a.device_id}`)).status).toBe(404);
    expect((await ctx.get("/v1/api/device/list")).body.data.devices.map((d: { device_id: number }) => d.device_id)).toEqual([b.device_id]);
    expect((await ctx.post("/v1/api/device/batch/delete", { device_ids: [a.device_id] })).status).toBe(404);
  });

  test("51 ids: 400 naming the limit of 50", async () => {
    const ctx = await createTestContext();
    const body = expectEnvelope(
      await ctx.post("/v1/api/device/batch/delete", { device_ids: Array.from({ length: 51 }, (_, i) => i + 1) }),
      400,
    );
    expect(body.data.field).toBe("device_ids");
    expect(body.message).toContain("50");
  });

  test("an unknown id among known ones deletes nothing", async () => {
    const ctx = await createTestContext();
    const [a] = await register(ctx, [{ name: "A" }]);
    const body = expectEnvelope(await ctx.post("/v1/api/device/batch/delete", { device_ids: [a.device_id, 4242] }), 404);
    expect(body.data.not_found).toEqual([4242]);
    expect((await ctx.get(`/v1/api/device/${a.device_id}`)).status).toBe(200);
  });

  test("update-status sets active/inactive; a bad status is 400", async () => {
    const ctx = await createTestContext();
    const [a, b] = await register(ctx, [{ name: "A" }, { name: "B" }]);
    const body = expectEnvelope(
      await ctx.post("/v1/api/device/batch/update-status", { device_ids: [a.device_id, b.device_id], status: "inactive" }),
      200,
    ).data;
    expect(body.count).toBe(2);
    expect(body.devices.every((d: { status: string }) => d.status === "inactive")).toBe(true);
    const bad = expectEnvelope(await ctx.post("/v1/api/device/batch/update-status", { device_ids: [a.device_id], status: "paused" }), 400);
    expect(bad.data.field).toBe("status");
    expect(
      expectEnvelope(await ctx.post("/v1/api/device/batch/update-status", { device_ids: ["x"], status: "active" }), 400).data.field,
    ).toBe("device_ids.0");
  });
});

describe("device export", () => {
  test("csv: header row, one line per device, download filename; inactive left out by default", async () => {
    const ctx = await createTestContext();
    const [a] = await register(ctx, [{ name: "Front, desk" }, { name: "=HYPERLINK(1)" }, { name: "Old" }]);
    const all = (await ctx.get("/v1/api/device/list")).body.data.devices;
    await ctx.post("/v1/api/device/batch/update-status", { device_ids: [all[2].device_id], status: "inactive" });

    const r = await ctx.get("/v1/api/device/export", { query: { format: "csv" } });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/csv");
    expect(r.headers.get("content-disposition")).toMatch(/^attachment; filename="devices-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = r.text.trim().split("\n");
    expect(lines[0]).toStartWith("device_id,name,kind,status");
    expect(lines).toHaveLength(3);
    expect(lines[1]).toStartWith(`${a.device_id},"Front, desk",sms,active`);
    expect(lines[2]).toContain("'=HYPERLINK(1)");

    const withInactive = await ctx.get("/v1/api/device/export", { query: { format: "csv", include_inactive: true } });
    expect(withInactive.text.trim().split("\n")).toHaveLength(4);
  });

  test("json is the default, in the envelope, with a filename", async () => {
    const ctx = await createTestContext();
    await register(ctx, [{ name: "A" }]);
    const r = await ctx.get("/v1/api/device/export");
    expect(r.headers.get("content-disposition")).toContain(".json");
    const body = expectEnvelope(r, 200).data;
    expect(body.count).toBe(1);
    expect(body.devices[0].name).toBe("A");
  });

  test("bad format or include_inactive: 400", async () => {
    const ctx = await createTestContext();
    expect(expectEnvelope(await ctx.get("/v1/api/device/export", { query: { format: "xml" } }), 400).data.field).toBe("format");
    expect(expectEnvelope(await ctx.get("/v1/api/device/export", { query: { include_inactive: "maybe" } }), 400).data.field).toBe(
      "include_inactive",
    );
  });
});
