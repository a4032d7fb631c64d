// GET /metrics in process, on each back end: every series moves by the right amount when its action
// happens (a request, a send, a dispatch, a status report, a device going quiet, a webhook
// delivery), and the page is refused, as a path no route serves is, to callers without the right.
import { afterEach, describe, expect, test } from "bun:test";
import { loadConfig, ConfigError } from "../../src/config";
import { escapeLabel, Histogram, Page } from "../../src/modules/metrics/exposition";
import { mayScrape } from "../../src/modules/metrics/routes";
import { MAX_DELIVERY_ATTEMPTS } from "../../src/modules/webhooks/service";
import { VERSION } from "../../src/version";
import { smsSender } from "../helpers/api";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { RECIPIENT } from "../helpers/numbers";

const TOKEN = "metrics-token-0123456789";
const BEARER = { authorization: `Bearer ${TOKEN}` };
const send = smsSender({ recipient_contact: RECIPIENT, message: "Your table is ready" });

let fake: FakeCloud | null = null;
let receiver: Receiver | null = null;
afterEach(() => {
  fake?.stop();
  fake = null;
  void receiver?.stop();
  receiver = null;
});

/** One sample's key: its name and its labels in name order, as `name{a="1",b="2"}`. */
function keyOf(name: string, labels: Record<string, string> = {}): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${escapeLabel(labels[k])}"`);
  return parts.length ? `${name}{${parts.join(",")}}` : name;
}

/** A page's samples by key (labels in name order). */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    const key = keyOf(m[1], Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, v.replace(/\\(.)/g, "$1")])));
    expect(samples.has(key)).toBe(false);
    samples.set(key, m[3] === "+Inf" ? Number.POSITIVE_INFINITY : Number(m[3]));
  }
  return samples;
}

async function scrape(ctx: TestContext) {
  // The request-finished hook runs once the answer is out: let the requests before this one land.
  await Bun.sleep(5);
  const r = await ctx.get("/metrics", { key: null, headers: BEARER });
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  const samples = parse(r.text);
  return {
    text: r.text,
    samples,
    /** A sample's value; 0 for one not on the page. */
    value: (name: string, labels: Record<string, string> = {}) => samples.get(keyOf(name, labels)) ?? 0,
    has: (name: string, labels: Record<string, string> = {}) => samples.has(keyOf(name, labels)),
  };
}
type Scrape = Awaited<ReturnType<typeof scrape>>;

/** How much each of `series` moved between two scrapes. */
function moved(before: Scrape, after: Scrape, series: [string, Record<string, string>?][]): number[] {
  return series.map(([name, labels]) => after.value(name, labels) - before.value(name, labels));
}

const metricsContext = () => createTestContext({ config: { metricsToken: TOKEN } });

describe("the page", () => {
  test("build info, the process series, and a well-formed histogram", async () => {
    const ctx = await metricsContext();
    const first = await scrape(ctx);
    expect(first.value("pigeon_build_info", { version: VERSION })).toBe(1);
    const rss = first.value("process_resident_memory_bytes");
    expect(rss).toBeGreaterThan(10 * 1024 * 1024);
    expect(rss).toBeLessThan(16 * 1024 ** 3);
    const started = first.value("process_start_time_seconds");
    expect(Math.abs(started - (Date.now() / 1000 - process.uptime()))).toBeLessThan(2);
    const cpu = first.value("process_cpu_seconds_total");
    expect(cpu).toBeGreaterThan(0);
    // CPU time only grows; burn some and it shows.
    const until = performance.now() + 100;
    while (performance.now() < until);
    expect((await scrape(ctx)).value("process_cpu_seconds_total")).toBeGreaterThan(cpu + 0.02);
    // No scheduled backups here (no PIGEON_BACKUP_DIR): the series is left out.
    expect(first.text).not.toContain("pigeon_backup_last_success_timestamp_seconds");
    // Every family says what it is once, before its samples.
    for (const name of ["pigeon_http_requests_total", "pigeon_queue_depth", "process_cpu_seconds_total"]) {
      expect(first.text.split(`# TYPE ${name} `)).toHaveLength(2);
      expect(first.text.split(`# HELP ${name} `)).toHaveLength(2);
    }
  });

  test("the format: escaped label values, cumulative buckets ending in +Inf, then _sum and _count", () => {
    const h = new Histogram([0.1, 1]);
    for (const v of [0.05, 0.1, 0.5, 3]) h.observe(v);
    const text = new Page()
      .family("x_seconds", "histogram", "A help\\text\nover two lines.")
      .histogram("x_seconds", { route: 'a"b\\c\nd' }, h)
      .text();
    expect(text).toBe(
      [
        "# HELP x_seconds A help\\\\text\\nover two lines.",
        "# TYPE x_seconds histogram",
        'x_seconds_bucket{route="a\\"b\\\\c\\nd",le="0.1"} 2',
        'x_seconds_bucket{route="a\\"b\\\\c\\nd",le="1"} 3',
        'x_seconds_bucket{route="a\\"b\\\\c\\nd",le="+Inf"} 4',
        'x_seconds_sum{route="a\\"b\\\\c\\nd"} 3.65',
        'x_seconds_count{route="a\\"b\\\\c\\nd"} 4',
        "",
      ].join("\n"),
    );
  });
});

