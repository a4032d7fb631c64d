// SSRF probes from outside: every spelling of a loopback, link-local or private address, and every
// IPv6 form that carries an IPv4 address, is refused for webhooks and for a cloud number's
// base_url, and a refused target is never called — a real loopback server counts the requests.
import { afterEach, describe, expect, test } from "bun:test";
import { lookup } from "node:dns/promises";
import { mkdtempSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { checkOutboundTarget, isPrivateAddress } from "../../src/lib/net-safety";
import { createWebhookService } from "../../src/modules/webhooks/service";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { RECIPIENT, CLOUD_NUMBER } from "../helpers/numbers";

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
  return { port: server.port!, hits: () => hits, stop: () => server.stop(true) };
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
    const ctx = await createTestContext({ config: { allowPrivateWebhooks: false } });
    const body = expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: fill(url, 9), events: "*" }), 400);
    expect(body.data.error_code).toBe("invalid_webhook_url");
    expect(await ctx.get("/v1/api/webhook/list").then((r) => r.body.data.webhooks)).toHaveLength(0);
  });

  test("a hostname that resolves to loopback is refused", async () => {
    const name = hostname();
    const resolved = await lookup(name)
      .then((a) => a.address)
      .catch(() => null);
    if (!resolved || !isPrivateAddress(resolved)) return; // this machine's name is public: nothing to probe
    const ctx = await createTestContext({ config: { allowPrivateWebhooks: false } });
    const body = expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: `http://${name}:9/x`, events: "*" }), 400);
    expect(body.data.error_code).toBe("invalid_webhook_url");
  });

  test.each(REACHES_LOOPBACK)("webhook/test to a stored %s never reaches the loopback service", async (url) => {
    service = startLoopbackService();
    const ctx = await createTestContext({ config: { allowPrivateWebhooks: false } });
    // A subscription saved before the guard knew this form (or by a server that allowed it).
    const now = Date.now();
    const id = (await ctx.sql.get(
      "INSERT INTO webhook_subscription (workspace_id, url, events, description, secret, status, created_at, updated_at) VALUES (?, ?, '[\"*\"]', '', 'whsec_x', 'active', ?, ?) RETURNING id",
      [ctx.workspace.id, fill(url, service.port), now, now],
    )) as { id: number };
    const reply = await ctx.post("/v1/api/webhook/test", { webhook_id: id.id });
    expect(reply.status).toBeLessThan(500);
    expect(reply.text).not.toContain(SECRET_BODY);
    expect(reply.body.data.delivered).toBe(false);
    expect(reply.body.data.error).toContain("target refused");
    expect(service.hits()).toBe(0);
  });
});

/** A cloud number's provider settings pointing at `base_url`. */
const cloudDevice = (base_url: string) => ({
  devices: [{ name: "Cloud", kind: "cloud", cloud: { account_sid: "AC123", auth_token: "tok", from_number: CLOUD_NUMBER, base_url } }],
});

describe("a cloud number's base_url", () => {
  const REFUSED = [
    "http://127.0.0.1:PORT",
    "http://169.254.169.254",
    "http://[::ffff:127.0.0.1]:PORT",
    "http://[::ffff:a9fe:a9fe]",
    "http://localhost:PORT",
    "http://10.0.0.8",
    "http://2130706433:PORT",
    "http://[64:ff9b::7f00:1]",
    "http://[fd00::5]",
  ];

  test.each(REFUSED)("%s is refused at registration without PIGEON_ALLOW_PRIVATE_WEBHOOKS", async (url) => {
    const ctx = await createTestContext({ config: { allowPrivateWebhooks: false } });
    const body = expectEnvelope(await ctx.post("/v1/api/device/batch/register", cloudDevice(fill(url, 9))), 400);
    expect(body.data.error_code).toBe("validation_error");
    expect(body.data.field).toBe("devices.0.cloud.base_url");
    expect(expectEnvelope(await ctx.get("/v1/api/device/list"), 200).data.devices).toHaveLength(0);
  });

  test.each(REFUSED)("%s is accepted with PIGEON_ALLOW_PRIVATE_WEBHOOKS=1", async (url) => {
    const ctx = await createTestContext({ config: { allowPrivateWebhooks: true } });
    expectEnvelope(await ctx.post("/v1/api/device/batch/register", cloudDevice(fill(url, 9))), 200);
  });

  test("a public base_url is accepted without the flag", async () => {
    const ctx = await createTestContext({ config: { allowPrivateWebhooks: false } });
    expectEnvelope(await ctx.post("/v1/api/device/batch/register", cloudDevice("https://[2606:4700:4700::1111]")), 200);
  });

  test("checked again at send time: a stored loopback base_url is never called", async () => {
    service = startLoopbackService();
    const dbPath = join(mkdtempSync(join(tmpdir(), "pigeon-ssrf-")), "pigeon.db");
    const lax = await createTestContext({ dbPath, config: { allowPrivateWebhooks: true } });
    expectEnvelope(await lax.post("/v1/api/device/batch/register", cloudDevice(`http://127.0.0.1:${service.port}`)), 200);
    lax.db!.$client.close();

    const ctx = await createTestContext({ dbPath, config: { allowPrivateWebhooks: false } });
    await ctx.topUp(10);
    const id = expectEnvelope(await ctx.post("/v1/notification/sms/api/send", { recipient_contact: RECIPIENT, message: "hi" }), 200).data
      .notification_id;
    await ctx.services.dispatcher.dispatchDue();
    expect(service.hits()).toBe(0);
    const n = expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data;
    expect(n.status).toBe("failed");
    expect(n.error_code).toBe("provider_url_refused");
  });
});

