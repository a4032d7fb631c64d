// SSRF probes from outside: every spelling of a loopback, link-local or private address, and every
// IPv6 form that carries an IPv4 address, is refused for webhooks and for a cloud number's
// base_url, and a refused target is never called — a real loopback server counts the requests.
import { afterEach, describe, expect, test } from "bun:test";
import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { isPrivateAddress } from "../src/lib/net-safety";
import { createTestContext, expectEnvelope } from "./helpers/context";

/** What nobody outside the server may ever read. */
const SECRET_BODY = "internal-admin-panel-7f3a9c";

function startLoopbackService() {
  let hits = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch() {
      hits++;
      return new Response(`<html><body>${SECRET_BODY}</body></html>`, { status: 500, headers: { "content-type": "text/html" } });
    },
  });
  return { port: server.port, hits: () => hits, stop: () => server.stop(true) };
}

let service: ReturnType<typeof startLoopbackService> | null = null;
afterEach(() => {
  service?.stop();
  service = null;
});

/** Targets that reach the loopback service when nothing stops them (PORT is filled in). */
const REACHES_LOOPBACK = [
  "http://[::ffff:127.0.0.1]:PORT/hook",
  "http://[::ffff:7f00:1]:PORT/hook",
  "http://2130706433:PORT/hook",
  "http://0x7f.1:PORT/hook",
  "http://017700000001:PORT/hook",
  "http://127.1:PORT/hook",
];

/** Private or special targets in forms that slipped past the old textual checks. */
const PRIVATE_FORMS = [
  ...REACHES_LOOPBACK,
  "http://[::ffff:a9fe:a9fe]/latest/meta-data",
  "http://[::ffff:169.254.169.254]/latest/meta-data",
  "http://[::ffff:10.0.0.1]/x",
  "http://[64:ff9b::7f00:1]/x",
  "http://[64:ff9b::a9fe:a9fe]/x",
  "http://[::127.0.0.1]/x",
  "http://[fec0::1]/x",
  "http://[2002:7f00:1::]/x",
  "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x",
  "http://[::ffff:0:7f00:1]/x",
  "http://0/x",
  "http://0x0a.0.0.1/x",
  "http://[::]/x",
  "http://localhost.:PORT/x",
];

const fill = (url: string, port: number) => url.replace("PORT", String(port));

describe("address classification", () => {
  test.each([
    ["127.0.0.1", true],
    ["::ffff:7f00:1", true],
    ["::ffff:127.0.0.1", true],
    ["64:ff9b::a00:1", true],
    ["::7f00:1", true],
    ["fec0::1", true],
    ["ff02::1", true],
    ["8.8.8.8", false],
    ["::ffff:8.8.8.8", false],
    ["64:ff9b::808:808", false],
    ["2606:4700:4700::1111", false],
    ["not-an-address", true],
  ] as const)("%s private: %p", (ip, expected) => {
    expect(isPrivateAddress(ip)).toBe(expected);
  });
});

describe("webhook targets", () => {
  test.each(PRIVATE_FORMS)("%s is refused at creation with invalid_webhook_url", async (url) => {
    const ctx = createTestContext({ config: { allowPrivateWebhooks: false } });
    const body = expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: fill(url, 9), events: "*" }), 400);
    expect(body.data.error_code).toBe("invalid_webhook_url");
    expect(await ctx.get("/v1/api/webhook/list").then((r) => r.body.data.webhooks)).toHaveLength(0);
  });

  test("a hostname that resolves to loopback is refused", async () => {
    const name = hostname();
    const resolved = await lookup(name).then((a) => a.address).catch(() => null);
    if (!resolved || !isPrivateAddress(resolved)) return; // this machine's name is public: nothing to probe
    const ctx = createTestContext({ config: { allowPrivateWebhooks: false } });
    const body = expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: `http://${name}:9/x`, events: "*" }), 400);
    expect(body.data.error_code).toBe("invalid_webhook_url");
  });

  test.each(REACHES_LOOPBACK)("webhook/test to a stored %s never reaches the loopback service", async (url) => {
    service = startLoopbackService();
    const ctx = createTestContext({ config: { allowPrivateWebhooks: false } });
    // A subscription saved before the guard knew this form (or by a server that allowed it).
    const now = Date.now();
    const id = ctx.db.$client
      .prepare(
        "INSERT INTO webhook_subscription (workspace_id, url, events, description, secret, status, created_at, updated_at) VALUES (?, ?, '[\"*\"]', '', 'whsec_x', 'active', ?, ?) RETURNING id",
      )
      .get(ctx.workspace.id, fill(url, service.port), now, now) as { id: number };
    const reply = await ctx.post("/v1/api/webhook/test", { webhook_id: id.id });
    expect(reply.status).toBeLessThan(500);
    expect(reply.text).not.toContain(SECRET_BODY);
    expect(reply.body.data.delivered).toBe(false);
    expect(reply.body.data.error).toContain("target refused");
    expect(service.hits()).toBe(0);
  });
});