describe("HTTP requests", () => {
  test("counted by method, route pattern and status, never by raw path; timed by route", async () => {
    const ctx = await metricsContext();
    await ctx.phone();
    const id = await send(ctx);
    const route = "/v1/api/notification/:notification_id";
    const before = await scrape(ctx);
    expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200);
    expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200);
    expectEnvelope(await ctx.get("/v1/api/notification/987654"), 404);
    for (const path of ["/no/such/place/1", "/no/such/place/2", "/no/such/place/3"]) expect((await ctx.get(path)).status).toBe(404);
    await send(ctx);
    const after = await scrape(ctx);
    expect(
      moved(before, after, [
        ["pigeon_http_requests_total", { method: "GET", route, status: "200" }],
        ["pigeon_http_requests_total", { method: "GET", route, status: "404" }],
        ["pigeon_http_requests_total", { method: "GET", route: "unmatched", status: "404" }],
        ["pigeon_http_requests_total", { method: "POST", route: "/v1/notification/sms/api/send", status: "200" }],
        ["pigeon_http_request_duration_seconds_count", { route }],
        ["pigeon_http_request_duration_seconds_bucket", { route, le: "+Inf" }],
        // The scrape before this one is counted too.
        ["pigeon_http_requests_total", { method: "GET", route: "/metrics", status: "200" }],
      ]),
    ).toEqual([2, 1, 3, 1, 3, 3, 1]);
    expect(after.value("pigeon_http_request_duration_seconds_sum", { route })).toBeGreaterThan(
      before.value("pigeon_http_request_duration_seconds_sum", { route }),
    );
    // No label anywhere holds an id or a path no route has.
    expect(after.text).not.toContain(`/notification/${id}"`);
    expect(after.text).not.toContain("987654");
    expect(after.text).not.toContain("/no/such/place");
  });

  test("an unusual method is 'other', so callers cannot add series", async () => {
    const ctx = await metricsContext();
    const before = await scrape(ctx);
    for (const method of ["PROPFIND", "MKCOL"]) await ctx.app.handle(new Request("http://localhost/health", { method }));
    const after = await scrape(ctx);
    const methods = new Set([...after.samples.keys()].flatMap((k) => /method="([^"]*)"/.exec(k)?.[1] ?? []));
    expect([...methods].every((m) => ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"].includes(m))).toBe(true);
    const others = [...after.samples]
      .filter(([k]) => k.includes('method="other"'))
      .reduce((n, [k, v]) => n + v - (before.samples.get(k) ?? 0), 0);
    expect(others).toBe(2);
  });
});

