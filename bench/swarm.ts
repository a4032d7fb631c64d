// A thousand phones on one server: what holding many paired phones costs Pigeon. The compiled
// binary is started on a temp data dir (or, with two replicas, on one PostgreSQL database), and a
// second process (bench/swarm-phones.ts) plays the phones, each speaking the companion app's
// protocol: paired with the workspace's pairing token, its event stream held open, its messages
// pulled and its states reported at the app's pace when it is told a message is enqueued.
//
// Measured, in this order:
// 1. Pairing: every phone registers (the first alone, then a few at a time) and opens its stream,
//    and each reads its settings and webhooks when told to; then the phones go away and the server
//    is restarted on the same port and data.
// 2. Memory: the server's RSS with the phones paired and none connected, then with every phone
//    connected (all coming back at once); the difference per connected phone.
// 3. Idle CPU: the server's utime+stime (/proc/PID/stat) over 10 s with every phone connected and
//    nothing sent, as % of one core.
// 4. Latency: a few hundred sends, each naming one phone (`device_id`), spread over the phones at
//    a steady pace; for each, the time from its request's start and from its 200 answer to the
//    MessageEnqueued event arriving on that phone's stream (both processes read the same clock).
// 5. Send rate: POST /v1/api/sms/send under wrk (a Bun loop where wrk is missing), each request to
//    a random recipient, first with every phone connected and working, then with the phones gone;
//    each a 2 s warm-up and a measured run. Two routings: by the workspace, through its sender
//    pools (a pool holds at most 50 phones, so there is one per 50 and each request names one at
//    random; round robin, whose choice costs the same however many messages wait, where sticky
//    and least-loaded count the members' waiting messages), and naming a random phone.
// With two replicas, two servers share the database, half the phones pair with each, both are
// loaded at once (the rate is the sum), and every other latency send goes through the server that
// does not hold its phone's stream.
//
// `bun run bench/swarm.ts` runs it against dist/pigeon (built beforehand, `bun run build`) and
// prints the result as JSON: SWARM_PHONES (default 1000), SWARM_SECONDS (default 5),
// SWARM_BACKEND=postgres for two replicas on a throwaway PostgreSQL cluster.
//
// Each phone holds a socket on both sides, so every process is started with its soft open-files
// limit raised to its hard one (at most 65,536); Bun raises its own at start as well, so it is the
// hard limit that must have room. The result gives both the open files and the limits seen.
//
// The phones keep Pigeon's pacing: each is handed at most its per-minute limit (20 by default), so
// with all connected the phones work at most at phones × 20 messages a minute, each message a pull's
// share, three reports (Processed, Sent, Delivered) and two webhooks (sms:sent, sms:delivered).
import type { Subprocess } from "bun";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Config as PhonesConfig, PhoneStats } from "./swarm-phones";
import { api, auth, freePort, type Key } from "./client";

export interface SwarmOptions {
  bin: string;
  phones: number;
  seconds: number;
  log: (line: string) => void;
  backend?: "sqlite" | { databaseUrl: string; replicas: 2 };
}

interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

type Routing = "pool" | "named";

interface Rate {
  /** Answered 2xx per second, summed over the servers. */
  rps: number;
  /** Non-2xx answers and failed requests. */
  errors: number;
  p99Ms: number;
}

export interface SwarmResult {
  backend: "sqlite" | "postgres";
  servers: number;
  phones: {
    asked: number;
    paired: number;
    /** Streams open when memory was read with all connected. */
    connected: number;
    /** From the first registration to the last phone's stream open. */
    pairSeconds: number;
    registrationMs: Percentiles;
    /** From the phones' process start until every stream was open again. */
    reconnectSeconds: number;
    /** Streams the server ended while the phones held them. */
    drops: number;
    /** Phone requests that failed, with the first few. */
    failures: number;
    errors: string[];
  };
  rssMb: { none: number; all: number; perServer: { none: number; all: number }[] };
  rssPerPhoneKb: number;
  /** Open files of the servers with all connected, and their soft limit. */
  fds: { open: number[]; limit: number[]; phonesLimit: number };
  idleCpuPercent: { servers: number[]; total: number; phones: number };
  latencyMs: {
    sends: number;
    received: number;
    fromAnswer: Percentiles;
    fromStart: Percentiles;
    /** Two replicas: the sends whose phone's stream is on the other server. */
    crossReplica?: { sends: number; received: number; fromAnswer: Percentiles };
  };
  sendRate: {
    /** Routed by the workspace: each request names one of its pools (round robin, 50 phones each) at random. */
    pool: { none: Rate; all: Rate; ratio: number };
    /** Each request names a random phone (`device_id`). */
    named: { none: Rate; all: Rate; ratio: number };
    pools: number;
    /** Requests the phones made per second during the measured runs with all connected. */
    phoneRequestsPerSecond: number;
    /** Of those, reports sent again for messages a pull handed again before they were sent. */
    repeatedReportsPerSecond: number;
    /** CPU during the measured runs with all connected, % of one core. */
    cpuPercent: { servers: number; phones: number };
    /** Peak server RSS (sum) during the runs with all connected. */
    peakRssMb: number;
  };
  /** Log lines of the servers that name an error. */
  serverErrors: { count: number; first: string[] };
}

