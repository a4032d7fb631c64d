// `npm run bench`: Pigeon measured from outside, against the bare limit of its own stack in the
// same run. It builds the binary, starts it on temp data dirs, drives it with a load generator in a
// process of its own (wrk, or autocannon from npm where wrk is missing), and writes
// bench/RESULTS.md: the machine, the versions, each figure (the median of 3 runs) with its ratio to
// the baseline, the worker's dispatch rate to local fakes, memory and start-up, and how the figures
// move from 10,000 to 1,000,000 stored notifications. Nothing here asserts a timing.
//
// BENCH_SECONDS (default 5) sets each run's length; BENCH_QUICK=1 skips the 1,000,000 row;
// BENCH_PHONE_BACKLOG (default 100,000) the messages waiting on the connected phone;
// BENCH_ONLY=worker (or start, accept, phone, growth, smpp, kannel, swarm, postgres, postgres-worker, comma-separated) runs only those parts and prints
// them without writing RESULTS.md; BENCH_ONLY=profile profiles the send and bulk routes and the
// connected phone's campaign from source and writes bench/profiles/ (BENCH_PROFILE=phone, or send,
// bulk, bulk-distinct, send-varied, picks some).
import { Database } from "bun:sqlite";
import type { Subprocess } from "bun";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { api, auth } from "./client";

const ROOT = join(import.meta.dir, "..");
const BIN = join(ROOT, "dist", "pigeon");
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const RUNS = 3;
const CONNECTIONS = 32;
const THREADS = 2;
const SIZES = process.env.BENCH_QUICK ? [10_000, 100_000] : [10_000, 100_000, 1_000_000];
const TO = "+14155552671";
const WORKER_COUNT = Number(process.env.BENCH_WORKER_COUNT ?? 20_000);
const PHONE_BACKLOG = Number(process.env.BENCH_PHONE_BACKLOG ?? 100_000);
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",").map((p) => p.trim())) : null;
const part = (name: string) => ONLY === null || ONLY.has(name);
const temps: string[] = [];
const children: Subprocess[] = [];

function temp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
}

function log(line: string) {
  console.log(`[bench] ${line}`);
}

function cleanup() {
  for (const child of children) child.kill("SIGKILL");
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
}
process.on("SIGINT", () => {
  cleanup();
  process.exit(130);
});

// ---------------------------------------------------------------------------------------------
// The load generator: wrk where installed (Debian's package), else autocannon from npm.

interface Load {
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  /** Requests answered other than 2xx, or failed. */
  errors: number;
  requests: number;
}

interface Target {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  seconds?: number;
  connections?: number;
  /**
   * Each request to its own recipients, as a campaign sends: every RECIPIENT in the body is replaced,
   * per request and per place, by a random valid US number (wrk only).
   */
  varied?: boolean;
}

const WRK = Bun.which("wrk");
const AUTOCANNON = join(ROOT, "node_modules", ".bin", "autocannon");
if (!WRK && !existsSync(AUTOCANNON)) {
  console.error("bench needs a load generator: apt-get install wrk (or npm install --no-save autocannon)");
  process.exit(2);
}

const luaString = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;

async function load(t: Target): Promise<Load> {
  const seconds = t.seconds ?? SECONDS;
  const connections = t.connections ?? CONNECTIONS;
  const headers = { ...(t.body ? { "content-type": "application/json" } : {}), ...(t.headers ?? {}) };
  if (WRK) {
    const script = join(temp("pigeon-wrk-"), "script.lua");
    writeFileSync(
      script,
      [
        `wrk.method = ${luaString(t.method ?? "GET")}`,
        t.body && !t.varied ? `wrk.body = ${luaString(t.body)}` : "",
        ...(t.varied && !t.body
          ? [
              "math.randomseed(os.time() * 1000 + math.floor(os.clock() * 1e6))",
              `local template = ${luaString(new URL(t.url).pathname + new URL(t.url).search)}`,
              "request = function()",
              '  local to = function() return string.format("%%2B1415%d%06d", math.random(2, 9), math.random(0, 999999)) end',
              '  return wrk.format(nil, (template:gsub("RECIPIENT", to)))',
              "end",
            ]
          : []),
        ...(t.varied && t.body
          ? [
              "math.randomseed(os.time() * 1000 + math.floor(os.clock() * 1e6))",
              `local template = ${luaString(t.body)}`,
              "request = function()",
              '  local to = function() return string.format("+1415%d%06d", math.random(2, 9), math.random(0, 999999)) end',
              '  return wrk.format(nil, nil, nil, (template:gsub("RECIPIENT", to)))',
              "end",
            ]
          : []),
        ...Object.entries(headers).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`),
        "done = function(summary, latency, requests)",
        "  local e = summary.errors",
        '  io.write(string.format("RESULT %d %d %d %.0f %.0f %.0f\\n", summary.requests, summary.duration,',
        "    e.connect + e.read + e.write + e.timeout + e.status, latency:percentile(50), latency:percentile(95), latency:percentile(99)))",
        "end",
      ].join("\n"),
    );
    const proc = Bun.spawn(
      [WRK, "-t", String(Math.min(THREADS, connections)), "-c", String(connections), "-d", `${seconds}s`, "-s", script, t.url],
      { stdout: "pipe", stderr: "pipe" },
    );
    const out = await new Response(proc.stdout).text();
    await proc.exited;
    const m = /RESULT (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(out);
    if (!m) throw new Error(`wrk said: ${out}`);
    const [requests, micros, errors, p50, p95, p99] = m.slice(1).map(Number);
    return { requests, rps: requests / (micros / 1e6), errors, p50: p50 / 1000, p95: p95 / 1000, p99: p99 / 1000 };
  }
  if (t.varied) throw new Error("varied recipients need wrk (apt-get install wrk)");
  const args = [AUTOCANNON, "-j", "-c", String(connections), "-d", String(seconds), "-m", t.method ?? "GET"];
  for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}=${v}`);
  if (t.body) args.push("-b", t.body);
  const proc = Bun.spawn([...args, t.url], { stdout: "pipe", stderr: "ignore" });
  const r = JSON.parse(await new Response(proc.stdout).text());
  await proc.exited;
  // autocannon reports p97.5 rather than p95: the nearer, higher one is taken.
  return {
    requests: r.requests.total,
    rps: r.requests.average,
    errors: r.errors + r.non2xx,
    p50: r.latency.p50,
    p95: r.latency.p97_5,
    p99: r.latency.p99,
  };
}

/** A warm-up, then RUNS runs; the median run by rate (its latencies with it). */
async function measure(label: string, t: Target): Promise<Load & { runs: number[] }> {
  await load({ ...t, seconds: 2 });
  const runs: Load[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await load(t));
  const sorted = [...runs].sort((a, b) => a.rps - b.rps);
  const median = sorted[Math.floor(sorted.length / 2)];
  log(
    `${label}: ${Math.round(median.rps)} req/s, p50 ${median.p50.toFixed(2)} ms, p99 ${median.p99.toFixed(2)} ms (runs ${runs.map((r) => Math.round(r.rps)).join(", ")}; errors ${runs.reduce((n, r) => n + r.errors, 0)})`,
  );
  return { ...median, runs: runs.map((r) => r.rps) };
}

// ---------------------------------------------------------------------------------------------
// Processes: Pigeon's binary, the baseline server, the fake providers.

interface Running {
  proc: Subprocess;
  url: string;
  output: () => string;
}

function collect(proc: Subprocess): () => string {
  let out = "";
  const decoder = new TextDecoder();
  for (const stream of [proc.stdout, proc.stderr] as ReadableStream<Uint8Array>[]) {
    void (async () => {
      const reader = stream.getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) out += decoder.decode(r.value, { stream: true });
    })();
  }
  return () => out;
}

async function waitForLine(output: () => string, pattern: RegExp, what: string, proc: Subprocess): Promise<RegExpExecArray> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const m = pattern.exec(output());
    if (m) return m;
    if (proc.exitCode !== null) throw new Error(`${what} exited: ${output()}`);
    if (Date.now() > deadline) throw new Error(`${what} did not start: ${output()}`);
    await Bun.sleep(5);
  }
}

function pigeonEnv(dataDir: string, extra: Record<string, string> = {}) {
  return {
    PATH: process.env.PATH ?? "",
    PIGEON_DATA_DIR: dataDir,
    PIGEON_HOST: "127.0.0.1",
    PIGEON_PORT: "0",
    // The bench's phone never calls in: it stays "online" for the whole run.
    PIGEON_OFFLINE_AFTER: "86400",
    PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1",
    ...extra,
  };
}

async function startPigeon(
  dataDir: string,
  extra: Record<string, string> = {},
  command = [BIN, "serve"],
): Promise<Running & { key: { api_key: string; api_secret: string } | null }> {
  // Its output goes to a file, as a service's log does, not through a pipe this process reads: at
  // a line a request, reading that pipe here took a share of the same two cores the server runs on
  // (sends to varied recipients: 2,400-2,900 req/s with the pipe against 3,300-4,200 with the file,
  // runs alternating) and the bench measured its own reader.
  const logFile = join(dataDir, `pigeon-${children.length}.log`);
  const proc = Bun.spawn(command, { env: pigeonEnv(dataDir, extra), stdout: Bun.file(logFile), stderr: Bun.file(`${logFile}.err`) });
  children.push(proc);
  const output = () => [logFile, `${logFile}.err`].map((f) => (existsSync(f) ? readFileSync(f, "utf8") : "")).join("");
  const m = await waitForLine(output, /listening on https?:\/\/[^:]+:(\d+)/, "pigeon", proc);
  const line = output()
    .split("\n")
    .find((l) => l.startsWith("{") && l.includes("api_secret"));
  return { proc, output, url: `http://127.0.0.1:${m[1]}`, key: line ? JSON.parse(line) : null };
}

async function stop(r: Running) {
  r.proc.kill("SIGTERM");
  await r.proc.exited;
}