describe("notifications, the queue and dispatch", () => {
  test("a paired phone's send: pending, due in its queue; a scheduled one waits; a cancel is counted", async () => {
    const ctx = await metricsContext();
    await ctx.phone();
    const s0 = await scrape(ctx);
    await send(ctx);
    const scheduled = await send(ctx, { schedule_time: "2026-01-20 10:00:00" });
    const s1 = await scrape(ctx);
    expect(
      moved(s0, s1, [
        ["pigeon_notifications_total", { channel: "phone", status: "pending" }],
        ["pigeon_queue_depth", { route: "phone", state: "due" }],
        ["pigeon_queue_depth", { route: "phone", state: "waiting" }],
        ["pigeon_notifications_total", { channel: "cloud", status: "pending" }],
      ]),
    ).toEqual([2, 1, 1, 0]);
    expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: scheduled }), 200);
    const s2 = await scrape(ctx);
    expect(
      moved(s1, s2, [
        ["pigeon_notifications_total", { channel: "phone", status: "cancelled" }],
        ["pigeon_queue_depth", { route: "phone", state: "waiting" }],
      ]),
    ).toEqual([1, -1]);
    // Once its time comes, a scheduled message is due.
    await send(ctx, { schedule_time: "2026-01-16 10:00:00" });
    const s3 = await scrape(ctx);
    ctx.clock.advance(2 * 24 * 3600_000);
    const s4 = await scrape(ctx);
    expect(
      moved(s3, s4, [
        ["pigeon_queue_depth", { route: "phone", state: "waiting" }],
        ["pigeon_queue_depth", { route: "phone", state: "due" }],
      ]),
    ).toEqual([-1, 1]);
  });

  test("a cloud number: dispatched (timed), sent, delivered by callback; a refused one failed", async () => {
    const ctx = await metricsContext();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    await ctx.cloudDevice(fake);
    await ctx.topUp(100);
    const s0 = await scrape(ctx);
    await send(ctx);
    await send(ctx, { message: "second" });
    const s1 = await scrape(ctx);
    expect(
      moved(s0, s1, [
        ["pigeon_notifications_total", { channel: "cloud", status: "pending" }],
        ["pigeon_queue_depth", { route: "cloud", state: "due" }],
      ]),
    ).toEqual([2, 2]);

    fake.failNext(400, 21211, "The 'To' number is not a valid phone number.");
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(2);
    const s2 = await scrape(ctx);
    expect(
      moved(s1, s2, [
        ["pigeon_queue_depth", { route: "cloud", state: "due" }],
        ["pigeon_dispatch_duration_seconds_count", { channel: "cloud" }],
        ["pigeon_dispatch_duration_seconds_bucket", { channel: "cloud", le: "+Inf" }],
        ["pigeon_notifications_total", { channel: "cloud", status: "sent" }],
        ["pigeon_notifications_total", { channel: "cloud", status: "failed" }],
        ["pigeon_dispatch_duration_seconds_count", { channel: "chatapp" }],
      ]),
    ).toEqual([-2, 2, 2, 1, 1, 0]);
    const took = s2.value("pigeon_dispatch_duration_seconds_sum", { channel: "cloud" });
    expect(took).toBeGreaterThan(0);
    expect(took).toBeLessThan(10);

    const [sid] = fake.messages.keys();
    expect((await fake.callback(sid, "delivered")).status).toBe(200);
    // A repeated report changes nothing, and is not counted again.
    await fake.callback(sid, "delivered");
    const s3 = await scrape(ctx);
    expect(moved(s2, s3, [["pigeon_notifications_total", { channel: "cloud", status: "delivered" }]])).toEqual([1]);
  });
});

describe("devices", () => {
  test("by kind and state: paired phones online, offline once silent (a polling one later), blocked, inactive", async () => {
    const ctx = await metricsContext();
    const s0 = await scrape(ctx);
    const phone = await ctx.phone();
    const polling = await ctx.phone("Polling");
    // A phone that only polls (it registered a push token) may stay silent for its poll interval too.
    await ctx.sql.run("UPDATE device SET push_token = 'fcm-token' WHERE id = ?", [polling.device_id]);
    const s1 = await scrape(ctx);
    const states = (a: Scrape, b: Scrape) =>
      moved(
        a,
        b,
        ["online", "offline", "blocked", "inactive"].map(
          (state) => ["pigeon_devices", { kind: "sms", state }] as [string, Record<string, string>],
        ),
      );
    expect(states(s0, s1)).toEqual([2, 0, 0, 0]);
    // Past PIGEON_OFFLINE_AFTER (300 s here) without a word from them: the polling one is still online.
    ctx.clock.advance(301_000);
    const s2 = await scrape(ctx);
    expect(states(s1, s2)).toEqual([-1, 1, 0, 0]);
    await ctx.sql.run("UPDATE device SET status = 'inactive' WHERE id = ?", [phone.device_id]);
    await ctx.sql.run("UPDATE device SET blocked_code = 'test' WHERE id = ?", [polling.device_id]);
    const s3 = await scrape(ctx);
    expect(states(s2, s3)).toEqual([-1, -1, 1, 1]);
    expect(s3.value("pigeon_devices", { kind: "cloud", state: "offline" })).toBe(0);
  });
});

