// Spec section 8: 60 requests a minute and 10,000 a day per key by default, set per plan.
import { afterEach, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { ManualClock } from "../../src/clock";
import { createRateLimiter } from "../../src/http/rate-limit";
import { createTestContext, expectEnvelope } from "../helpers/context";

describe("rate limits", () => {
  test("the 61st request in a minute is 429 with Retry-After and X-RateLimit headers; open again once the first requests are a minute old", async () => {
    const ctx = await createTestContext();
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
    // A sliding minute: the calendar minute ending at 12:01:00 no longer opens the gate; the 60
    // requests of 12:00:10 leave the window a minute later (counted in whole seconds, so 61 s).
    expect(r.headers.get("retry-after")).toBe("61");
    expect(r.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(r.headers.get("x-ratelimit-reset")).toBe(String(Date.UTC(2026, 0, 15, 12, 1, 11) / 1000));

    ctx.clock.advance(50_000);
    expect((await ctx.get("/v1/api/project/list")).status).toBe(429);
    ctx.clock.advance(11_000);
    expect((await ctx.get("/v1/api/project/list")).status).toBe(200);
  });

  test("limits are per key", async () => {
    const ctx = await createTestContext();
    await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 2 });
    const second = await ctx.services.accounts.createKey("second");
    await ctx.get("/v1/api/project/list");
    await ctx.get("/v1/api/project/list");
    expect((await ctx.get("/v1/api/project/list")).status).toBe(429);
    expect((await ctx.get("/v1/api/project/list", { key: second })).status).toBe(200);
  });

  test("the daily limit answers 429 until the next UTC day", async () => {
    const ctx = await createTestContext();
    await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100, requestsPerDay: 3 });
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
    const ctx = await createTestContext();
    await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 1 });
    await ctx.get("/v1/api/project/list", { key: { ...ctx.key, api_secret: "wrong" } });
    expect((await ctx.get("/v1/api/project/list")).status).toBe(200);
  });

  test("server-info reports the limits in force", async () => {
    const ctx = await createTestContext();
    const data = expectEnvelope(await ctx.get("/v1/api/server-info"), 200).data;
    expect(data.sms_length_cap).toBe(1600);
    expect(data.limits).toMatchObject({
      requests_per_minute: 60,
      requests_per_day: 10000,
      page_size_max: 100,
      batch_register_max: 10,
      batch_delete_max: 50,
    });
    expect(data.rate_limit.requests_remaining).toBe(59);
  });
});

describe("the minute is sliding", () => {
  test("a full allowance just before a minute boundary leaves nothing just after it", async () => {
    const ctx = await createTestContext();
    await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 60 });
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 59, 500));
    for (let i = 0; i < 60; i++) expect((await ctx.get("/v1/api/project/list")).status).toBe(200);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 1, 0, 500));
    let through = 0;
    for (let i = 0; i < 60; i++) if ((await ctx.get("/v1/api/project/list")).status === 200) through++;
    expect(through).toBe(0);
    // The Retry-After it gives is true: one second earlier it is still closed, then it opens.
    const r = await ctx.get("/v1/api/project/list");
    const wait = Number(r.headers.get("retry-after"));
    ctx.clock.advance(wait * 1000 - 1000);
    expect((await ctx.get("/v1/api/project/list")).status).toBe(429);
    ctx.clock.advance(1000);
    expect((await ctx.get("/v1/api/project/list")).status).toBe(200);
  });

  test("no 60-second span ever holds more than the limit, whatever the timing (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 0, max: 59_999 }),
        fc.array(fc.integer({ min: 0, max: 4000 }), { minLength: 20, maxLength: 200 }),
        (limit, offset, gaps) => {
          const clock = new ManualClock(Date.UTC(2026, 0, 15, 12, 0, 0) + offset);
          const limiter = createRateLimiter(clock);
          const admitted: number[] = [];
          for (const gap of gaps) {
            clock.advance(gap);
            try {
              limiter.hit(1, limit, 1_000_000);
              admitted.push(clock.now());
            } catch {
              /* refused */
            }
          }
          for (const t of admitted) {
            const inSpan = admitted.filter((u) => u > t - 60_000 && u <= t).length;
            if (inSpan > limit) return false;
          }
          return true;
        },
      ),
      { numRuns: 300 },
    );
  });

  test("remaining and reset headers tell the truth: reset is when the allowance grows again", async () => {
    const ctx = await createTestContext();
    await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 3 });
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 0));
    await ctx.get("/v1/api/project/list");
    ctx.clock.advance(20_000);
    await ctx.get("/v1/api/project/list");
    const third = await ctx.get("/v1/api/project/list");
    expect(third.headers.get("x-ratelimit-remaining")).toBe("0");
    const reset = Number(third.headers.get("x-ratelimit-reset")) * 1000;
    ctx.clock.set(reset - 1000);
    expect((await ctx.get("/v1/api/project/list")).status).toBe(429);
    ctx.clock.set(reset);
    const after = await ctx.get("/v1/api/project/list");
    expect(after.status).toBe(200);
  });
});