function cli(dataDir: string, args: string[], extra: Record<string, string> = {}) {
  const r = Bun.spawnSync([BIN, ...args], { env: pigeonEnv(dataDir, extra), stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`pigeon ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

async function startBaseline(mode: "group" | "single"): Promise<Running> {
  const proc = Bun.spawn([process.execPath, join(ROOT, "bench", "baseline.ts")], {
    env: { ...process.env, MODE: mode, DIR: temp("pigeon-baseline-") },
    stdout: "pipe",
    stderr: "pipe",
  });
  children.push(proc);
  const output = collect(proc);
  const m = await waitForLine(output, /listening on (\d+)/, "baseline", proc);
  return { proc, output, url: `http://127.0.0.1:${m[1]}` };
}

/** Resident memory of a process, in MB (Linux). */
/** The kernel's clock ticks a second, in which /proc reports CPU time. */
const CLK_TCK = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

/** /proc/<pid>/stat's fields after the command name (field 3 of the man page is index 0). */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** CPU seconds (user and system, every thread) the processes `pids` have used so far. */
function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const f = statFields(pid);
    if (f) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / CLK_TCK;
}

/**
 * CPU seconds a PostgreSQL cluster has used so far: its postmaster's own and that of every child
 * it has reaped (a backend that ended), plus each child still running.
 */
function postgresCpuSeconds(dataDir: string): number {
  const postmaster = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  const own = statFields(postmaster);
  if (!own) return 0;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f && Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / CLK_TCK;
}

function rssMb(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// A workspace ready to send: an unlimited plan, credits, a paired phone.

/** A fresh data dir with the owner's plan unlimited, credits, and a phone paired the app's way. */
async function preparedPigeon(extra: Record<string, string> = {}, command?: string[]) {
  const dataDir = temp("pigeon-bench-");
  cli(dataDir, ["plans", "set", "--code", "owner", "--name", "Owner", "--per-minute", "1000000000", "--per-day", "1000000000"], extra);
  const server = await startPigeon(dataDir, extra, command);
  const key = server.key!;
  cli(dataDir, ["credits", "add", "--workspace", "1", "--amount", "100000000"], extra);
  const pairing = await api(server.url, key, "/v1/api/device/pairing");
  const reg = await fetch(`${server.url}/mobile/v1/device`, {
    method: "POST",
    headers: { authorization: `Bearer ${pairing.pairing_token}`, "content-type": "application/json", "user-agent": "SMS Gateway/1.68.0" },
    body: JSON.stringify({ name: "bench/phone", pushToken: null }),
  });
  if (!reg.ok) throw new Error(`phone registration: ${reg.status} ${await reg.text()}`);
  return { dataDir, server, key };
}

const sendBody = JSON.stringify({ recipient_contact: TO, message: "Your order is ready for pickup." });
const bulkBody = JSON.stringify({
  messages: Array.from({ length: 100 }, (_, i) => ({ recipient_contact: TO, message: `Your order ${i} is ready for pickup.` })),
});
/**
 * A campaign as users send one: 100 distinct recipients a request (each RECIPIENT a random number),
 * so each message opens or updates its own thread. The one-recipient bulk above flatters the thread
 * catch-up, which then updates one thread a batch.
 */
const distinctBulkBody = JSON.stringify({
  messages: Array.from({ length: 100 }, (_, i) => ({ recipient_contact: "RECIPIENT", message: `Your order ${i} is ready for pickup.` })),
});
const variedBody = JSON.stringify({ recipient_contact: "RECIPIENT", message: "Your order is ready for pickup." });

// ---------------------------------------------------------------------------------------------
// Stored notifications: rows written straight into the database while Pigeon is stopped.

function seedNotifications(dataDir: string, upTo: number): number {
  const db = new Database(join(dataDir, "pigeon.db"));
  try {
    const have = db.query<{ n: number }, []>("SELECT count(*) AS n FROM notification").get()!.n;
    const add = upTo - have;
    if (add <= 0) return have;
    const device = db
      .query<{ id: number; workspace_id: number }, []>("SELECT id, workspace_id FROM device WHERE kind = 'sms' LIMIT 1")
      .get()!;
    const now = Date.now();
    // Spread over the last 30 days, mostly settled, as a busy month's history looks.
    db.run(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO notification (workspace_id, delivery_type, route, device_id, recipient, message, status, stage, next_attempt_at,
         segments, cost, created_at, updated_at, sent_at, delivered_at, priority, with_delivery_report)
       SELECT ?, 'sms', 'sms', ?, '+1415555' || printf('%04d', i % 10000), 'Seeded message ' || i,
         CASE i % 10 WHEN 0 THEN 'failed' WHEN 1 THEN 'sent' ELSE 'delivered' END, 'done', t, 1, 0, t, t, t, CASE WHEN i % 10 > 1 THEN t END, 0, 1
       FROM (SELECT i, ? - (i * 2592000000 / ?) AS t FROM n)`,
      [add, device.workspace_id, device.id, now, add],
    );
    markThreaded(db);
    db.run("PRAGMA wal_checkpoint(TRUNCATE)");
    return upTo;
  } finally {
    db.close();
  }
}

/**
 * Rows written straight into the table stand for sends accepted earlier, whose thread messages
 * the server would have added while accepting them: the threads' catch-up starts after them, as
 * it does after an upgrade (migration 0014), rather than threading them during the measurements.
 */
function markThreaded(db: Database) {
  db.run("UPDATE thread_sync SET notification_id = (SELECT coalesce(max(id), 0) FROM notification) WHERE id = 1");
}

function dbBytes(dataDir: string): number {
  const file = join(dataDir, "pigeon.db");
  return statSync(file).size + (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);
}

// ---------------------------------------------------------------------------------------------
// The worker: 10 business numbers on the fake chat-app platform and a cloud number, fed a backlog.

/**
 * `pg`: the database is PostgreSQL (its URL and the shared key file), served by `servers` servers
 * at once, each draining the same backlog; SQLite's one server otherwise.
 */
async function workerBench(
  count: number,
  pg: { url: string; keyFile: string; servers: number; dataDir?: string } | null = null,
  command: string[] = [BIN, "serve"],
) {
  const fakes = Bun.spawn([process.execPath, join(ROOT, "bench", "fakes.ts")], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  children.push(fakes);
  const fakeOut = collect(fakes);
  const info = JSON.parse((await waitForLine(fakeOut, /^(\{.*\})$/m, "fakes", fakes))[1]) as {
    chatUrl: string;
    cloudUrl: string;
    accountSid: string;
    authToken: string;
    perNumber: number;
  };
  const env = {
    PIGEON_CHATAPP_GRAPH_URL: info.chatUrl,
    PIGEON_CHATAPP_APP_SECRET: "bench-secret",
    ...(pg ? { PIGEON_DATABASE_URL: pg.url, PIGEON_KEY_FILE: pg.keyFile } : {}),
  };
  const { dataDir, server, key } = await preparedPigeon(env, command);
  const connected = await api(server.url, key, "/v1/api/chatapp/connect", { access_token: "good-token" });
  const numbers = (connected.devices as { device_id: number }[]).map((d) => d.device_id);
  for (const id of numbers)
    await api(server.url, key, "/v1/api/device/update", { device_id: id, send_limit_per_minute: info.perNumber * 60 });
  const cloud = (
    await api(server.url, key, "/v1/api/device/batch/register", {
      devices: [
        {
          name: "cloud",
          kind: "cloud",
          send_limit_per_minute: 60_000,
          cloud: { account_sid: info.accountSid, auth_token: info.authToken, from_number: "+15005550006", base_url: info.cloudUrl },
        },
      ],
    })
  ).devices[0].device_id as number;
  const template = (
    (await api(server.url, key, "/v1/api/template/list?channel=chatapp&limit=100")).templates as { template_id: number; name: string }[]
  ).find((t) => t.name === "bench_note")!;
  await stop(server);

  // The backlog, written while Pigeon is stopped: nine in ten to the business numbers in turn (each
  // to a different user), the rest by the cloud number.
  const now = Date.now();
  let pending: () => Promise<number>;
  let close: () => Promise<void>;
  if (pg) {
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    await sql.unsafe(
      `INSERT INTO notification (workspace_id, delivery_type, route, device_id, recipient, template_id, template_vars, message, status, stage,
         next_attempt_at, segments, cost, created_at, updated_at, priority, with_delivery_report)
       SELECT 1, CASE WHEN i % 10 = 9 THEN 'sms' ELSE 'chatapp' END, CASE WHEN i % 10 = 9 THEN 'cloud' ELSE 'chatapp' END,
         CASE WHEN i % 10 = 9 THEN $1::bigint ELSE (string_to_array($2::text, ','))[i % 10 + 1]::bigint END,
         '+1415' || lpad(i::text, 7, '0'), CASE WHEN i % 10 = 9 THEN NULL ELSE $3::bigint END,
         CASE WHEN i % 10 = 9 THEN NULL ELSE json_build_array('n' || i)::text END,
         'Note n' || i, 'pending', 'queued', $4::bigint, 1, 0, $4::bigint, $4::bigint, 0, 1
       FROM generate_series(0, $5::int - 1) AS i`,
      [cloud, numbers.slice(0, 9).join(","), template.template_id, now, count],
    );
    // As markThreaded does on SQLite: the backlog is not the bench's to thread.
    await sql.unsafe("DELETE FROM thread_pending");
    // Statistics, as autovacuum would have gathered a minute after such a load.
    await sql.unsafe("ANALYZE");
    pending = async () => Number((await sql.unsafe("SELECT count(*) AS n FROM notification WHERE status = 'pending'"))[0].n);
    close = () => sql.end();
  } else {
    const db = new Database(join(dataDir, "pigeon.db"));
    db.run(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
       INSERT INTO notification (workspace_id, delivery_type, route, device_id, recipient, template_id, template_vars, message, status, stage,
         next_attempt_at, segments, cost, created_at, updated_at, priority, with_delivery_report)
       SELECT 1, CASE WHEN i % 10 = 9 THEN 'sms' ELSE 'chatapp' END, CASE WHEN i % 10 = 9 THEN 'cloud' ELSE 'chatapp' END,
         CASE WHEN i % 10 = 9 THEN ? ELSE json_extract(?, '$[' || (i % 10) || ']') END,
         '+1415' || printf('%07d', i), CASE WHEN i % 10 = 9 THEN NULL ELSE ? END, CASE WHEN i % 10 = 9 THEN NULL ELSE json_array('n' || i) END,
         'Note n' || i, 'pending', 'queued', ?, 1, 0, ?, ?, 0, 1
       FROM n`,
      [count, cloud, JSON.stringify(numbers.slice(0, 9)), template.template_id, now, now, now],
    );
    markThreaded(db);
    db.close();
    const reader = new Database(join(dataDir, "pigeon.db"), { readonly: true });
    pending = async () => reader.query<{ n: number }, []>("SELECT count(*) AS n FROM notification WHERE status = 'pending'").get()!.n;
    close = async () => reader.close();
  }

  const started = performance.now();
  const servers: Running[] = [];
  for (let i = 0; i < (pg?.servers ?? 1); i++) servers.push(await startPigeon(i === 0 ? dataDir : temp("pigeon-bench-"), env, command));
  let left = count;
  const deadline = Date.now() + 180_000;
  // When the first dispatch was seen (polled every 0.1 s): the rate while draining leaves out the
  // servers' start, measured on its own.
  let firstSeen = 0;
  // CPU from the first dispatch seen to the last: the servers' processes, and the cluster's on PostgreSQL.
  const pids = servers.map((r) => r.proc.pid);
  const cpuNow = () => ({ pigeon: cpuSeconds(pids), postgres: pg?.dataDir ? postgresCpuSeconds(pg.dataDir) : 0, left });
  let cpuFrom = cpuNow();
  while (left > 0 && Date.now() < deadline) {
    await Bun.sleep(100);
    left = await pending();
    if (firstSeen === 0 && left < count) {
      firstSeen = performance.now();
      cpuFrom = cpuNow();
    }
  }
  const cpuTo = cpuNow();
  const dispatched = Math.max(1, cpuFrom.left - cpuTo.left);
  /** CPU milliseconds a dispatch cost while draining. */
  const cpu = {
    pigeonMs: (1000 * (cpuTo.pigeon - cpuFrom.pigeon)) / dispatched,
    postgresMs: (1000 * (cpuTo.postgres - cpuFrom.postgres)) / dispatched,
  };
  const seconds = (performance.now() - started) / 1000;
  const draining = (performance.now() - firstSeen) / 1000;
  await close();
  // A backlog not drained is a finding: say what the servers said.
  if (left > 0)
    for (const running of servers) log(`worker: ${left} left; the server said:\n${running.output().split("\n").slice(-15).join("\n")}`);
  const rss = rssMb(servers[0].proc.pid);
  for (const running of servers) await stop(running);
  fakes.stdin!.write("stats\n");
  await fakes.stdin!.flush();
  const stats = JSON.parse((await waitForLine(fakeOut, /^(\{"chatSent".*\})$/m, "fake stats", fakes))[1]) as {
    chatSent: number;
    cloudSent: number;
    peakPerSecond: Record<string, number>;
  };
  fakes.stdin!.write("stop\n");
  await fakes.stdin!.flush();
  return {
    count,
    seconds,
    rate: (count - left) / seconds,
    drainRate: (count - left) / draining,
    left,
    perNumber: info.perNumber,
    numbers: numbers.length,
    rss,
    cpu,
    ...stats,
    peak: Math.max(...Object.values(stats.peakPerSecond)),
  };
}

// ---------------------------------------------------------------------------------------------
// The accept path against the limit of the stack, in the same run; growth with stored rows.

async function acceptBench() {
  const group = await startBaseline("group");
  const limit = await measure("baseline: one transaction per event-loop turn", {
    url: `${group.url}/send`,
    method: "POST",
    body: sendBody,
  });
  await stop(group);
  const single = await startBaseline("single");
  const perRequest = await measure("baseline: one transaction per request", { url: `${single.url}/send`, method: "POST", body: sendBody });
  await stop(single);

  const p = await preparedPigeon();
  const headers = auth(p.key);
  // Resident memory is sampled throughout the runs, so the figure is the peak under load.
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(p.server.proc.pid) ?? 0)), 200);
  const send = await measure("pigeon: POST /v1/api/sms/send (paired phone)", {
    url: `${p.server.url}/v1/api/sms/send`,
    method: "POST",
    headers,
    body: sendBody,
  });
  const bulk = await measure("pigeon: POST /v1/api/sms/send/bulk, 100 a request", {
    url: `${p.server.url}/v1/api/sms/send/bulk`,
    method: "POST",
    headers,
    body: bulkBody,
  });
  clearInterval(sampler);
  const loadRss = rssMb(p.server.proc.pid);
  const stored = new Database(join(p.dataDir, "pigeon.db"), { readonly: true });
  const afterLoad = stored.query<{ n: number }, []>("SELECT count(*) AS n FROM notification").get()!.n;
  stored.close();
  await stop(p.server);

  // What users send, on a fresh data dir of its own (so neither pair runs on the other's rows):
  // single sends each to its own recipient, bulks of 100 distinct recipients.
  const v = await preparedPigeon();
  const vHeaders = auth(v.key);
  const vSampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(v.server.proc.pid) ?? 0)), 200);
  const sendVaried = await measure("pigeon: POST /v1/api/sms/send, varied recipients", {
    url: `${v.server.url}/v1/api/sms/send`,
    method: "POST",
    headers: vHeaders,
    body: variedBody,
    varied: true,
  });
  const bulkDistinct = await measure("pigeon: bulk, 100 distinct recipients a request", {
    url: `${v.server.url}/v1/api/sms/send/bulk`,
    method: "POST",
    headers: vHeaders,
    body: distinctBulkBody,
    varied: true,
  });
  clearInterval(vSampler);
  await stop(v.server);
  log(`RSS during the send and bulk runs at most ${peakRss} MB, after them ${loadRss} MB (${afterLoad} notifications stored)`);
  return { limit, perRequest, send, bulk, sendVaried, bulkDistinct, peakRss, loadRss, afterLoad };
}