describe("webhooks", () => {
  test("deliveries by result, and the outbox of those not done", async () => {
    const ctx = await metricsContext();
    receiver = startReceiver();
    await ctx.phone();
    expectEnvelope(await ctx.post("/v1/api/webhook/create", { url: receiver.url, events: ["notification.cancelled"] }), 200);
    const cancelOne = async () => {
      const id = await send(ctx, { schedule_time: "2026-01-20 10:00:00" });
      expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: id }), 200);
    };
    const s0 = await scrape(ctx);
    await cancelOne();
    await cancelOne();
    const s1 = await scrape(ctx);
    expect(moved(s0, s1, [["pigeon_webhook_outbox_pending"]])).toEqual([2]);

    receiver.answer(() => new Response("nope", { status: 500 }));
    expect(await ctx.services.webhooks.deliverDue()).toBe(2);
    const s2 = await scrape(ctx);
    expect(
      moved(s1, s2, [
        ["pigeon_webhook_deliveries_total", { result: "retry" }],
        ["pigeon_webhook_deliveries_total", { result: "delivered" }],
        ["pigeon_webhook_outbox_pending"],
      ]),
    ).toEqual([2, 0, 0]);

    // One on its last attempt: given up (failed), the other delivered; the outbox empties.
    await ctx.sql.run("UPDATE webhook_delivery SET attempts = ? WHERE id = (SELECT min(id) FROM webhook_delivery)", [
      MAX_DELIVERY_ATTEMPTS - 1,
    ]);
    ctx.clock.advance(60_000);
    const [first] = await ctx.sql.all<{ id: string }>("SELECT min(id) AS id FROM webhook_delivery");
    receiver.answer((r) => new Response(null, { status: r.headers.get("x-pigeon-delivery") === first.id ? 500 : 204 }));
    expect(await ctx.services.webhooks.deliverDue()).toBe(2);
    const s3 = await scrape(ctx);
    expect(
      moved(s2, s3, [
        ["pigeon_webhook_deliveries_total", { result: "failed" }],
        ["pigeon_webhook_deliveries_total", { result: "delivered" }],
        ["pigeon_webhook_deliveries_total", { result: "retry" }],
        ["pigeon_webhook_outbox_pending"],
      ]),
    ).toEqual([1, 1, 0, -2]);
  });
});

