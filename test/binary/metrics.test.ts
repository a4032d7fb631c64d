// /metrics on the compiled binary: Prometheus's own checker (`promtool check metrics`, from Debian's
// prometheus package; scripts/ensure-tools.sh installs it) accepts the page after real traffic,
// scheduled backups show as a timestamp that moves with each backup, the access rule holds over
// real sockets, and the Grafana dashboard in deploy/grafana/ asks only for series the page serves.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { settle } from "../helpers/api";
import { isolatedBinary, startServer, tempDir, type RunningServer } from "../helpers/binary";
import { startReceiver, type Receiver } from "../helpers/receiver";
import { RECIPIENT } from "../helpers/numbers";

const TOKEN = "binary-metrics-token-0123456789";
const SKIP_PROMTOOL = process.env.PIGEON_TEST_SKIP_PROMTOOL === "1";
const DASHBOARD = join(import.meta.dir, "../..", "deploy", "grafana", "pigeon.json");
/** The dashboard's data source: its variable, chosen on import. */
const DATASOURCE = ["$", "{datasource}"].join("");

let server: RunningServer;
let receiver: Receiver;
beforeAll(async () => {
  receiver = startReceiver();
  server = await startServer(isolatedBinary(), {
    PIGEON_DATA_DIR: tempDir(),
    PIGEON_METRICS_TOKEN: TOKEN,
    PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1",
    PIGEON_BACKUP_DIR: join(tempDir(), "backups"),
    // 1.8 s between backups.
    PIGEON_BACKUP_EVERY: "0.0005",
  });
});
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop("SIGKILL");
  await receiver?.stop();
});