// ---------------------------------------------------------------------------------------------
// A campaign through a paced phone: sends to varied recipients while the simulated phone (the
// binary's own simulate-phone, speaking the app's protocol) holds its event stream with a backlog
// waiting on it, against the same server and backlog with the phone's process stopped.

/**
 * A server whose simulated phone has `backlog` messages waiting on it, due now, each to its own
 * recipient (written while Pigeon was stopped), started with `command` (the binary by default).
 */
async function phoneWithBacklog(backlog: number, command?: string[]) {
  const dataDir = temp("pigeon-phone-");
  cli(dataDir, ["plans", "set", "--code", "owner", "--name", "Owner", "--per-minute", "1000000000", "--per-day", "1000000000"]);
  const first = await startPigeon(dataDir);
  const key = first.key!;
  const { pairing_token: token } = await api(first.url, key, "/v1/api/device/pairing");
  // The same name and SIM list each time: the server takes it as the same phone coming back.
  const startPhone = async (url: string) => {
    const proc = Bun.spawn(
      [BIN, "simulate-phone", "--server", `${url}/mobile/v1`, "--token", token, "--delay", "0", "--name", "bench/campaign"],
      {
        env: pigeonEnv(temp("pigeon-phone-cli-")),
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    children.push(proc);
    await waitForLine(collect(proc), /registered as/, "simulate-phone", proc);
    // Its event stream opens right after registration; the first pull follows.
    await Bun.sleep(1000);
    return proc;
  };
  const stopPhone = async (proc: Subprocess) => {
    proc.kill("SIGTERM");
    await proc.exited;
  };
  await stopPhone(await startPhone(first.url));
  await stop(first);

  const db = new Database(join(dataDir, "pigeon.db"));
  const device = db.query<{ id: number }, []>("SELECT id FROM device WHERE kind = 'sms' AND deleted_at IS NULL").get()!.id;
  const now = Date.now();
  db.run(
    `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
     INSERT INTO notification (workspace_id, delivery_type, route, device_id, recipient, message, status, stage, external_id,
       next_attempt_at, segments, cost, created_at, updated_at, priority, with_delivery_report)
     SELECT 1, 'sms', 'sms', ?, '+1415' || (2 + i % 8) || printf('%06d', i), 'Campaign message ' || i, 'pending', 'queued', 'backlog' || printf('%014d', i),
       ?, 1, 0, ?, ?, 0, 1
     FROM n`,
    [backlog, device, now, now, now],
  );
  markThreaded(db);
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();

  const server = await startPigeon(dataDir, {}, command);
  const target: Target = { url: `${server.url}/v1/api/sms/send`, method: "POST", headers: auth(key), body: variedBody, varied: true };
  return { dataDir, server, device, target, startPhone: () => startPhone(server.url), stopPhone };
}

async function phoneBench(backlog: number) {
  const { dataDir, server, device, target, startPhone, stopPhone } = await phoneWithBacklog(backlog);
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(server.proc.pid) ?? 0)), 200);
  const connected: Load[] = [];
  const alone: Load[] = [];
  // Alternating, so the rows each run adds weigh on both sides alike.
  for (let i = 0; i < RUNS; i++) {
    const phone = await startPhone();
    if (i === 0) await load({ ...target, seconds: 2 });
    connected.push(await load(target));
    await stopPhone(phone);
    alone.push(await load(target));
  }
  clearInterval(sampler);
  const reader = new Database(join(dataDir, "pigeon.db"), { readonly: true });
  const count = (status: string) =>
    reader
      .query<{ n: number }, [number]>(`SELECT count(*) AS n FROM notification WHERE device_id = ? AND status IN (${status})`)
      .get(device)!.n;
  const sent = count("'sent', 'delivered'");
  const waiting = count("'pending'");
  reader.close();
  await stop(server);
  const median = (runs: Load[]) => [...runs].sort((a, b) => a.rps - b.rps)[Math.floor(runs.length / 2)];
  const result = {
    backlog,
    connected: median(connected),
    alone: median(alone),
    connectedRuns: connected.map((r) => r.rps),
    aloneRuns: alone.map((r) => r.rps),
    peakRss,
    sent,
    waiting,
  };
  log(
    `phone with a ${backlog} backlog: connected ${Math.round(result.connected.rps)} req/s (p99 ${result.connected.p99.toFixed(1)} ms), ` +
      `stopped ${Math.round(result.alone.rps)} req/s (p99 ${result.alone.p99.toFixed(1)} ms): ${Math.round((100 * result.connected.rps) / result.alone.rps)}%; ` +
      `the phone sent ${sent}, ${waiting} waiting; RSS at most ${peakRss} MB`,
  );
  return result;
}

// ---------------------------------------------------------------------------------------------
// Where the time goes: the server run from source under Bun's sampling profiler, one load at a
// time, its summary kept in bench/profiles/ (BENCH_ONLY=profile; not part of the full run).