const WRK = Bun.which("wrk");
const CONNECTIONS = 32;
const THREADS = 2;
const POOL_MAX_MEMBERS = 50;
const LATENCY_SENDS = 300;
const LATENCY_PER_SECOND = 30;
const IDLE_SECONDS = 10;
const CLK_TCK = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;
const PHONES_SCRIPT = join(import.meta.dir, "swarm-phones.ts");
/** Runs "$@" with the soft open-files limit raised to the hard one (capped at 65,536). */
const RAISE_NOFILE = 'h=$(ulimit -Hn); case "$h" in unlimited) h=65536;; esac; [ "$h" -gt 65536 ] && h=65536; ulimit -Sn "$h"; exec "$@"';
const raised = (command: string[]) => ["sh", "-c", RAISE_NOFILE, "sh", ...command];

function percentiles(xs: number[]): Percentiles {
  if (xs.length === 0) return { p50: Number.NaN, p95: Number.NaN, p99: Number.NaN };
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => Math.round(s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] * 10) / 10;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** utime + stime of a process, in clock ticks. */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

function openFiles(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

function softNofile(pid: number): number {
  const m = /Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, "utf8"));
  return m ? Number(m[1]) : 0;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(everyMs);
  }
}

export async function swarmBench(o: SwarmOptions): Promise<SwarmResult> {
  const temps: string[] = [];
  const children: Subprocess[] = [];
  const temp = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    temps.push(dir);
    return dir;
  };
  const pg = o.backend && o.backend !== "sqlite" ? o.backend : null;
  const replicas = pg ? pg.replicas : 1;
  const keyFile = pg ? join(temp("pigeon-swarm-key-"), "pigeon.key") : null;
  const dataDirs = Array.from({ length: replicas }, () => temp("pigeon-swarm-"));
  const ports = await Promise.all(dataDirs.map(() => freePort()));
  let starts = 0;

  const env = (i: number): Record<string, string> => ({
    PATH: process.env.PATH ?? "",
    PIGEON_DATA_DIR: dataDirs[i],
    PIGEON_HOST: "127.0.0.1",
    PIGEON_PORT: String(ports[i]),
    // A phone between its streams stays "online", so the sends with none connected are taken.
    PIGEON_OFFLINE_AFTER: "86400",
    PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1",
    ...(pg ? { PIGEON_DATABASE_URL: pg.databaseUrl, PIGEON_KEY_FILE: keyFile! } : {}),
  });
  const cli = (args: string[]) => {
    const r = Bun.spawnSync([o.bin, ...args], { env: env(0), stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`pigeon ${args.join(" ")}: ${r.stderr.toString()}`);
    return r.stdout.toString();
  };
  const logs: string[] = [];

  interface Server {
    proc: Subprocess;
    url: string;
    output: () => string;
  }
  /** The server's output goes to files in its data dir, as a service's log does, not to a pipe read here. */
  async function startServer(i: number): Promise<Server> {
    const log = join(dataDirs[i], `pigeon-${starts++}.log`);
    logs.push(log, `${log}.err`);
    const proc = Bun.spawn(raised([o.bin, "serve"]), { env: env(i), stdout: Bun.file(log), stderr: Bun.file(`${log}.err`) });
    children.push(proc);
    const output = () => [log, `${log}.err`].map((f) => (existsSync(f) ? readFileSync(f, "utf8") : "")).join("");
    await until(
      "pigeon to listen",
      () => {
        if (proc.exitCode !== null) throw new Error(`pigeon exited: ${output()}`);
        return /listening on https?:\/\//.test(output());
      },
      30_000,
      10,
    );
    return { proc, url: `http://127.0.0.1:${ports[i]}`, output };
  }
  const stopServer = async (s: Server) => {
    s.proc.kill("SIGTERM");
    await s.proc.exited;
  };

  interface Phones {
    proc: Subprocess;
    stats(): Promise<PhoneStats>;
    enqueued(since: number): Promise<[number, number][]>;
    save(): Promise<void>;
    stop(): Promise<void>;
  }
  const credentials = join(temp("pigeon-swarm-phones-"), "phones.json");
  async function startPhones(config: Omit<PhonesConfig, "credentials">): Promise<Phones> {
    const file = join(dirname(credentials), `${config.mode}.json`);
    writeFileSync(file, JSON.stringify({ ...config, credentials }));
    const out = join(dirname(credentials), `${config.mode}.out`);
    const proc = Bun.spawn(raised([process.execPath, PHONES_SCRIPT, file]), {
      env: { PATH: process.env.PATH ?? "", BUN_CONFIG_MAX_HTTP_REQUESTS: "8192" },
      stdout: Bun.file(out),
      stderr: Bun.file(`${out}.err`),
    });
    children.push(proc);
    let port = 0;
    await until(
      "the phones' control port",
      () => {
        if (proc.exitCode !== null) throw new Error(`the phones exited: ${readFileSync(`${out}.err`, "utf8")}`);
        port = Number(/control (\d+)/.exec(existsSync(out) ? readFileSync(out, "utf8") : "")?.[1] ?? 0);
        return port > 0;
      },
      30_000,
      20,
    );
    const control = `http://127.0.0.1:${port}`;
    return {
      proc,
      stats: async () => (await (await fetch(`${control}/stats`)).json()) as PhoneStats,
      enqueued: async (since) => (await (await fetch(`${control}/enqueued?since=${since}`)).json()) as [number, number][],
      save: async () => {
        await fetch(`${control}/save`, { method: "POST" });
      },
      stop: async () => {
        proc.kill("SIGTERM");
        await proc.exited;
      },
    };
  }

  try {
    o.log(
      `${o.phones} phones on ${pg ? `two replicas on PostgreSQL` : "SQLite"}; wrk ${WRK ? "found" : "missing: a Bun loop drives the load"}`,
    );
    cli(["plans", "set", "--code", "owner", "--name", "Owner", "--per-minute", "1000000000", "--per-day", "1000000000"]);
    let servers: Server[] = [await startServer(0)];
    const keyLine = servers[0]
      .output()
      .split("\n")
      .find((l) => l.startsWith("{") && l.includes("api_secret"));
    if (!keyLine) throw new Error(`no initial key printed: ${servers[0].output()}`);
    const key = JSON.parse(keyLine) as Key;
    if (replicas > 1) servers.push(await startServer(1));
    cli(["credits", "add", "--workspace", "1", "--amount", "100000000"]);
    const pairing = (await api(servers[0].url, key, "/v1/api/device/pairing")) as { server_url: string; pairing_token: string };
    // The pairing info names the server it was asked of; each replica serves the same token.
    const mobile = servers.map((s) => `${s.url}/mobile/v1`);

    // 1. Pairing.
    const phonesConfig = { servers: mobile, pairingToken: pairing.pairing_token, phones: o.phones, radioMs: 1000, webhooks: true };
    const pairStart = performance.now();
    let phones = await startPhones({ ...phonesConfig, mode: "pair", pairConcurrency: 8 });
    await until(
      "every phone to pair and read its settings",
      async () => {
        const s = await phones.stats();
        return s.registered + s.failures >= o.phones && s.open >= s.registered && s.configured >= s.registered && s.busy === 0;
      },
      Math.max(120_000, o.phones * 200),
      200,
    );
    const pairSeconds = (performance.now() - pairStart) / 1000;
    const paired = await phones.stats();
    o.log(
      `paired ${paired.registered} phones in ${pairSeconds.toFixed(1)} s (registration p50 ${percentiles(paired.registrationMs).p50} ms, ` +
        `p99 ${percentiles(paired.registrationMs).p99} ms); ${paired.failures} failures`,
    );
    if (paired.registered === 0) throw new Error(`no phone paired: ${paired.errors.join("; ")}`);
    await phones.save();
    await phones.stop();

    // The workspace's routing: sender pools of at most 50 phones, the first the default.
    const devices = (await api(servers[0].url, key, "/v1/api/device/export?format=json")).devices as { device_id: number; name: string }[];
    const byName = new Map(devices.map((d) => [d.name, d.device_id]));
    const saved = JSON.parse(readFileSync(credentials, "utf8")) as { index: number; base: string }[];
    const deviceOf = (index: number) => byName.get(`Swarm/phone-${String(index).padStart(5, "0")}`)!;
    const ids = saved.map((p) => deviceOf(p.index));
    const pools: number[] = [];
    for (let i = 0; i < ids.length; i += POOL_MAX_MEMBERS) {
      const members = ids.slice(i, i + POOL_MAX_MEMBERS).map((device_id) => ({ device_id }));
      const pool = await api(servers[0].url, key, "/v1/api/pool/create", {
        name: `swarm ${pools.length + 1}`,
        strategy: "round_robin",
        is_default: i === 0,
        members,
      });
      pools.push(pool.pool_id);
    }

    // 2. Memory with none connected, on freshly started servers.
    for (const s of servers) await stopServer(s);
    servers = [];
    for (let i = 0; i < replicas; i++) servers.push(await startServer(i));
    await Bun.sleep(3000);
    const rssNone = servers.map((s) => rssMb(s.proc.pid));

    const reconnectStart = performance.now();
    phones = await startPhones({ ...phonesConfig, mode: "connect", pairConcurrency: 0 });
    await until("every phone's stream to open", async () => (await phones.stats()).open >= saved.length, 120_000, 100);
    const reconnectSeconds = (performance.now() - reconnectStart) / 1000;
    await until("the phones' first pulls", async () => (await phones.stats()).busy === 0, 60_000, 100);
    await Bun.sleep(3000);
    const rssAll = servers.map((s) => rssMb(s.proc.pid));
    const connected = (await phones.stats()).open;
    const fds = {
      open: servers.map((s) => openFiles(s.proc.pid)),
      limit: servers.map((s) => softNofile(s.proc.pid)),
      phonesLimit: softNofile(phones.proc.pid),
    };
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    o.log(
      `${connected} streams open in ${reconnectSeconds.toFixed(1)} s; RSS ${sum(rssNone).toFixed(0)} MB with none, ` +
        `${sum(rssAll).toFixed(0)} MB with all; ${fds.open.join(" + ")} open files (limit ${fds.limit.join(", ")})`,
    );

    // 3. Idle CPU.
    const ticks0 = servers.map((s) => cpuTicks(s.proc.pid));
    const phoneTicks0 = cpuTicks(phones.proc.pid);
    const idleStart = performance.now();
    await Bun.sleep(IDLE_SECONDS * 1000);
    const idleSeconds = (performance.now() - idleStart) / 1000;
    const pct = (ticks: number) => Math.round(((100 * ticks) / CLK_TCK / idleSeconds) * 10) / 10;
    const idleServers = servers.map((s, i) => pct(cpuTicks(s.proc.pid) - ticks0[i]));
    const idlePhones = pct(cpuTicks(phones.proc.pid) - phoneTicks0);
    o.log(`idle CPU with all connected: ${idleServers.join(" + ")} % of a core (the phones' process ${idlePhones} %)`);

    // 4. Latency from a send to MessageEnqueued on its phone's stream.
    const latency = await latencyRun(servers, key, saved, deviceOf, phones, o.phones);
    o.log(
      `MessageEnqueued ${latency.received}/${latency.sends}: from the 200 p50 ${latency.fromAnswer.p50} ms, p95 ${latency.fromAnswer.p95} ms, ` +
        `p99 ${latency.fromAnswer.p99} ms; from the request's start p99 ${latency.fromStart.p99} ms`,
    );
    await until("the phones to finish the latency sends", async () => (await phones.stats()).busy === 0, 120_000, 200);

    // 5. Send rate with every phone connected, then with none: through the pools, and naming phones.
    const message = "Your order is ready for pickup.";
    const routings: Record<Routing, string> = {
      pool:
        pools.length > 1
          ? `{"recipient_contact":"RECIPIENT","message":"${message}","pool_id":POOL}`
          : `{"recipient_contact":"RECIPIENT","message":"${message}"}`,
      named: `{"recipient_contact":"RECIPIENT","message":"${message}","device_id":DEVICE}`,
    };
    const both = async (routing: Routing, seconds: number): Promise<Rate> => {
      const runs = await Promise.all(
        servers.map((s) =>
          load({ url: `${s.url}/v1/api/sms/send`, headers: auth(key), body: routings[routing], pools, devices: ids, seconds }),
        ),
      );
      return {
        rps: Math.round(sum(runs.map((r) => r.rps))),
        errors: sum(runs.map((r) => r.errors)),
        p99Ms: Math.round(Math.max(...runs.map((r) => r.p99Ms)) * 10) / 10,
      };
    };
    const warm = Math.min(2, o.seconds);
    const rates = { pool: {} as { all: Rate; none: Rate }, named: {} as { all: Rate; none: Rate } };
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, sum(servers.map((s) => rssMb(s.proc.pid))))), 200);
    const phoneRequests = (s: PhoneStats) => s.pulls + s.patches + s.webhooks;
    const during = { seconds: 0, phoneRequests: 0, repeats: 0, serverTicks: 0, phoneTicks: 0 };
    for (const routing of ["pool", "named"] as const) {
      await both(routing, warm);
      const before = await phones.stats();
      const ticks = { servers: sum(servers.map((s) => cpuTicks(s.proc.pid))), phones: cpuTicks(phones.proc.pid) };
      const runStart = performance.now();
      rates[routing].all = await both(routing, o.seconds);
      during.seconds += (performance.now() - runStart) / 1000;
      during.serverTicks += sum(servers.map((s) => cpuTicks(s.proc.pid))) - ticks.servers;
      during.phoneTicks += cpuTicks(phones.proc.pid) - ticks.phones;
      const after = await phones.stats();
      during.phoneRequests += phoneRequests(after) - phoneRequests(before);
      during.repeats += after.repeats - before.repeats;
      o.log(`send rate with all connected (${routing}): ${rates[routing].all.rps} req/s (errors ${rates[routing].all.errors})`);
    }
    clearInterval(sampler);
    const perSecond = (n: number) => Math.round(n / during.seconds);
    const cpu = (ticks: number) => Math.round((100 * ticks) / CLK_TCK / during.seconds);
    o.log(
      `during those runs the phones made ${perSecond(during.phoneRequests)} requests/s (${perSecond(during.repeats)} of them reports repeated ` +
        `for messages pulled again); CPU: servers ${cpu(during.serverTicks)} %, phones ${cpu(during.phoneTicks)} % of a core`,
    );
    const end = await phones.stats();
    await phones.stop();
    await Bun.sleep(3000);
    for (const routing of ["pool", "named"] as const) {
      await both(routing, warm);
      rates[routing].none = await both(routing, o.seconds);
      o.log(
        `send rate with none connected (${routing}): ${rates[routing].none.rps} req/s (errors ${rates[routing].none.errors}); ` +
          `all/none ${(rates[routing].all.rps / rates[routing].none.rps).toFixed(2)}`,
      );
    }

    for (const s of servers) await stopServer(s);
    const errorLines = logs
      .flatMap((f) => (existsSync(f) ? readFileSync(f, "utf8").split("\n") : []))
      .filter((l) => /error|exception|unhandled|EMFILE|timed out/i.test(l));
    const round = (x: number) => Math.round(x * 10) / 10;
    return {
      backend: pg ? "postgres" : "sqlite",
      servers: replicas,
      phones: {
        asked: o.phones,
        paired: paired.registered,
        connected,
        pairSeconds: round(pairSeconds),
        registrationMs: percentiles(paired.registrationMs),
        reconnectSeconds: round(reconnectSeconds),
        drops: paired.drops + end.drops,
        failures: paired.failures + end.failures,
        errors: [...paired.errors, ...end.errors].slice(0, 10),
      },
      rssMb: {
        none: round(sum(rssNone)),
        all: round(sum(rssAll)),
        perServer: servers.map((_, i) => ({ none: round(rssNone[i]), all: round(rssAll[i]) })),
      },
      rssPerPhoneKb: Math.round(((sum(rssAll) - sum(rssNone)) * 1024) / Math.max(1, connected)),
      fds,
      idleCpuPercent: { servers: idleServers, total: round(sum(idleServers)), phones: idlePhones },
      latencyMs: latency,
      sendRate: {
        pool: { ...rates.pool, ratio: Math.round((rates.pool.all.rps / rates.pool.none.rps) * 100) / 100 },
        named: { ...rates.named, ratio: Math.round((rates.named.all.rps / rates.named.none.rps) * 100) / 100 },
        pools: pools.length,
        phoneRequestsPerSecond: perSecond(during.phoneRequests),
        repeatedReportsPerSecond: perSecond(during.repeats),
        cpuPercent: { servers: cpu(during.serverTicks), phones: cpu(during.phoneTicks) },
        peakRssMb: round(peak),
      },
      serverErrors: { count: errorLines.length, first: errorLines.slice(0, 10) },
    };
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    await Promise.all(children.map((c) => c.exited));
    for (const dir of temps) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Sends at a steady pace, each naming one phone, the phones taken in a shuffled order so that one
 * phone's sends are far apart (its MessageEnqueued events are coalesced over 50 ms, and its limit
 * of 20 a minute must leave room). Each send is matched with the first MessageEnqueued on its
 * phone's stream at or after the send's start. With two servers every other send goes through
 * the server that does not hold its phone's stream.
 */
