// Every route, fed bodies and parameters of the wrong shape, answers 4xx in the envelope with a
// machine-readable error_code: never a 500, never a stack trace.
import { describe, expect, test } from "bun:test";
import { createTestContext } from "../helpers/context";

const ctx = await createTestContext();
// Hundreds of requests from one key: lift its rate limit so each reaches its route's checks.
await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 1_000_000, requestsPerDay: 10_000_000 });
const spec = (await ctx.get("/openapi.json", { key: null })).body;
// Twilio's APIs: the Messages API under /2010-04-01, Verify under /v2/Services.
const isTwilioApi = (path: string) => path.startsWith("/2010-04-01/") || path.startsWith("/v2/Services");
// Twilio's paths name the workspace's own account, so the calls get past the account check.
const twilio = await ctx.services.twilio.credentials(ctx.workspace.id);
const routes: [string, string][] = Object.entries(spec.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) =>
  Object.keys(methods).map(
    (m) => [m.toUpperCase(), path.replace("{AccountSid}", twilio.account_sid).replace(/\{[^}]+\}/g, "1")] as [string, string],
  ),
);
// The phone routes get a token that matches no phone; SMSGate's routes the key and secret as Basic, as its clients send them.
const headersFor = (path: string): Record<string, string> =>
  path.startsWith("/mobile/")
    ? { authorization: "Bearer nobody" }
    : path.includes("/3rdparty/v1/")
      ? { authorization: `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}` }
      : isTwilioApi(path)
        ? { authorization: `Basic ${btoa(`${twilio.account_sid}:${twilio.auth_token}`)}` }
        : {};
const BODIES = [
  "null",
  "[]",
  '"text"',
  "123",
  "{}",
  '{"unexpected": {"deeply": [1, 2, {"x": null}]}}',
  "{",
  "\u0000\u0001",
  '{"recipient_contact": [], "message": {}}',
];

describe("wrong shapes never reach a 500", () => {
  test.each(routes.filter(([m]) => m !== "GET"))("%s %s", async (method, path) => {
    for (const raw of BODIES) {
      const r = await ctx.call(method, path, { raw, headers: headersFor(path) });
      expect(r.status).toBeGreaterThanOrEqual(200);
      expect(r.status).toBeLessThan(500);
      expect(r.status).not.toBe(429);
      if (r.status >= 400) {
        // Twilio's API answers with Twilio's numeric code; the others with Pigeon's error_code.
        const code = isTwilioApi(path) ? (typeof r.body?.code === "number" ? r.body.code : undefined) : r.body?.data?.error_code;
        expect(code).toBeDefined();
        expect(r.text).not.toContain("    at ");
      }
    }
  });

  test.each(routes.filter(([m, p]) => m === "GET" && !p.includes("events")))("%s %s with odd query values", async (method, path) => {
    for (const query of [
      "page=-1",
      "limit=abc",
      "status=%00",
      "from=2026-13-45",
      "format=../../etc",
      "period=century",
      "unread=yes-please",
      "channel[]=sms",
    ]) {
      const r = await ctx.call(method, `${path}?${query}`, { headers: headersFor(path) });
      expect(r.status).toBeLessThan(500);
    }
  });
});