async function page(headers: Record<string, string> = {}): Promise<string> {
  const res = await server.fetch("/metrics", { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return await res.text();
}

/** A sample's value on the page (the first line that starts with `series`), or null. */
function sampleOf(text: string, series: string): number | null {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : null;
}

/** Every name a query may use: each family's own, and a histogram's _bucket, _sum and _count. */
function servedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (m[2] === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(m[1] + suffix);
    else names.add(m[1]);
  }
  return names;
}

const backupsWritten = () =>
  server
    .output()
    .split("\n")
    .filter((l) => l.includes("backup written to")).length;

describe("the compiled binary's /metrics", () => {
  test("after real traffic, promtool check metrics accepts the page", async () => {
    const key = server.initialKey!;
    const phone = await server.api("/v1/api/device/batch/register", key, { devices: [{ name: "Phone" }] });
    expect(phone.status).toBe(200);
    const sent = await server.api("/v1/notification/sms/api/send", key, {
      recipient_contact: RECIPIENT,
      message: "hello",
      schedule_time: "2099-01-01 10:00:00",
    });
    expect(sent.status).toBe(200);
    const id = sent.body.data.notification_id as number;
    expect((await server.api(`/v1/api/notification/${id}`, key)).status).toBe(200);
    expect((await server.fetch("/no/such/path/42")).status).toBe(404);
    expect((await server.api("/v1/api/notification/cancel", key, { notification_id: id })).status).toBe(200);
    // Made after the cancel, so its test event is its only delivery.
    const hook = await server.api("/v1/api/webhook/create", key, { url: receiver.url, events: ["notification.cancelled"] });
    expect(hook.status).toBe(200);
    const tested = await server.api("/v1/api/webhook/test", key, { webhook_id: hook.body.data.webhook_id });
    expect(tested.body.data.delivered).toBe(true);

    const text = await page();
    expect(sampleOf(text, 'pigeon_http_requests_total{method="GET",route="/v1/api/notification/:notification_id",status="200"}')).toBe(1);
    expect(sampleOf(text, 'pigeon_http_requests_total{method="GET",route="unmatched",status="404"}')).toBe(1);
    expect(text).not.toContain(`/notification/${id}"`);
    expect(sampleOf(text, 'pigeon_notifications_total{channel="phone",status="pending"}')).toBe(1);
    expect(sampleOf(text, 'pigeon_notifications_total{channel="phone",status="cancelled"}')).toBe(1);
    expect(sampleOf(text, 'pigeon_webhook_deliveries_total{result="delivered"}')).toBe(1);
    expect(sampleOf(text, 'pigeon_devices{kind="sms",state="offline"}')).toBe(1);
    expect(sampleOf(text, "process_resident_memory_bytes")).toBeGreaterThan(1024 * 1024);

    if (SKIP_PROMTOOL) return console.log("PIGEON_TEST_SKIP_PROMTOOL=1: the page is not checked with promtool");
    if (!Bun.which("promtool"))
      throw new Error(
        "promtool is missing: install Debian's prometheus package (bash scripts/ensure-tools.sh), or set PIGEON_TEST_SKIP_PROMTOOL=1",
      );
    const checked = Bun.spawnSync(["promtool", "check", "metrics"], { stdin: Buffer.from(text), stdout: "pipe", stderr: "pipe" });
    expect({ code: checked.exitCode, out: checked.stdout.toString() + checked.stderr.toString() }).toEqual({ code: 0, out: "" });
  }, 30_000);

  test("scheduled backups: the newest one's time, moving on with the next", async () => {
    expect(await settle(() => backupsWritten() >= 1, 15_000, 50)).toBe(true);
    const health = (await (await server.fetch("/health")).json()).data.backup;
    const first = sampleOf(await page(), "pigeon_backup_last_success_timestamp_seconds");
    // /health may have seen a newer one, a moment later.
    expect(first).not.toBeNull();
    expect(first! * 1000).toBeLessThanOrEqual(Date.parse(health.last_success_at));
    expect(first! * 1000).toBeGreaterThan(Date.now() - 60_000);
    const seen = backupsWritten();
    expect(await settle(() => backupsWritten() > seen, 15_000, 50)).toBe(true);
    const next = sampleOf(await page(), "pigeon_backup_last_success_timestamp_seconds");
    expect(next).toBeGreaterThan(first!);
  }, 40_000);

  test("over real sockets: served to loopback, and with the token even when proxied; a refusal is an unknown path's 404", async () => {
    const get = async (path: string, headers: Record<string, string>) => {
      const res = await server.fetch(path, { headers });
      return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
    };
    const unknown = await get("/metricz", {});
    expect(unknown.status).toBe(404);
    const refusals: Record<string, string>[] = [
      { "x-forwarded-for": "198.51.100.7" },
      { "x-real-ip": "198.51.100.7" },
      { authorization: `Bearer ${TOKEN}-not` },
    ];
    for (const headers of refusals) {
      const refused = await get("/metrics", headers);
      expect({ ...refused, text: refused.text.replace("/metrics", "/metricz") }).toEqual(unknown);
    }
    expect(await page({ authorization: `Bearer ${TOKEN}`, "x-forwarded-for": "198.51.100.7" })).toContain("pigeon_build_info");
  });

  test("the Grafana dashboard parses and asks only for series the server serves, all of them", async () => {
    const served = servedNames(await page());
    // Whether backups are on decides this one; here they are.
    expect(served.has("pigeon_backup_last_success_timestamp_seconds")).toBe(true);
    const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8"));
    expect(dashboard).toMatchObject({ uid: "pigeon", title: "Pigeon", schemaVersion: expect.any(Number) });
    const variables = dashboard.templating.list as { name: string; type: string; query: unknown; definition?: string }[];
    expect(variables.find((v) => v.type === "datasource")).toMatchObject({ name: "datasource", query: "prometheus" });
    const panels = dashboard.panels as {
      id: number;
      type: string;
      datasource?: unknown;
      gridPos: { x: number; w: number };
      targets?: { expr: string }[];
    }[];
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels) {
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      if (p.type !== "row") expect(p.datasource).toEqual({ type: "prometheus", uid: DATASOURCE });
    }
    const queries = [
      ...panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
      ...variables.flatMap((v) => (v.definition ? [v.definition] : [])),
    ];
    expect(queries.length).toBeGreaterThan(15);

    // What a query may name besides series: PromQL's functions and words, and Grafana's variables.
    const words = new Set(
      "sum max min avg count rate irate increase histogram_quantile time by without on ignoring and or unless label_values".split(" "),
    );
    const used = new Set<string>();
    for (const query of queries) {
      const bare = query
        .replace(/"(?:[^"\\]|\\.)*"/g, "") // label values
        .replace(/\{[^}]*\}/g, "") // label matchers
        .replace(/\b(by|without)\s*\([^)]*\)/g, "$1") // grouping labels
        .replace(/\[[^\]]*\]/g, "") // ranges
        .replace(/\$\w+/g, "") // Grafana's variables
        .replace(/\b\d+(\.\d+)?\b/g, "");
      const names = [...bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)].map((m) => m[0]);
      const series = names.filter((n) => !words.has(n));
      // label_values(metric, label): the label is not a series.
      if (query.startsWith("label_values(")) series.pop();
      for (const name of series) {
        expect({ query, name, served: served.has(name) }).toEqual({ query, name, served: true });
        used.add(name);
      }
    }
    // Every family has a panel: a histogram through its buckets, its sum or its count.
    const families = [...(await page()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
    const unused = families.filter((f) => ![...used].some((n) => n === f || n.startsWith(`${f}_`)));
    expect(unused).toEqual([]);
  });
});