async function latencyRun(
  servers: { url: string }[],
  key: Key,
  saved: { index: number; base: string }[],
  deviceOf: (index: number) => number,
  phones: { enqueued(since: number): Promise<[number, number][]> },
  phoneCount: number,
): Promise<SwarmResult["latencyMs"]> {
  const count = Math.min(LATENCY_SENDS, phoneCount * 10);
  const order = [...saved].sort(() => Math.random() - 0.5);
  const wall = () => performance.timeOrigin + performance.now();
  const started = wall();
  const sends: { phone: number; start: number; answer: number; cross: boolean }[] = [];
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const phone = order[i % order.length];
    // With two servers, every other send goes through the server that does not hold the stream.
    const own = Math.max(
      0,
      servers.findIndex((s) => phone.base.startsWith(`${s.url}/`)),
    );
    const cross = servers.length > 1 && i % 2 === 1;
    const server = servers[cross ? (own + 1) % servers.length : own];
    inFlight.push(
      (async () => {
        const start = wall();
        const res = await fetch(`${server.url}/v1/api/sms/send`, {
          method: "POST",
          headers: { ...auth(key), "content-type": "application/json" },
          body: JSON.stringify({
            recipient_contact: `+1415${2 + (i % 8)}${String(Math.floor(Math.random() * 1e6)).padStart(6, "0")}`,
            message: `Swarm latency probe ${i}`,
            device_id: deviceOf(phone.index),
          }),
        });
        const answer = wall();
        await res.arrayBuffer();
        if (res.ok) sends.push({ phone: phone.index, start, answer, cross });
      })(),
    );
    await Bun.sleep(1000 / LATENCY_PER_SECOND);
  }
  await Promise.all(inFlight);
  await Bun.sleep(3000);
  const events = new Map<number, number[]>();
  for (const [phone, at] of await phones.enqueued(started)) events.set(phone, [...(events.get(phone) ?? []), at]);
  const fromAnswer: number[] = [];
  const fromStart: number[] = [];
  const cross: number[] = [];
  let crossSends = 0;
  for (const s of [...sends].sort((a, b) => a.start - b.start)) {
    if (s.cross) crossSends++;
    const list = events.get(s.phone) ?? [];
    const i = list.findIndex((at) => at >= s.start);
    if (i < 0) continue;
    const at = list.splice(i, 1)[0];
    fromAnswer.push(at - s.answer);
    fromStart.push(at - s.start);
    if (s.cross) cross.push(at - s.answer);
  }
  return {
    sends: sends.length,
    received: fromAnswer.length,
    fromAnswer: percentiles(fromAnswer),
    fromStart: percentiles(fromStart),
    ...(servers.length > 1 ? { crossReplica: { sends: crossSends, received: cross.length, fromAnswer: percentiles(cross) } } : {}),
  };
}