describe("who may read it", () => {
  const server = (address: string) => ({ requestIP: () => ({ address }) });
  const req = (headers: Record<string, string> = {}) => new Request("http://pigeon.test/metrics", { headers });

  test("loopback without forwarding headers, or the right token from anywhere; nothing else", () => {
    for (const peer of ["127.0.0.1", "127.3.4.5", "::1", "::ffff:127.0.0.1"]) expect(mayScrape(req(), server(peer), null)).toBe(true);
    for (const peer of ["203.0.113.5", "10.0.0.1", "::ffff:10.0.0.1", "fe80::1"]) expect(mayScrape(req(), server(peer), TOKEN)).toBe(false);
    // No socket at all (a request handled in process): not loopback.
    expect(mayScrape(req(), null, null)).toBe(false);
    // A proxy on the same host: every outside caller arrives from loopback, with a header saying so.
    for (const header of ["x-forwarded-for", "forwarded", "x-real-ip"])
      expect(mayScrape(req({ [header]: "198.51.100.7" }), server("127.0.0.1"), TOKEN)).toBe(false);
    // The token opens it anywhere, proxied or not; the scheme's case does not matter.
    expect(mayScrape(req(BEARER), server("203.0.113.5"), TOKEN)).toBe(true);
    expect(mayScrape(req({ ...BEARER, "x-forwarded-for": "198.51.100.7" }), server("127.0.0.1"), TOKEN)).toBe(true);
    expect(mayScrape(req({ authorization: `bearer ${TOKEN}` }), server("203.0.113.5"), TOKEN)).toBe(true);
    // A wrong token (or a token when none is set) is refused, from loopback too.
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, "Bearer", `Basic ${TOKEN}`, TOKEN])
      expect(mayScrape(req({ authorization }), server("127.0.0.1"), TOKEN)).toBe(false);
    expect(mayScrape(req(BEARER), server("127.0.0.1"), null)).toBe(false);
  });

  test("a refused caller gets the very 404 of a path no route serves, whatever the method", async () => {
    const ctx = await metricsContext();
    const same = async (method: string, headers: Record<string, string>) => {
      const refused = await ctx.call(method, "/metrics", { key: null, headers });
      const unknown = await ctx.call(method, "/metricz", { key: null, headers });
      const shape = (r: typeof refused) => ({
        status: r.status,
        headers: Object.entries(r.headers.toJSON()).filter(([name]) => name !== "x-request-id"),
        text: r.text.replaceAll("/metricz", "/metrics"),
      });
      expect(refused.status).toBe(404);
      expect(shape(refused)).toEqual(shape(unknown));
    };
    // In process there is no socket: no loopback, so only the token opens it.
    await same("GET", {});
    await same("GET", { authorization: "Bearer not-the-token-at-all" });
    await same("GET", { "x-forwarded-for": "127.0.0.1" });
    await same("POST", BEARER);
    await same("DELETE", {});
    expect((await ctx.get("/metrics", { key: null, headers: BEARER })).status).toBe(200);
    // An API key is no way in.
    await same("GET", {});
    expect((await ctx.get("/metrics")).status).toBe(404);
  });

  test("over a socket: loopback is served, a proxied or wrongly authorised request is not", async () => {
    const ctx = await metricsContext();
    ctx.app.listen({ port: 0, hostname: "127.0.0.1" });
    const port = ctx.app.server?.port;
    try {
      const get = async (path: string, headers: Record<string, string> = {}) => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers });
        return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
      };
      const open = await get("/metrics");
      expect(open.status).toBe(200);
      expect(open.text).toContain("pigeon_build_info");
      const unknown = await get("/metricz");
      const refusals: Record<string, string>[] = [
        { "x-forwarded-for": "198.51.100.7" },
        { forwarded: "for=198.51.100.7" },
        { authorization: "Bearer wrong-token-0123456789" },
      ];
      for (const headers of refusals) {
        const refused = await get("/metrics", headers);
        expect({ ...refused, text: refused.text.replace("/metrics", "/metricz") }).toEqual(unknown);
      }
      expect((await get("/metrics", { ...BEARER, "x-forwarded-for": "198.51.100.7" })).status).toBe(200);
    } finally {
      await ctx.app.stop(true);
    }
  });

  test("kept out of the API document", async () => {
    const ctx = await metricsContext();
    const spec = (await ctx.get("/openapi.json", { key: null })).body as { paths: Record<string, unknown> };
    expect(Object.keys(spec.paths).length).toBeGreaterThan(20);
    expect(Object.keys(spec.paths).filter((p) => p.includes("metrics"))).toEqual([]);
  });

  test("PIGEON_METRICS_TOKEN: unset is loopback only; a short or spaced token stops start-up", () => {
    expect(loadConfig({}).metricsToken).toBeNull();
    expect(loadConfig({ PIGEON_METRICS_TOKEN: ` ${TOKEN} ` }).metricsToken).toBe(TOKEN);
    expect(() => loadConfig({ PIGEON_METRICS_TOKEN: "short" })).toThrow(ConfigError);
    expect(() => loadConfig({ PIGEON_METRICS_TOKEN: "sixteen chars but spaced" })).toThrow(ConfigError);
  });
});