describe("failed authentications are throttled per client address", () => {
  let stopServer: (() => unknown) | null = null;
  afterEach(() => {
    void stopServer?.();
    stopServer = null;
  });

  test("the 21st wrong secret in a minute from one address is 429 before the secret is checked; another address still gets in", async () => {
    const ctx = await createTestContext();
    // Over real sockets: 127.0.0.1 and ::1 are two client addresses on one dual-stack listener.
    ctx.app.listen({ port: 0, hostname: "::" });
    stopServer = () => ctx.app.stop(true);
    const port = ctx.app.server!.port;
    const call = (host: string, secret: string) =>
      fetch(`http://${host}:${port}/v1/api/project/list`, {
        headers: { authorization: `Bearer ${ctx.key.api_key}`, "x-api-secret": secret },
      });

    for (let i = 0; i < 20; i++) expect((await call("127.0.0.1", `wrong-${i}`)).status).toBe(401);
    const blocked = await call("127.0.0.1", "wrong-again");
    expect(blocked.status).toBe(429);
    const body = (await blocked.json()) as { status_id: number; data: { error_code: string } };
    expect(body.status_id).toBe(429);
    expect(body.data.error_code).toBe("rate_limited");
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    // Before checking: even the right secret is not tried from that address now.
    expect((await call("127.0.0.1", ctx.key.api_secret)).status).toBe(429);
    expect((await call("[::1]", ctx.key.api_secret)).status).toBe(200);

    ctx.clock.advance(61_000);
    expect((await call("127.0.0.1", ctx.key.api_secret)).status).toBe(200);
  });

  test("a minute of failures spread out is still counted; success does not reset it", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 15, 12, 0, 59));
    const limiter = createRateLimiter(clock);
    for (let i = 0; i < 20; i++) {
      limiter.checkAuthFailures("203.0.113.9");
      limiter.recordAuthFailure("203.0.113.9");
      clock.advance(2000); // 20 failures across a minute boundary
    }
    expect(() => limiter.checkAuthFailures("203.0.113.9")).toThrow(/Too many failed/);
    expect(() => limiter.checkAuthFailures("198.51.100.1")).not.toThrow();
  });

  test("memory stays bounded however many addresses fail", () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 15, 12, 0, 0));
    const limiter = createRateLimiter(clock);
    for (let i = 0; i < 25_000; i++) limiter.recordAuthFailure(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    expect(limiter.trackedAddresses()).toBeLessThanOrEqual(10_000);
    clock.advance(120_000);
    limiter.recordAuthFailure("192.0.2.1");
    expect(limiter.trackedAddresses()).toBeLessThanOrEqual(10_000);
  });
});

describe("guessing a phone's one-time code or password", () => {
  test("after 20 wrong codes from one address, registration answers 429 without trying the code", async () => {
    const ctx = await createTestContext();
    const register = (auth: string) =>
      ctx.app.handle(
        new Request("http://localhost/mobile/v1/device", {
          method: "POST",
          headers: { authorization: auth, "content-type": "application/json" },
          body: JSON.stringify({ name: "Guesser" }),
        }),
      );
    const token = expectEnvelope(await ctx.get("/v1/api/device/pairing"), 200).data.pairing_token;
    for (let i = 0; i < 20; i++) expect((await register(`Code ${String(100000 + i)}`)).status).toBe(401);
    const blocked = await register("Code 999999");
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await blocked.json()) as { data: { error_code: string } }).data.error_code).toBe("rate_limited");
    // Even the right pairing token waits: nothing is tried from that address for now.
    expect((await register(`Bearer ${token}`)).status).toBe(429);
    ctx.clock.advance(61_000);
    expect((await register(`Bearer ${token}`)).status).toBe(201);
  });
});