const luaString = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;

/**
 * POSTs `body` for `seconds` with CONNECTIONS connections, every RECIPIENT in it a random US number,
 * every POOL one of `pools` and every DEVICE one of `devices`, per request: wrk with a Lua script (as bench/run.ts drives it), or
 * a loop of fetches in this process where wrk is missing.
 */
async function load(t: {
  url: string;
  headers: Record<string, string>;
  body: string;
  pools: number[];
  devices: number[];
  seconds: number;
}): Promise<Rate> {
  const headers = { "content-type": "application/json", ...t.headers };
  if (WRK) {
    const dir = mkdtempSync(join(tmpdir(), "pigeon-swarm-wrk-"));
    try {
      const script = join(dir, "script.lua");
      writeFileSync(
        script,
        [
          'wrk.method = "POST"',
          "math.randomseed(os.time() * 1000 + math.floor(os.clock() * 1e6))",
          `local template = ${luaString(t.body)}`,
          `local pools = {${t.pools.join(", ")}}`,
          `local devices = {${t.devices.join(", ")}}`,
          'local to = function() return string.format("+1415%d%06d", math.random(2, 9), math.random(0, 999999)) end',
          "local pool = function() return tostring(pools[math.random(#pools)]) end",
          "local device = function() return tostring(devices[math.random(#devices)]) end",
          "request = function()",
          '  local body = template:gsub("RECIPIENT", to)',
          '  body = body:gsub("POOL", pool)',
          '  body = body:gsub("DEVICE", device)',
          "  return wrk.format(nil, nil, nil, body)",
          "end",
          ...Object.entries(headers).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`),
          "done = function(summary, latency, requests)",
          "  local e = summary.errors",
          '  io.write(string.format("RESULT %d %d %d %.0f\\n", summary.requests, summary.duration,',
          "    e.connect + e.read + e.write + e.timeout + e.status, latency:percentile(99)))",
          "end",
        ].join("\n"),
      );
      const proc = Bun.spawn([WRK, "-t", String(THREADS), "-c", String(CONNECTIONS), "-d", `${t.seconds}s`, "-s", script, t.url], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const out = await new Response(proc.stdout).text();
      await proc.exited;
      const m = /RESULT (\d+) (\d+) (\d+) (\d+)/.exec(out);
      if (!m) throw new Error(`wrk said: ${out}`);
      const [requests, micros, errors, p99] = m.slice(1).map(Number);
      return { rps: (requests - errors) / (micros / 1e6), errors, p99Ms: p99 / 1000 };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const deadline = performance.now() + t.seconds * 1000;
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  const started = performance.now();
  const random = () => `+1415${2 + Math.floor(Math.random() * 8)}${String(Math.floor(Math.random() * 1e6)).padStart(6, "0")}`;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < deadline) {
        const body = t.body
          .replace(/RECIPIENT/g, random)
          .replace(/POOL/g, () => String(t.pools[Math.floor(Math.random() * t.pools.length)]))
          .replace(/DEVICE/g, () => String(t.devices[Math.floor(Math.random() * t.devices.length)]));
        const start = performance.now();
        try {
          const res = await fetch(t.url, { method: "POST", headers, body });
          await res.arrayBuffer();
          if (res.ok) ok++;
          else errors++;
        } catch {
          errors++;
        }
        latencies.push(performance.now() - start);
      }
    }),
  );
  return { rps: ok / ((performance.now() - started) / 1000), errors, p99Ms: percentiles(latencies).p99 };
}

if (import.meta.main) {
  const bin = join(import.meta.dir, "..", "dist", "pigeon");
  if (!existsSync(bin)) {
    console.error("dist/pigeon is missing: run `bun run build` first");
    process.exit(2);
  }
  const phones = Number(process.env.SWARM_PHONES ?? 1000);
  const seconds = Number(process.env.SWARM_SECONDS ?? 5);
  const log = (line: string) => console.error(`[swarm] ${line}`);
  let backend: SwarmOptions["backend"] = "sqlite";
  if (process.env.SWARM_BACKEND === "postgres") {
    const { postgresCluster } = await import("../test/helpers/postgres");
    const cluster = await postgresCluster({ durable: true });
    backend = { databaseUrl: await cluster.createDatabase("swarm"), replicas: 2 };
  }
  const result = await swarmBench({ bin, phones, seconds, log, backend });
  console.log(JSON.stringify(result, null, 2));
  // The PostgreSQL cluster's watcher stops it once this process is gone.
  process.exit(0);
}