async function profileBench() {
  const out = join(ROOT, "bench", "profiles");
  mkdirSync(out, { recursive: true });
  const loads = [
    { name: "send", path: "/v1/api/sms/send", body: sendBody, setting: "a fresh data dir with a paired phone" },
    { name: "bulk", path: "/v1/api/sms/send/bulk", body: bulkBody, setting: "a fresh data dir with a paired phone" },
    {
      name: "send-varied",
      path: "/v1/api/sms/send",
      body: variedBody,
      setting: "a fresh data dir with a paired phone, each send to its own recipient",
    },
    {
      name: "bulk-distinct",
      path: "/v1/api/sms/send/bulk",
      body: distinctBulkBody,
      setting: "a fresh data dir with a paired phone, 100 distinct recipients a request",
    },
    {
      name: "phone",
      path: "/v1/api/sms/send",
      body: variedBody,
      setting: `a data dir whose simulated phone holds its event stream with ${PHONE_BACKLOG.toLocaleString("en-US")} messages waiting on it, sends to varied recipients`,
    },
  ];
  const only = process.env.BENCH_PROFILE?.split(",");
  for (const { name, path, body, setting } of loads.filter((l) => !only || only.includes(l.name))) {
    const dir = temp("pigeon-profile-");
    const command = profiledServe(dir, name);
    let r: Load;
    if (name === "phone") {
      const p = await phoneWithBacklog(PHONE_BACKLOG, command);
      const phone = await p.startPhone();
      await load({ ...p.target, seconds: 2 });
      r = await load(p.target);
      await p.stopPhone(phone);
      await stop(p.server);
    } else {
      const p = await preparedPigeon({}, command);
      const target = { url: `${p.server.url}${path}`, method: "POST", headers: auth(p.key), body, varied: body.includes("RECIPIENT") };
      await load({ ...target, seconds: 2 });
      r = await load(target);
      await stop(p.server);
    }
    writeProfile(
      out,
      dir,
      name,
      `POST ${path}`,
      `${setting}, a 2 s warm-up, then ${SECONDS} s of ${CONNECTIONS} connections (${Math.round(r.rps)} req/s under the profiler, p99 ${r.p99.toFixed(1)} ms)`,
    );
    log(`profile of ${path}: ${Math.round(r.rps)} req/s under the profiler; wrote bench/profiles/${name}.md`);
  }
  // The worker draining its backlog (BENCH_PROFILE=worker on SQLite, worker-postgres on one server
  // over a throwaway PostgreSQL cluster).
  for (const name of ["worker", "worker-postgres"].filter((n) => only?.includes(n))) {
    const dir = temp("pigeon-profile-");
    const command = profiledServe(dir, name);
    let pg: { url: string; keyFile: string; servers: number } | null = null;
    if (name === "worker-postgres") {
      const { postgresCluster } = await import("../test/helpers/postgres");
      const cluster = await postgresCluster({ durable: true });
      pg = { url: await cluster.createDatabase("worker"), keyFile: join(temp("pigeon-key-"), "pigeon.key"), servers: 1 };
    }
    const w = await workerBench(WORKER_COUNT, pg, command);
    logWorker(w, "under the profiler");
    const where = pg ? "one server on PostgreSQL" : "SQLite";
    writeProfile(
      out,
      dir,
      name,
      "the worker",
      `${where}, draining ${WORKER_COUNT.toLocaleString("en-US")} queued notifications (${Math.round(w.rate)} dispatches/s under the profiler)`,
    );
  }
}

/** `pigeon serve` from source under Bun's sampling profiler, its profile written into `dir` as `name`. */
function profiledServe(dir: string, name: string): string[] {
  return [
    process.execPath,
    "--cpu-prof",
    "--cpu-prof-md",
    `--cpu-prof-dir=${dir}`,
    `--cpu-prof-name=${name}.cpuprofile`,
    join(ROOT, "src", "main.ts"),
    "serve",
  ];
}

/** Writes a profile's summary into bench/profiles/. */
function writeProfile(out: string, dir: string, name: string, what: string, setting: string) {
  const md = readFileSync(join(dir, `${name}.cpuprofile.md`), "utf8").replaceAll(`${ROOT}/`, "");
  const summary = [
    `# Profile: ${what}`,
    "",
    `Written by \`BENCH_ONLY=profile npm run bench\`: \`bun --cpu-prof --cpu-prof-md src/main.ts serve\` on ${setting}. ` +
      "The samples also cover start-up and the idle moments around the load: a line with a large self time from a single sample " +
      "(the scheduler's or a task's) is idle time, not work. `get`, `run`, `all` and `values` are bun:sqlite's statements running in SQLite.",
    "",
    ...trimmedProfile(md),
  ];
  writeFileSync(join(out, `${name}.md`), `${summary.join("\n")}\n`);
  // BENCH_PROFILE_KEEP=dir keeps the whole profile (for Chrome's DevTools or a closer look).
  // (With --cpu-prof-md beside it, Bun names the profile itself `<name>.cpuprofile.cpuprofile`.)
  if (process.env.BENCH_PROFILE_KEEP)
    copyFileSync(join(dir, `${name}.cpuprofile.cpuprofile`), join(process.env.BENCH_PROFILE_KEEP, `${name}.cpuprofile`));
}

