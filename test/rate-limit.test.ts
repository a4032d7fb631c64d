// Spec section 8: 60 requests a minute and 10,000 a day per key by default, set per plan.
import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope } from "./helpers/context";

describe("rate limits", () => {
  test("the 61st request in a minute is 429 with Retry-After and X-RateLimit headers; the next minute is open", async () => {
    const ctx = createTestContext();
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 10));
    for (let i = 1; i <= 60; i++) {
      const r = await ctx.get("/v1/api/project/list");
      expect(r.status).toBe(200);
      expect(r.headers.get("x-ratelimit-limit")).toBe("60");
      expect(r.headers.get("x-ratelimit-remaining")).toBe(String(60 - i));
    }
    const r = await ctx.get("/v1/api/project/list");
    const body = expectEnvelope(r, 429);
    expect(body.data.error_code).toBe("rate_limited");
    expect(r.headers.get("retry-after")).toBe("50");
    expect(r.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(r.headers.get("x-ratelimit-reset")).toBe(String(Date.UTC(2026, 0, 15, 12, 1, 0) / 1000));

    ctx.clock.advance(50_000);
    expect((await ctx.get("/v1/api/project/list")).status).toBe(200);
  });

  test("limits are per key", async () => {
    const ctx = createTestContext();
    ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 2 });
    const second = ctx.services.accounts.createKey("second");
    await ctx.get("/v1/api/project/list");
    await ctx.get("/v1/api/project/list");
    expect((await ctx.get("/v1/api/project/list")).status).toBe(429);
    expect((await ctx.get("/v1/api/project/list", { key: second })).status).toBe(200);
  });

  test("the daily limit answers 429 until the next UTC day", async () => {
    const ctx = createTestContext();
    ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100, requestsPerDay: 3 });
    ctx.clock.set(Date.UTC(2026, 0, 15, 23, 0, 0));
    for (let i = 0; i < 3; i++) {
      expect((await ctx.get("/v1/api/project/list")).status).toBe(200);
      ctx.clock.advance(61_000);
    }
    const r = await ctx.get("/v1/api/project/list");
    expect(expectEnvelope(r, 429).data.limit).toBe(3);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(3000);
    ctx.clock.set(Date.UTC(2026, 0, 16, 0, 0, 1));
    expect((await ctx.get("/v1/api/project/list")).status).toBe(200);
  });

  test("unauthenticated requests do not consume a key's allowance", async () => {
    const ctx = createTestContext();
    ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 1 });
    await ctx.get("/v1/api/project/list", { key: { ...ctx.key, api_secret: "wrong" } });
    expect((await ctx.get("/v1/api/project/list")).status).toBe(200);
  });

  test("server-info reports the limits in force", async () => {
    const ctx = createTestContext();
    const data = expectEnvelope(await ctx.get("/v1/api/server-info"), 200).data;
    expect(data.sms_length_cap).toBe(1600);
    expect(data.limits).toMatchObject({ requests_per_minute: 60, requests_per_day: 10000, page_size_max: 100, batch_register_max: 10, batch_delete_max: 50 });
    expect(data.rate_limit.requests_remaining).toBe(59);
  });
});