describe("a provider's error answer in error_reason", () => {
  async function failWith(status: number, body: string, contentType: string) {
    const provider = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => new Response(body, { status, headers: { "content-type": contentType } }),
    });
    try {
      const ctx = await createTestContext();
      await ctx.topUp(10);
      expectEnvelope(await ctx.post("/v1/api/device/batch/register", cloudDevice(`http://127.0.0.1:${provider.port}`)), 200);
      const id = expectEnvelope(await ctx.post("/v1/notification/sms/api/send", { recipient_contact: RECIPIENT, message: "hi" }), 200).data
        .notification_id;
      await ctx.services.dispatcher.dispatchDue();
      const reply = await ctx.get(`/v1/api/notification/${id}`);
      return { text: reply.text, n: expectEnvelope(reply, 200).data };
    } finally {
      provider.stop(true);
    }
  }

  test.each([400, 500])("an HTML page answered with %d is not echoed", async (status) => {
    const { text, n } = await failWith(status, `<!doctype html><html><body><h1>Admin</h1>${SECRET_BODY}</body></html>`, "text/html");
    expect(text).not.toContain(SECRET_BODY);
    expect(text).not.toContain("<html");
    if (n.error_reason) expect(n.error_reason.length).toBeLessThanOrEqual(220);
  });

  test("a long JSON message with control characters is cut and flattened", async () => {
    const message = `Invalid 'To'\u0000\r\n\u001b[31m ${"x".repeat(5000)}`;
    const { n } = await failWith(400, JSON.stringify({ code: 21211, message, status: 400 }), "application/json");
    expect(n.status).toBe("failed");
    expect(n.error_reason).toContain("Invalid 'To'");
    expect(n.error_reason.length).toBeLessThanOrEqual(220);
    // biome-ignore lint: control characters are what is being checked
    expect(/[\u0000-\u001f\u007f]/.test(n.error_reason)).toBe(false);
  });
});

describe("DNS rebinding: the call goes to the address that was checked", () => {
  test("a checked name is called at its checked address, with its own Host and TLS server name", async () => {
    const r = await checkOutboundTarget("https://hooks.example.com:8443/in?x=1", false, async () => [
      "93.184.216.34",
      "2606:2800:220:1::1",
    ]);
    expect(r.problem).toBeNull();
    expect(r.target).toEqual({
      url: "https://93.184.216.34:8443/in?x=1",
      headers: { host: "hooks.example.com:8443" },
      tls: { serverName: "hooks.example.com" },
    });
    const v6 = await checkOutboundTarget("http://hooks.example.com/in", false, async () => ["2606:2800:220:1::1"]);
    expect(v6.target?.url).toBe("http://[2606:2800:220:1::1]/in");
  });

  test("a name with any private address among its answers is refused", async () => {
    const r = await checkOutboundTarget("http://hooks.example.com/in", false, async () => ["93.184.216.34", "::ffff:127.0.0.1"]);
    expect(r.problem).toContain("private or local");
  });

  test("a webhook whose name turns to loopback between check and call is never called at a name it would re-resolve", async () => {
    const ctx = await createTestContext({ config: { allowPrivateWebhooks: false } });
    // Public on every odd lookup, loopback on every even one: the classic rebinding server.
    let lookups = 0;
    const rebinding = async () => (++lookups % 2 === 1 ? ["93.184.216.34"] : ["127.0.0.1"]);
    const called: { url: string; host: string | null }[] = [];
    const spy = (async (input: string | URL | Request, init?: RequestInit) => {
      called.push({ url: String(input), host: new Headers(init?.headers).get("host") });
      return new Response("ok");
    }) as typeof fetch;
    const webhooks = createWebhookService({
      storage: ctx.services.storage,
      clock: ctx.clock,
      events: ctx.services.events,
      secrets: ctx.services.secrets,
      cluster: ctx.services.cluster,
      allowPrivate: false,
      fetch: spy,
      resolve: rebinding,
      log: () => {},
    });
    const w = await webhooks.create(ctx.workspace.id, { url: "http://hooks.example.com/in", events: "*" }); // lookup 1: public
    lookups = 0; // the delivery's check sees the public answer; a second lookup would see loopback
    const result = await webhooks.test(ctx.workspace.id, w.webhook_id);
    expect(result.delivered).toBe(true);
    expect(called).toEqual([{ url: "http://93.184.216.34/in", host: "hooks.example.com" }]);
    expect(lookups).toBe(1);
  });
});