/** The profiler's summary, its hot-function and call-tree tables cut to their top 40 rows. */
function trimmedProfile(md: string): string[] {
  const [preamble, ...sections] = md.split(/^(?=## )/m);
  const kept = sections.filter((section) => /^## (Hot Functions|Call Tree)/.test(section));
  const cut = (section: string) => {
    const lines = section.trimEnd().split("\n");
    const firstRow = lines.findIndex((l) => l.startsWith("|---")) + 1;
    return [...lines.slice(0, firstRow + 40), ""];
  };
  return [
    ...preamble
      .replace(/^# .*\n/, "")
      .trim()
      .split("\n"),
    "",
    ...kept.flatMap(cut),
  ];
}

function logWorker(worker: Awaited<ReturnType<typeof workerBench>>, where = "") {
  log(
    `worker${where ? ` on postgres, ${where}` : ""}: ${Math.round(worker.rate)} dispatches/s (${worker.count - worker.left} of ${worker.count} in ${worker.seconds.toFixed(1)} s); ` +
      `${Math.round(worker.drainRate)}/s once dispatching; ` +
      `busiest number peaked at ${worker.peak}/s against a pace of ${worker.perNumber}/s`,
  );
}

type Growth = { size: number; bytesPer: number; list: Load; stats: Load; send: Load; rss: number | null };

/** The same measures at 10,000 to 1,000,000 stored notifications (rows written while stopped). */
async function growthBench(): Promise<Growth[]> {
  const g = await preparedPigeon();
  const headers = auth(g.key);
  await stop(g.server);
  const growth: Growth[] = [];
  for (const size of SIZES) {
    seedNotifications(g.dataDir, size);
    const bytesPer = dbBytes(g.dataDir) / size;
    const running = await startPigeon(g.dataDir);
    // Reads are timed one at a time (a caller's latency); 32 at once would time the queue before them.
    const list = await measure(`${size} stored: GET notification list, 1 connection`, {
      url: `${running.url}/v1/api/notification/list?limit=20`,
      headers,
      connections: 1,
    });
    const stats = await measure(`${size} stored: GET stats (month), 1 connection`, {
      url: `${running.url}/v1/api/stats/notifications?period=month`,
      headers,
      connections: 1,
    });
    const sendAt = await measure(`${size} stored: send`, {
      url: `${running.url}/v1/api/sms/send`,
      method: "POST",
      headers,
      body: sendBody,
    });
    growth.push({ size, bytesPer, list, stats, send: sendAt, rss: rssMb(running.proc.pid) });
    await stop(running);
    // The sends above added rows: the next size counts them.
  }
  return growth;
}

// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// PostgreSQL (in the full run where PostgreSQL is installed, written into RESULTS.md; alone with
// BENCH_ONLY=postgres, or BENCH_ONLY=postgres-worker for the worker's part): a throwaway cluster with
// PostgreSQL's defaults (fsync and synchronous_commit on); the bare limit of Bun + postgres.js
// inserting the same row, one transaction per request as each send is; then Pigeon's single send
// and bulk on one server, and on two servers sharing the database, each driven by its own load;
// then the worker draining a backlog, on one server and on two.

async function postgresBench() {
  const { postgresCluster } = await import("../test/helpers/postgres");
  const pg = await postgresCluster({ durable: true });
  // BENCH_ONLY=postgres-worker: the worker's part alone.
  const sends = ONLY?.has("postgres-worker") && !ONLY.has("postgres") ? null : await postgresSends(pg);
  // Each on a database and a key file of its own.
  const drain = async (servers: number) =>
    workerBench(WORKER_COUNT, {
      url: await pg.createDatabase("worker"),
      keyFile: join(temp("pigeon-key-"), "pigeon.key"),
      servers,
      dataDir: pg.dataDir,
    });
  const worker1 = await drain(1);
  logWorker(worker1, "one server");
  const worker2 = await drain(2);
  logWorker(worker2, "two servers");
  if (sends) {
    const pct = (x: number) => `${Math.round((x / sends.base) * 100)} %`;
    log(
      `postgres: single send ${Math.round(sends.send)} req/s (${pct(sends.send)} of the baseline), two servers ${Math.round(sends.send2)} (${pct(sends.send2)}); ` +
        `bulk ${Math.round(sends.bulk * 100)} notifications/s, two servers ${Math.round(sends.bulk2 * 100)}`,
    );
  }
  const result = { ...sends, worker1, worker2 };
  const m = capacityModel(result);
  if (m)
    log(
      `capacity: a message ${m.pigeonMs.toFixed(3)} ms in Pigeon, ${m.postgresMs.toFixed(3)} ms in PostgreSQL; 10M a day at ${Math.round(m.peak)}/s peak: ` +
        `${m.replicas} replicas, ${m.postgresCores} PostgreSQL cores, ${Math.round(m.gb90)} GB for 90 days; this machine predicted ${Math.round(m.predictedTwo)}/s, measured ${Math.round(m.measuredTwo)}/s`,
    );
  return result;
}

/**
 * PostgreSQL's own ceiling on this machine for what Pigeon asks of it, without Pigeon: pgbench
 * (Debian's package has it beside the server) with 32 clients, as the HTTP runs have 32
 * connections, running the statements a send and a dispatch run, on the database the sends just
 * used (its workspace 1, key 1 and device 1, and the rows they stored). Each figure is a ceiling
 * for the same work done through Pigeon, whose own CPU shares the same cores.
 */
async function postgresCeilings(url: string): Promise<Record<string, number> | null> {
  const { postgresBin } = await import("../test/helpers/postgres");
  const bin = postgresBin();
  const pgbench = bin ? join(bin, "pgbench") : null;
  if (!pgbench || !existsSync(pgbench)) return null;
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  await sql`CREATE TABLE IF NOT EXISTS bench_message (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, recipient text NOT NULL, body text NOT NULL, created_at bigint NOT NULL)`;
  const [{ top }] = await sql`SELECT coalesce(max(id), 0)::int AS top FROM notification`;
  await sql.end();
  const now = Date.now();
  const second = "floor(extract(epoch from now()))::bigint";
  const notification = `INSERT INTO notification (workspace_id, api_key_id, delivery_type, route, device_id, recipient, message, status, stage,
    next_attempt_at, segments, cost, external_id, priority, with_delivery_report, created_at, updated_at)
    VALUES (1, 1, 'sms', 'sms', 1, '+14155552671', 'Your order is ready for pickup.', 'pending', 'queued', ${now}, 1, 0, md5(random()::text), 0, 1, ${now}, ${now}) RETURNING id \\gset`;
  const scripts: Record<string, string> = {
    "the baseline's insert": `INSERT INTO bench_message (recipient, body, created_at) VALUES ('+14155552671', 'Your order is ready for pickup.', ${now});`,
    // pgbench reads ':name' as a variable anywhere in a line, so the buckets are named without colons.
    "a send's admission (pigeon_admit, one key)": `SELECT admitted FROM pigeon_admit(ARRAY['authbench', 'keybenchm', 'keybenchd'], ARRAY[${second}, ${second}, 1], ARRAY[${second} - 60, ${second} - 60, 1], ARRAY[20, 1000000000, 1000000000]::bigint[], ARRAY[${now + 86_400_000}, ${now + 86_400_000}, ${now + 86_400_000}]::bigint[], ARRAY[0, 1, 1]);`,
    "a send's rows (notification and log line, one transaction)": `BEGIN;\n${notification.replace(/\s+/g, " ")}\nINSERT INTO notification_log (notification_id, at, event, status) VALUES (:id, ${now}, 'accepted', 'pending');\nCOMMIT;`,
    // As a bulk request of 100 distinct recipients writes them (Pigeon's thread rows come later, in
    // the worker's catch-up): the rate is in notifications, a transaction's 100.
    "a bulk request's rows (100 notifications and their log lines, one transaction), in notifications": `BEGIN;\nWITH n AS (${notification
      .replace(/\s+/g, " ")
      .replace(" RETURNING id \\gset", "")
      .replace("VALUES (1, 1,", "SELECT 1, 1,")
      .replace("'+14155552671'", "'+1415' || lpad((random() * 9999999)::int::text, 7, '0')")
      .replace(
        /\)$/,
        " FROM generate_series(1, 100)",
      )} RETURNING id)\nINSERT INTO notification_log (notification_id, at, event, status) SELECT id, ${now}, 'accepted', 'pending' FROM n;\nCOMMIT;`,
    "a dispatch's writes, one at a time (claim; status, provider id and log line)": `\\set id random(1, ${Math.max(1, top)})\nUPDATE notification SET stage = 'dispatching', attempts = attempts + 1, dispatched_at = ${now}, updated_at = ${now}, claimed_by = 'bench' WHERE id = :id;\nBEGIN;\nUPDATE notification SET external_id = md5(random()::text), status = 'sent', stage = 'done', sent_at = ${now}, updated_at = ${now} WHERE id = :id;\nINSERT INTO notification_log (notification_id, at, event, status) VALUES (:id, ${now}, 'sent', 'sent');\nCOMMIT;`,
  };
  const out: Record<string, number> = {};
  const dir = temp("pigeon-pgbench-");
  for (const [name, script] of Object.entries(scripts)) {
    const file = join(dir, `${Object.keys(out).length}.sql`);
    writeFileSync(file, `${script}\n`);
    const r = Bun.spawnSync([pgbench, "-n", "-M", "prepared", "-c", "32", "-j", "2", "-T", "5", "-f", file, url], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const tps = /tps = ([\d.]+)/.exec(r.stdout.toString());
    if (!tps) throw new Error(`pgbench (${name}): ${r.stderr.toString().slice(0, 500)}`);
    out[name] = Number(tps[1]) * (name.endsWith("in notifications") ? 100 : 1);
    log(`postgres alone (pgbench, 32 clients): ${name}: ${Math.round(out[name])}/s`);
  }
  return out;
}

/** The baseline, then single send and bulk on one server and on two. */
async function postgresSends(pg: { createDatabase(prefix?: string): Promise<string>; dataDir: string }) {
  const baseProc = Bun.spawn([process.execPath, join(ROOT, "bench", "baseline-pg.ts")], {
    env: { ...process.env, DATABASE_URL: await pg.createDatabase("baseline") },
    stdout: "pipe",
    stderr: "pipe",
  });
  children.push(baseProc);
  const baseOut = collect(baseProc);
  const port = (await waitForLine(baseOut, /listening on (\d+)/, "postgres baseline", baseProc))[1];
  const base = await measure("postgres baseline: Bun + postgres.js, one insert a request", {
    url: `http://127.0.0.1:${port}/send`,
    method: "POST",
    body: sendBody,
  });
  await stop({ proc: baseProc, output: baseOut, url: "" });

  const extra = { PIGEON_DATABASE_URL: await pg.createDatabase("bench"), PIGEON_KEY_FILE: join(temp("pigeon-key-"), "pigeon.key") };
  const p = await preparedPigeon(extra);
  const headers = auth(p.key);
  const target = (url: string, path: string, body: string): Target => ({
    url: url + path,
    method: "POST",
    headers,
    body,
    varied: body.includes("RECIPIENT"),
  });
  const send = await measure("pigeon on postgres, one server: POST /v1/api/sms/send", target(p.server.url, "/v1/api/sms/send", sendBody));
  const bulk = await measure(
    "pigeon on postgres, one server: bulk, 100 a request",
    target(p.server.url, "/v1/api/sms/send/bulk", bulkBody),
  );

  const second = await startPigeon(temp("pigeon-bench-"), extra);
  /** CPU milliseconds one item (a send, a bulk's message) cost in the servers and in PostgreSQL, by what was sent. */
  const costs: Record<string, { pigeonMs: number; postgresMs: number }> = {};
  /** Both servers loaded at once, each by its own generator; the sum of their rates, median of RUNS. */
  const both = async (label: string, path: string, body: string, items = 1) => {
    const targets = [target(p.server.url, path, body), target(second.url, path, body)];
    await Promise.all(targets.map((t) => load({ ...t, seconds: 2 })));
    const sums: number[] = [];
    const pids = [p.server.proc.pid, second.proc.pid];
    const from = { pigeon: cpuSeconds(pids), postgres: postgresCpuSeconds(pg.dataDir) };
    let requests = 0;
    for (let i = 0; i < RUNS; i++) {
      const runs = await Promise.all(targets.map((t) => load(t)));
      sums.push(runs.reduce((n, r) => n + r.rps, 0));
      requests += runs.reduce((n, r) => n + r.requests, 0);
    }
    const per = Math.max(1, requests * items);
    costs[label] = {
      pigeonMs: (1000 * (cpuSeconds(pids) - from.pigeon)) / per,
      postgresMs: (1000 * (postgresCpuSeconds(pg.dataDir) - from.postgres)) / per,
    };
    const median = [...sums].sort((a, b) => a - b)[Math.floor(RUNS / 2)];
    log(
      `${label}: ${Math.round(median)} req/s together (runs ${sums.map(Math.round).join(", ")}); ` +
        `CPU an item: ${costs[label].pigeonMs.toFixed(3)} ms in the servers, ${costs[label].postgresMs.toFixed(3)} ms in PostgreSQL`,
    );
    return median;
  };
  const send2 = await both("pigeon on postgres, two servers: POST /v1/api/sms/send", "/v1/api/sms/send", sendBody);
  const bulk2 = await both("pigeon on postgres, two servers: bulk, 100 a request", "/v1/api/sms/send/bulk", bulkBody, 100);
  const sendVaried2 = await both(
    "pigeon on postgres, two servers: POST /v1/api/sms/send, varied recipients",
    "/v1/api/sms/send",
    variedBody,
  );
  const bulkDistinct2 = await both(
    "pigeon on postgres, two servers: bulk, 100 distinct recipients a request",
    "/v1/api/sms/send/bulk",
    distinctBulkBody,
    100,
  );
  await stop(second);
  await stop(p.server);
  // What a stored message takes on disk: the whole database (rows, indexes, logs, threads) over its messages.
  const sql = postgres(extra.PIGEON_DATABASE_URL, { max: 1, onnotice: () => {} });
  const [size] = await sql`SELECT pg_database_size(current_database())::bigint AS bytes, (SELECT count(*) FROM notification)::bigint AS n`;
  await sql.end();
  const bytesPerMessage = Number(size.bytes) / Math.max(1, Number(size.n));
  const ceilings = await postgresCeilings(extra.PIGEON_DATABASE_URL);
  return {
    base: base.rps,
    send: send.rps,
    bulk: bulk.rps,
    send2,
    bulk2,
    sendVaried2,
    bulkDistinct2,
    ceilings,
    sendCost: costs["pigeon on postgres, two servers: POST /v1/api/sms/send, varied recipients"],
    bulkItemCost: costs["pigeon on postgres, two servers: bulk, 100 distinct recipients a request"],
    bytesPerMessage,
  };
}

// ---------------------------------------------------------------------------------------------
// SMPP: submit_sm over one transceiver bind with a window of 10 (bench/smpp-esme.ts, a process of
// its own), against the HTTP send on the same server in the same run; then Kannel in front (its
// smsbox's sendsms under wrk, bearerbox bound to Pigeon), where what counts is the rate Pigeon
// stored what Kannel took, Kannel's own accept rate beside it.

async function smppBench() {
  const port = (() => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const free = probe.port;
    probe.stop(true);
    return free;
  })();
  const p = await preparedPigeon({ PIGEON_SMPP_PORT: String(port) });
  const creds = JSON.parse(cli(p.dataDir, ["smpp", "credentials", "--json"])) as { system_id: string; password: string };
  const http = await measure("pigeon: POST /v1/api/sms/send, varied recipients (the SMPP run's server)", {
    url: `${p.server.url}/v1/api/sms/send`,
    method: "POST",
    headers: auth(p.key),
    body: variedBody,
    varied: true,
  });
  const esme = async (seconds: number, window = 10) => {
    const proc = Bun.spawn([process.execPath, join(ROOT, "bench", "smpp-esme.ts")], {
      env: {
        ...process.env,
        PORT: String(port),
        SYSTEM_ID: creds.system_id,
        PASSWORD: creds.password,
        SECONDS: String(seconds),
        WINDOW: String(window),
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = await new Response(proc.stdout).text();
    await proc.exited;
    const m = /RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+) ([\d.]+)/.exec(out);
    if (!m) throw new Error(`the ESME said: ${out} ${await new Response(proc.stderr).text()}`);
    const [ok, refused, secs, p50, p95, p99] = m.slice(1).map(Number);
    return { rps: ok / secs, errors: refused, p50, p95, p99, requests: ok };
  };
  await esme(2);
  const runs: Load[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await esme(SECONDS));
  const submit = [...runs].sort((a, b) => a.rps - b.rps)[1];
  log(
    `pigeon: submit_sm over one bind, window 10: ${Math.round(submit.rps)}/s, p50 ${submit.p50.toFixed(2)} ms, p99 ${submit.p99.toFixed(2)} ms ` +
      `(runs ${runs.map((r) => Math.round(r.rps)).join(", ")}; refused ${runs.reduce((n, r) => n + r.errors, 0)}); ${((100 * submit.rps) / http.rps).toFixed(0)}% of the HTTP send`,
  );

  // The same bind with the window HTTP has connections: what the window, not the path, costs.
  const wide = await esme(SECONDS, CONNECTIONS);
  log(
    `pigeon: submit_sm over one bind, window ${CONNECTIONS}: ${Math.round(wide.rps)}/s, p50 ${wide.p50.toFixed(2)} ms, p99 ${wide.p99.toFixed(2)} ms`,
  );

  type InFront = { accepted: Load; stored: number; seconds: number; window: number };
  const { BEARERBOX, startKannel } = await import("../test/helpers/kannel");
  /** Kannel in front with `window` submits outstanding on its bind (its max-pending-submits). */
  const inFront = async (window: number): Promise<InFront> => {
    const k = await startKannel({ smppPort: port, systemId: creds.system_id, password: creds.password, window });
    try {
      for (let i = 0; i < 200 && !(await k.online()); i++) await Bun.sleep(50);
      const count = () => {
        const db = new Database(join(p.dataDir, "pigeon.db"), { readonly: true });
        const n = db.query<{ n: number }, []>("SELECT count(*) AS n FROM notification").get()!.n;
        db.close();
        return n;
      };
      const before = count();
      const t0 = performance.now();
      const accepted = await load({ url: `${k.sendsmsUrl}&to=RECIPIENT&text=Your+order+is+ready+for+pickup.`, varied: true });
      // Kannel queues what it accepted: wait until Pigeon has stored all of it (or stops gaining).
      let last = -1;
      for (let n = count(); n - before < accepted.requests && n !== last; n = count()) {
        last = n;
        await Bun.sleep(1000);
      }
      const stored = count() - before;
      const seconds = (performance.now() - t0) / 1000 - 1;
      log(
        `kannel in front, max-pending-submits ${window}: sendsms accepted ${Math.round(accepted.rps)} req/s (p99 ${accepted.p99.toFixed(2)} ms, errors ${accepted.errors}); ` +
          `Pigeon stored ${stored} of ${accepted.requests} at ${Math.round(stored / seconds)}/s (${((100 * stored) / seconds / http.rps).toFixed(0)}% of the HTTP send)`,
      );
      return { accepted, stored, seconds, window };
    } finally {
      await k.stop();
    }
  };
  let kannel: InFront | null = null;
  let kannelWide: InFront | null = null;
  if (existsSync(BEARERBOX)) {
    kannel = await inFront(10);
    // docs/smpp.md's configuration: Kannel may keep as many submits outstanding as Pigeon's window.
    kannelWide = await inFront(64);
  } else log("kannel in front: not measured (apt-get install kannel)");
  await stop(p.server);
  return { http, submit, wide, kannel, kannelWide };
}

// Kannel side by side (issue 46): Debian's Kannel alone, bearerbox with its store file and its own
// fake SMSC (kannel-extras' fakesmsc), its smsbox's sendsms under the same wrk load as Pigeon's
// single send (each request to its own recipient), at 32 connections and at 4; then Pigeon's
// varied send on a fresh data dir with a paired phone, at the same two. What reached Kannel's
// SMSC during each run is counted from fakesmsc's log. Kannel's store is written without an
// fsync; Pigeon answers after its commit is on disk.
async function kannelBench() {
  const { BEARERBOX, FAKESMSC, startKannel } = await import("../test/helpers/kannel");
  if (!existsSync(BEARERBOX) || !existsSync(FAKESMSC)) {
    log("kannel: not measured (apt-get install kannel kannel-extras)");
    return null;
  }
  const median = (runs: Load[]) => [...runs].sort((a, b) => a.rps - b.rps)[Math.floor(runs.length / 2)];
  const at = async (connections: number) => {
    const k = await startKannel({ fakeSmsc: true });
    let kannel: Load & { delivered: number };
    try {
      for (let i = 0; i < 200 && !(await k.online()); i++) await Bun.sleep(50);
      if (!(await k.online())) throw new Error(`Kannel did not come online: ${k.logs()}`);
      const target = { url: `${k.sendsmsUrl}&to=RECIPIENT&text=Your+order+is+ready+for+pickup.`, varied: true, connections };
      await load({ ...target, seconds: 2 });
      const runs: (Load & { delivered: number })[] = [];
      for (let i = 0; i < RUNS; i++) {
        const before = k.delivered();
        const run = await load(target);
        runs.push({ ...run, delivered: (k.delivered() - before) / SECONDS });
      }
      kannel = median(runs) as Load & { delivered: number };
      log(
        `kannel alone, ${connections} connections: sendsms ${Math.round(kannel.rps)} req/s, p50 ${kannel.p50.toFixed(2)} ms, p99 ${kannel.p99.toFixed(2)} ms ` +
          `(runs ${runs.map((r) => Math.round(r.rps)).join(", ")}; errors ${runs.reduce((n, r) => n + r.errors, 0)}); ${Math.round(kannel.delivered)}/s reached its SMSC`,
      );
    } finally {
      await k.stop();
    }
    const p = await preparedPigeon();
    const pigeon = await measure(`pigeon: POST /v1/api/sms/send, varied recipients, ${connections} connections`, {
      url: `${p.server.url}/v1/api/sms/send`,
      method: "POST",
      headers: auth(p.key),
      body: variedBody,
      varied: true,
      connections,
    });
    await stop(p.server);
    log(
      `pigeon vs kannel, ${connections} connections: ${(pigeon.rps / kannel.rps).toFixed(2)}x the rate; p99 ${pigeon.p99.toFixed(2)} against ${kannel.p99.toFixed(2)} ms`,
    );
    return { connections, kannel, pigeon };
  };
  return [await at(CONNECTIONS), await at(4)];
}

/**
 * A thousand phones on one server (bench/swarm.ts): on SQLite, then on two PostgreSQL replicas
 * with the phones split between them where PostgreSQL is installed. BENCH_SWARM_PHONES sets how many.
 */
async function swarmPart() {
  const { swarmBench } = await import("./swarm");
  const phones = Number(process.env.BENCH_SWARM_PHONES ?? 1000);
  const sqlite = await swarmBench({ bin: BIN, phones, seconds: SECONDS, log });
  const { postgresBin } = await import("../test/helpers/postgres");
  let pg: Awaited<ReturnType<typeof swarmBench>> | null = null;
  if (postgresBin()) {
    const { postgresCluster } = await import("../test/helpers/postgres");
    const cluster = await postgresCluster({ durable: true });
    pg = await swarmBench({
      bin: BIN,
      phones,
      seconds: SECONDS,
      log,
      backend: { databaseUrl: await cluster.createDatabase("swarm"), replicas: 2 },
    });
  }
  for (const r of [sqlite, pg]) {
    if (!r) continue;
    log(
      `swarm, ${r.backend} (${r.servers} server${r.servers === 1 ? "" : "s"}): ${r.phones.connected} of ${r.phones.asked} phones connected; ` +
        `${r.rssPerPhoneKb.toFixed(0)} KB a phone; idle CPU ${r.idleCpuPercent.total.toFixed(1)}%; MessageEnqueued p99 ${r.latencyMs.fromAnswer.p99.toFixed(0)} ms after the answer; ` +
        `sends with all connected ${Math.round(r.sendRate.pool.all.rps)} of ${Math.round(r.sendRate.pool.none.rps)} req/s through pools (${Math.round(100 * r.sendRate.pool.ratio)}%), ` +
        `${Math.round(r.sendRate.named.all.rps)} of ${Math.round(r.sendRate.named.none.rps)} naming a phone (${Math.round(100 * r.sendRate.named.ratio)}%)`,
    );
  }
  return { sqlite, pg };
}

async function main() {
  log("building the binary");
  const build = Bun.spawnSync([process.execPath, "run", "build"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
  if (build.exitCode !== 0) process.exit(build.exitCode ?? 1);
  const versions = {
    pigeon: cli(temp("pigeon-version-"), ["--version"]).trim(),
    bun: Bun.version,
    generator: WRK ? Bun.spawnSync([WRK, "-v"]).stdout.toString().split("\n")[0].trim() || "wrk" : "autocannon",
  };
  log(`${versions.pigeon}, Bun ${versions.bun}, ${versions.generator}`);

  // 1. Start-up and idle memory, on a fresh data dir each time.
  const startups: number[] = [];
  const idle: number[] = [];
  for (let i = 0; part("start") && i < RUNS; i++) {
    const dataDir = temp("pigeon-start-");
    cli(dataDir, ["migrate"]);
    const t0 = performance.now();
    const proc = Bun.spawn([BIN, "serve"], {
      env: pigeonEnv(dataDir, { PIGEON_PORT: String(18_000 + i) }),
      stdout: "ignore",
      stderr: "ignore",
    });
    children.push(proc);
    for (;;) {
      try {
        if ((await fetch(`http://127.0.0.1:${18_000 + i}/health`)).ok) break;
      } catch {
        // not listening yet
      }
      await Bun.sleep(2);
    }
    startups.push(performance.now() - t0);
    await Bun.sleep(2000);
    idle.push(rssMb(proc.pid) ?? 0);
    proc.kill("SIGTERM");
    await proc.exited;
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  if (part("start")) log(`start-up to first answer ${median(startups).toFixed(0)} ms; idle RSS ${median(idle)} MB`);
  if (ONLY?.has("profile")) {
    await profileBench();
    cleanup();
    return;
  }
  if (!part("accept") || !part("worker") || !part("growth") || !part("phone") || !part("smpp") || !part("kannel") || !part("swarm")) {
    if (part("swarm")) await swarmPart();
    if (part("kannel")) await kannelBench();
    if (part("accept")) await acceptBench();
    if (part("smpp")) await smppBench();
    if (part("phone")) await phoneBench(PHONE_BACKLOG);
    if (part("worker")) logWorker(await workerBench(WORKER_COUNT));
    if (part("growth")) await growthBench();
    if (ONLY?.has("postgres") || ONLY?.has("postgres-worker")) await postgresBench();
    cleanup();
    return;
  }

  const accept = await acceptBench();
  const smpp = await smppBench();
  const kannel = await kannelBench();
  const swarm = await swarmPart();
  const phone = await phoneBench(PHONE_BACKLOG);
  const worker = await workerBench(WORKER_COUNT);
  logWorker(worker);
  const growth = await growthBench();
  // PostgreSQL where it is installed (Debian's package); the section says so when it is not.
  const { postgresBin } = await import("../test/helpers/postgres");
  const onPostgres = postgresBin() ? await postgresBench() : null;
  writeResults({
    versions,
    startups: median(startups),
    idle: median(idle),
    ...accept,
    smpp,
    kannel,
    swarm,
    phone,
    worker,
    growth,
    postgres: onPostgres,
  });
  cleanup();
}

/**
 * The capacity model past two cores (issue 46), from the CPU a message cost in this run: one accept
 * (a single send, the dearer way in) and one dispatch, in the servers' processes and in
 * PostgreSQL's. 10 million messages a day, most of them in a 12-hour business day with its busiest
 * hour at twice that day's mean: 463 a second at the peak. A replica is one event loop, planned at
 * 70% of a core; PostgreSQL's cores at 70% too. The database holds what retention keeps: 30 and
 * 90 days. The same figures predict what two servers on this machine's two cores, shared with
 * PostgreSQL and the load generator, can take: the check against the run's two-server figure.
 */
function capacityModel(r: Awaited<ReturnType<typeof postgresBench>> | null) {
  if (!r?.sendCost || !r.bulkItemCost || !r.bytesPerMessage) return null;
  const perDay = 10_000_000;
  const peak = (perDay / (12 * 3600)) * 2;
  const pigeonMs = r.sendCost.pigeonMs + r.worker2.cpu.pigeonMs;
  const postgresMs = r.sendCost.postgresMs + r.worker2.cpu.postgresMs;
  const replicas = Math.ceil((peak * pigeonMs) / 1000 / 0.7);
  const postgresCores = Math.ceil((peak * postgresMs) / 1000 / 0.7);
  const gb = (days: number) => (r.bytesPerMessage! * perDay * days) / 1e9;
  // Two cores, all of them busy, shared by everything in the run: the sends alone (no dispatch).
  const predictedTwo = 2000 / (r.sendCost.pigeonMs + r.sendCost.postgresMs);
  return {
    perDay,
    peak,
    pigeonMs,
    postgresMs,
    replicas,
    postgresCores,
    gb30: gb(30),
    gb90: gb(90),
    predictedTwo,
    measuredTwo: r.sendVaried2!,
  };
}

function capacitySection(r: Awaited<ReturnType<typeof postgresBench>> | null, n: (x: number) => string): string[] {
  const m = capacityModel(r);
  if (!m || !r?.sendCost || !r.bulkItemCost)
    return ["## Capacity past two cores", "", "Not measured: PostgreSQL is not installed on this machine.", ""];
  const ms = (x: number) => `${x.toFixed(3)} ms`;
  return [
    "## Capacity past two cores",
    "",
    "CPU time from /proc (user and system, every thread) over the two-server PostgreSQL runs above: the servers' processes, and " +
      "PostgreSQL's postmaster with every backend (those that ended counted through the postmaster). Divided by what was done in those runs.",
    "",
    "| work | in Pigeon's processes | in PostgreSQL's |",
    "|---|---|---|",
    `| a single send (varied recipients) | ${ms(r.sendCost.pigeonMs)} | ${ms(r.sendCost.postgresMs)} |`,
    `| a bulk item (100 distinct recipients a request) | ${ms(r.bulkItemCost.pigeonMs)} | ${ms(r.bulkItemCost.postgresMs)} |`,
    `| a dispatch (the worker, two servers) | ${ms(r.worker2.cpu.pigeonMs)} | ${ms(r.worker2.cpu.postgresMs)} |`,
    "",
    `**10 million messages a day.** Taken as a 12-hour business day whose busiest hour runs at twice its mean: ${n(m.peak)} messages a second at the peak, ` +
      `each one accept (a single send, the dearer way in) and one dispatch: ${ms(m.pigeonMs)} in Pigeon and ${ms(m.postgresMs)} in PostgreSQL. ` +
      `Planned at 70% of a core each: **${m.replicas} replica${m.replicas === 1 ? "" : "s"}** (one event loop each) and **${m.postgresCores} PostgreSQL core${m.postgresCores === 1 ? "" : "s"}** ` +
      `on their own machines. At ${n(r.bytesPerMessage!)} bytes a stored message (this run's database over its messages: rows, indexes, logs, threads), ` +
      `${n(m.gb30)} GB for 30 days' retention, ${n(m.gb90)} GB for 90 (\`PIGEON_RETENTION_DAYS\`).`,
    "",
    `**Checked against this machine.** The same costs say two servers sharing these two cores with PostgreSQL would take ${n(m.predictedTwo)} single sends a second ` +
      `with every core busy (the load generator's share left out); the run measured ${n(m.measuredTwo)} (${Math.round((100 * m.measuredTwo) / m.predictedTwo)}%).`,
    "",
  ];
}

/** RESULTS.md's PostgreSQL section: each figure beside the baseline or the issue's target. */
function postgresSection(r: Awaited<ReturnType<typeof postgresBench>> | null, n: (x: number) => string): string[] {
  const head = ["## PostgreSQL", ""];
  if (!r?.send) return [...head, "Not measured: PostgreSQL is not installed on this machine (`apt-get install postgresql`).", ""];
  const pct = (x: number) => `${Math.round((100 * x) / r.base!)}%`;
  const worker = (w: typeof r.worker1) =>
    `${n(w.rate)} dispatches/s from the servers' start, ${n(w.drainRate)} once dispatching (${n(w.count - w.left)} of ${n(w.count)}; busiest number ${w.peak}/s against a pace of ${w.perNumber}/s)`;
  return [
    ...head,
    "A throwaway cluster of Debian's package with its defaults (fsync and synchronous_commit on) on this machine's disk. " +
      "The baseline (bench/baseline-pg.ts) is Bun.serve + JSON.parse + one insert of the same row through postgres.js, one transaction a request. " +
      "Two servers share the database and this machine's cores, each loaded by its own generator; their rate is the sum.",
    "",
    "| what | one server | two servers | issue's target |",
    "|---|---|---|---|",
    `| baseline | ${n(r.base!)} req/s | | |`,
    `| POST /v1/api/sms/send | ${n(r.send)} req/s (${pct(r.send)} of the baseline) | ${n(r.send2!)} req/s (${pct(r.send2!)}) | 40% of the baseline |`,
    `| bulk, 100 messages a request | ${n(r.bulk! * 100)} notifications/s | ${n(r.bulk2! * 100)} notifications/s | 20,000 notifications/s across two |`,
    `| POST /v1/api/sms/send, varied recipients | | ${n(r.sendVaried2!)} req/s (${pct(r.sendVaried2!)}) | 50% of the baseline (issue 28) |`,
    `| bulk, 100 distinct recipients a request | | ${n(r.bulkDistinct2! * 100)} notifications/s | 25,000 notifications/s across two (issue 28) |`,
    `| worker | ${worker(r.worker1)} | ${worker(r.worker2)} | 2,000 dispatches/s across servers |`,
    "",
    ...(r.ceilings
      ? [
          "PostgreSQL alone on the same machine, without Pigeon: pgbench with 32 clients running the statements each kind of work runs " +
            "(bench/run.ts, postgresCeilings), on the database the sends above used. Each is a ceiling for that work done through Pigeon, " +
            "whose own CPU shares the same cores.",
          "",
          "| statements | per second | of the baseline |",
          "|---|---|---|",
          ...Object.entries(r.ceilings).map(([name, tps]) => `| ${name} | ${n(tps)} | ${pct(tps)} |`),
          "",
        ]
      : []),
  ];
}

function writeResults(r: {
  versions: Record<string, string>;
  startups: number;
  idle: number;
  limit: Load;
  perRequest: Load;
  send: Load;
  bulk: Load;
  sendVaried: Load;
  bulkDistinct: Load;
  peakRss: number;
  loadRss: number | null;
  afterLoad: number;
  phone: Awaited<ReturnType<typeof phoneBench>>;
  smpp: Awaited<ReturnType<typeof smppBench>>;
  kannel: Awaited<ReturnType<typeof kannelBench>>;
  swarm: Awaited<ReturnType<typeof swarmPart>>;
  worker: Awaited<ReturnType<typeof workerBench>>;
  growth: Growth[];
  postgres: Awaited<ReturnType<typeof postgresBench>> | null;
}) {
  const pct = (x: number, of: number) => `${Math.round((100 * x) / of)}%`;
  const n = (x: number) => Math.round(x).toLocaleString("en-US");
  const ms = (x: number) => `${x.toFixed(2)} ms`;
  const cpu = cpus();
  const empty = r.send.rps;
  const lines = [
    "# Benchmark results",
    "",
    "Written by `npm run bench` (bench/run.ts). Every figure is the median of 3 runs of " +
      `${SECONDS} s after a 2 s warm-up, ` +
      `${CONNECTIONS} connections on ${THREADS} load-generator threads, against the compiled binary on a temp data dir; ` +
      "the baseline server (bench/baseline.ts) runs in the same run, so the ratios compare like with like.",
    "",
    "## Machine and versions",
    "",
    `- ${cpu.length} cores (${cpu[0]?.model ?? "unknown"}), ${Math.round(totalmem() / 1024 ** 3)} GB memory, Linux ${release()}`,
    `- ${r.versions.pigeon}, Bun ${r.versions.bun}, load generator: ${r.versions.generator}`,
    "",
    "## Accept path",
    "",
    "| what | rate | p50 | p99 | vs limit |",
    "|---|---|---|---|---|",
    `| limit: Bun.serve + JSON.parse + one insert (WAL, synchronous=FULL), one transaction per event-loop turn | ${n(r.limit.rps)} req/s | ${ms(r.limit.p50)} | ${ms(r.limit.p99)} | 100% |`,
    `| the same, one transaction per request | ${n(r.perRequest.rps)} req/s | ${ms(r.perRequest.p50)} | ${ms(r.perRequest.p99)} | ${pct(r.perRequest.rps, r.limit.rps)} |`,
    `| Pigeon POST /v1/api/sms/send, paired phone | ${n(r.send.rps)} req/s | ${ms(r.send.p50)} | ${ms(r.send.p99)} | ${pct(r.send.rps, r.limit.rps)} |`,
    `| Pigeon bulk, 100 messages a request | ${n(r.bulk.rps)} req/s = ${n(r.bulk.rps * 100)} notifications/s | ${ms(r.bulk.p50)} | ${ms(r.bulk.p99)} | ${pct(r.bulk.rps * 100, r.limit.rps)} (notifications) |`,
    `| Pigeon POST /v1/api/sms/send, each to its own recipient | ${n(r.sendVaried.rps)} req/s | ${ms(r.sendVaried.p50)} | ${ms(r.sendVaried.p99)} | ${pct(r.sendVaried.rps, r.limit.rps)} |`,
    `| Pigeon bulk, 100 distinct recipients a request | ${n(r.bulkDistinct.rps)} req/s = ${n(r.bulkDistinct.rps * 100)} notifications/s | ${ms(r.bulkDistinct.p50)} | ${ms(r.bulkDistinct.p99)} | ${pct(r.bulkDistinct.rps * 100, r.limit.rps)} (notifications) |`,
    "",
    `Errors or non-2xx answers: send ${r.send.errors}, bulk ${r.bulk.errors}, varied ${r.sendVaried.errors}, distinct bulk ${r.bulkDistinct.errors}. Every accepted send was committed (synchronous=FULL) before its answer.`,
    "",
    "Issue 28's targets on SQLite, held on what users send (varied recipients, distinct bulks):",
    "",
    "| target | measured | held |",
    "|---|---|---|",
    `| single send ≥ 50% of the limit | ${pct(r.sendVaried.rps, r.limit.rps)} | ${r.sendVaried.rps >= r.limit.rps / 2 ? "yes" : "no"} |`,
    `| single send p99 < 10 ms at ${CONNECTIONS} connections | ${ms(r.sendVaried.p99)} | ${r.sendVaried.p99 < 10 ? "yes" : "no"} |`,
    `| bulk of 100 distinct ≥ 1× the limit, in notifications | ${((r.bulkDistinct.rps * 100) / r.limit.rps).toFixed(2)}× | ${r.bulkDistinct.rps * 100 >= r.limit.rps ? "yes" : "no"} |`,
    `| RSS under load < 150 MB | ${r.peakRss} MB | ${r.peakRss < 150 ? "yes" : "no"} |`,
    `| RSS idle < 90 MB | ${r.idle} MB | ${r.idle < 90 ? "yes" : "no"} |`,
    "",
    "## SMPP",
    "",
    "submit_sm over one transceiver bind with a window of 10 (bench/smpp-esme.ts in a process of its own, each submit to its own recipient), " +
      "against the HTTP send to varied recipients on the same server in the same run (wrk, 32 connections); then Kannel in front: " +
      "its smsbox's sendsms under the same wrk load, bearerbox bound to Pigeon as docs/smpp.md configures it, with max-pending-submits 10 and 64.",
    "",
    "| what | rate | p50 | p99 | vs the HTTP send |",
    "|---|---|---|---|---|",
    `| HTTP POST /v1/api/sms/send, varied recipients | ${n(r.smpp.http.rps)} req/s | ${ms(r.smpp.http.p50)} | ${ms(r.smpp.http.p99)} | 100% |`,
    `| submit_sm, one bind, window 10 | ${n(r.smpp.submit.rps)}/s | ${ms(r.smpp.submit.p50)} | ${ms(r.smpp.submit.p99)} | ${pct(r.smpp.submit.rps, r.smpp.http.rps)} |`,
    `| submit_sm, one bind, window ${CONNECTIONS} (one run) | ${n(r.smpp.wide.rps)}/s | ${ms(r.smpp.wide.p50)} | ${ms(r.smpp.wide.p99)} | ${pct(r.smpp.wide.rps, r.smpp.http.rps)} |`,
    ...(r.smpp.kannel
      ? [
          `| Kannel's sendsms accepted (queued by Kannel) | ${n(r.smpp.kannel.accepted.rps)} req/s | ${ms(r.smpp.kannel.accepted.p50)} | ${ms(r.smpp.kannel.accepted.p99)} | |`,
          `| … stored by Pigeon through Kannel's bind | ${n(r.smpp.kannel.stored / r.smpp.kannel.seconds)}/s (${n(r.smpp.kannel.stored)} of ${n(r.smpp.kannel.accepted.requests)}) | | | ${pct(r.smpp.kannel.stored / r.smpp.kannel.seconds, r.smpp.http.rps)} |`,
          ...(r.smpp.kannelWide
            ? [
                `| … the same with Kannel's max-pending-submits 64 (docs/smpp.md) | ${n(r.smpp.kannelWide.stored / r.smpp.kannelWide.seconds)}/s (${n(r.smpp.kannelWide.stored)} of ${n(r.smpp.kannelWide.accepted.requests)}) | | | ${pct(r.smpp.kannelWide.stored / r.smpp.kannelWide.seconds, r.smpp.http.rps)} |`,
              ]
            : []),
        ]
      : ["| Kannel in front | not measured: Kannel is not installed | | | |"]),
    "",
    "## Beside Kannel",
    "",
    "Debian's Kannel alone on the same machine in the same run: bearerbox with its store file and its own fake SMSC (kannel-extras' fakesmsc), " +
      "its smsbox's sendsms under the same wrk load as Pigeon's single send, each request to its own recipient; Pigeon on a fresh data dir with a paired phone. " +
      "Kannel's store is written without an fsync; Pigeon answers after its commit is on disk.",
    "",
    "| connections | Kannel sendsms | its p99 | reached its SMSC | Pigeon POST /v1/api/sms/send | its p99 | Pigeon vs Kannel |",
    "|---|---|---|---|---|---|---|",
    ...(r.kannel
      ? r.kannel.map(
          (k) =>
            `| ${k.connections} | ${n(k.kannel.rps)} req/s | ${ms(k.kannel.p99)} | ${n(k.kannel.delivered)}/s | ${n(k.pigeon.rps)} req/s | ${ms(k.pigeon.p99)} | ${(k.pigeon.rps / k.kannel.rps).toFixed(2)}× |`,
        )
      : ["| | not measured: Kannel (kannel, kannel-extras) is not installed | | | | | |"]),
    "",
    "## A thousand phones on one server",
    "",
    "bench/swarm.ts: one process plays the phones, each paired with the workspace's token, holding its event stream, pulling and reporting at the app's pace " +
      "(Processed, Sent, Delivered, and the app's sms:sent and sms:delivered webhooks). The send rate is wrk on POST /v1/api/sms/send with the phones connected and working, against the same server with them gone.",
    "",
    "| back end | phones connected | RSS a phone | idle CPU, all connected | MessageEnqueued after the answer, p99 | sends with all connected vs none (pools / naming a phone) | issue's targets |",
    "|---|---|---|---|---|---|---|",
    ...[r.swarm.sqlite, r.swarm.pg].flatMap((w) =>
      w
        ? [
            `| ${w.backend}, ${w.servers} server${w.servers === 1 ? "" : "s"} | ${n(w.phones.connected)} of ${n(w.phones.asked)} | ${n(w.rssPerPhoneKb)} KB | ${w.idleCpuPercent.total.toFixed(1)}% of a core | ${n(w.latencyMs.fromAnswer.p99)} ms | ${pct(w.sendRate.pool.all.rps, w.sendRate.pool.none.rps)} / ${pct(w.sendRate.named.all.rps, w.sendRate.named.none.rps)} | p99 ≤ 1 s; sends ≥ 90% |`,
          ]
        : [],
    ),
    "",
    "## A campaign through a paced phone",
    "",
    `Single sends, each to its own recipient, while \`pigeon simulate-phone --delay 0\` holds its event stream with ${n(r.phone.backlog)} messages ` +
      "waiting on it (the phone's pacing lets 20 a minute out), against the same server and backlog with the phone's process stopped; runs alternate.",
    "",
    "| what | rate | p50 | p99 | vs no phone |",
    "|---|---|---|---|---|",
    `| phone connected | ${n(r.phone.connected.rps)} req/s | ${ms(r.phone.connected.p50)} | ${ms(r.phone.connected.p99)} | ${pct(r.phone.connected.rps, r.phone.alone.rps)} |`,
    `| no phone | ${n(r.phone.alone.rps)} req/s | ${ms(r.phone.alone.p50)} | ${ms(r.phone.alone.p99)} | 100% |`,
    "",
    `Runs: connected ${r.phone.connectedRuns.map(n).join(", ")}; no phone ${r.phone.aloneRuns.map(n).join(", ")} req/s. The phone sent ${n(r.phone.sent)}; ` +
      `${n(r.phone.waiting)} still waited at the end. RSS at most ${r.phone.peakRss} MB (sampled every 0.2 s).`,
    "",
    "## Worker",
    "",
    `${n(r.worker.count)} notifications queued (nine in ten to ${r.worker.numbers} business numbers on the local fake chat-app platform, paced at ` +
      `${r.worker.perNumber}/s each; one in ten to the local fake cloud provider) dispatched at **${n(r.worker.rate)} dispatches/s** ` +
      `(${r.worker.seconds.toFixed(1)} s from start, ${r.worker.left} left; ${n(r.worker.drainRate)}/s from the first dispatch seen). The busiest number took at most ${r.worker.peak} messages in one second ` +
      `(pace ${r.worker.perNumber}); the platform received ${n(r.worker.chatSent)}, the cloud provider ${n(r.worker.cloudSent)}.`,
    "",
    ...postgresSection(r.postgres, n),
    ...capacitySection(r.postgres, n),
    "## Memory and start-up",
    "",
    `- start-up to first answer (GET /health): ${r.startups.toFixed(0)} ms`,
    `- RSS idle: ${r.idle} MB; under the send and bulk runs at most ${r.peakRss} MB (sampled every 0.2 s), ${r.loadRss} MB just after them (${n(r.afterLoad)} notifications stored); after the worker run: ${r.worker.rss} MB`,
    "",
    "## Stored notifications",
    "",
    "List and stats are timed one request at a time (the latency a caller sees); the send rate with 32 connections.",
    "",
    "| stored | bytes per notification | list p50 / p95 | stats (month) p50 / p95 | send rate | send vs empty | RSS |",
    "|---|---|---|---|---|---|---|",
    ...r.growth.map(
      (g) =>
        `| ${n(g.size)} | ${n(g.bytesPer)} | ${ms(g.list.p50)} / ${ms(g.list.p95)} | ${ms(g.stats.p50)} / ${ms(g.stats.p95)} | ${n(g.send.rps)} req/s | ${pct(g.send.rps, empty)} | ${g.rss} MB |`,
    ),
    "",
  ];
  const extra = existsSync(join(ROOT, "bench", "NOTES.md")) ? readFileSync(join(ROOT, "bench", "NOTES.md"), "utf8") : "";
  writeFileSync(join(ROOT, "bench", "RESULTS.md"), `${lines.join("\n")}\n${extra}`);
  log("wrote bench/RESULTS.md");
}

try {
  await main();
} catch (error) {
  cleanup();
  throw error;
}
