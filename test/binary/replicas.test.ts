// Several `pigeon serve` processes of the compiled binary on one real PostgreSQL database (a
// throwaway cluster): the first start happens once however many start together, every server
// needs the same key file, any server answers for what another accepted, and when one is killed
// mid-dispatch the others finish its work with no message sent twice (counted at the provider).
import { afterAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { settle } from "../helpers/api";
import { registerCloudNumber } from "../helpers/crash-setup";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { startFakeCloud } from "../helpers/fake-cloud";
import { postgresCluster } from "../helpers/postgres";
import { RECIPIENT } from "../helpers/numbers";

const pg = await postgresCluster();
const bin = isolatedBinary();
const running: RunningServer[] = [];
// Slow enough that a server killed mid-dispatch has calls in flight.
const fake = await startFakeCloud({ latencyMs: 1_000 });

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop("SIGKILL").catch(() => {})));
  fake.stop();
});

/** What one server of the cluster is started with: the shared URL and key file, its own data dir. */
function serverEnv(url: string, keyFile: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PIGEON_DATABASE_URL: url,
    PIGEON_KEY_FILE: keyFile,
    PIGEON_DATA_DIR: tempDir(),
    PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1",
    ...extra,
  };
}

async function start(env: Record<string, string>): Promise<RunningServer> {
  const server = await startServer(bin, env, 30_000);
  running.push(server);
  return server;
}

async function rowCounts(url: string): Promise<Record<string, number>> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const tables = await sql<{ table_name: string }[]>`
      SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`;
    const counts: Record<string, number> = {};
    for (const { table_name } of tables) counts[table_name] = Number((await sql.unsafe(`SELECT count(*) AS n FROM "${table_name}"`))[0].n);
    return counts;
  } finally {
    await sql.end();
  }
}

async function query<T>(url: string, text: string): Promise<T[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return (await sql.unsafe(text)) as unknown as T[];
  } finally {
    await sql.end();
  }
}

describe("three servers started at once on an empty database", () => {
  let url = "";
  let keyFile = "";
  let servers: RunningServer[] = [];
  let key: Credentials;

  test("make the owner, the first key and the setup link once; the others print no secret", async () => {
    url = await pg.createDatabase("replicas");
    keyFile = join(tempDir("pigeon-key-"), "pigeon.key");
    servers = await Promise.all([0, 1, 2].map(() => start(serverEnv(url, keyFile))));
    const withKey = servers.filter((s) => s.initialKey !== null);
    expect(withKey).toHaveLength(1);
    key = withKey[0].initialKey!;
    expect(servers.filter((s) => s.output().includes("/dashboard/setup?token="))).toHaveLength(1);
    for (const s of servers) if (s !== withKey[0]) expect(s.output()).not.toMatch(/sk_|setup\?token=/);
    const counts = await rowCounts(url);
    expect({
      account: counts.account,
      workspace: counts.workspace,
      api_key: counts.api_key,
      dashboard_setup: counts.dashboard_setup,
    }).toEqual({ account: 1, workspace: 1, api_key: 1, dashboard_setup: 1 });
    // The key file was made once, by the very first start, and the database knows its fingerprint.
    expect(existsSync(keyFile)).toBe(true);
    expect(await query(url, "SELECT name FROM instance_setting WHERE name = 'key_fingerprint'")).toEqual([{ name: "key_fingerprint" }]);
    // The key works on every server.
    for (const s of servers) expect((await s.api("/v1/api/device/list", key)).status).toBe(200);
  }, 90_000);

  test("a server with another key, or none, exits 2 with one line naming the file and writes nothing", async () => {
    const before = await rowCounts(url);
    const otherKey = join(tempDir("pigeon-key-"), "other.key");
    writeFileSync(otherKey, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
    const missing = join(tempDir("pigeon-key-"), "pigeon.key");
    for (const file of [otherKey, missing]) {
      for (const args of [["serve"], ["keys", "list"]]) {
        const r = await runCommand(bin, args, serverEnv(url, file, { PIGEON_PORT: "0", PIGEON_HOST: "127.0.0.1" }));
        expect({ file, args, code: r.code }).toEqual({ file, args, code: 2 });
        const lines = r.stderr.trim().split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(file);
        expect(r.stdout).not.toContain("listening");
      }
    }
    expect(existsSync(missing)).toBe(false);
    expect(await rowCounts(url)).toEqual(before);
  }, 60_000);

  test("every command works on the database: plans, credits, keys, devices", async () => {
    const env = serverEnv(url, keyFile);
    const plans = await runCommand(
      bin,
      ["plans", "set", "--code", "owner", "--name", "Owner", "--per-minute", "100000", "--per-day", "1000000"],
      env,
    );
    expect(plans.code).toBe(0);
    expect((await runCommand(bin, ["credits", "add", "--workspace", "1", "--amount", "100000"], env)).code).toBe(0);
    const shown = await runCommand(bin, ["credits", "show", "--workspace", "1", "--json"], env);
    expect(JSON.parse(shown.stdout).balance).toBe(100000);
    const made = await runCommand(bin, ["keys", "create", "--name", "second", "--json"], env);
    const second = JSON.parse(made.stdout) as Credentials;
    // A key made from the shell is accepted at once by every running server.
    for (const s of servers) expect((await s.api("/v1/api/device/list", second)).status).toBe(200);
    // No server runs on this data directory and PIGEON_PORT is unset: the address cannot be known here.
    const unknown = await runCommand(bin, ["devices", "pair-info", "--json"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("PIGEON_PUBLIC_URL");
    const pair = await runCommand(bin, ["devices", "pair-info", "--json"], { ...env, PIGEON_PUBLIC_URL: "https://sms.example.com" });
    expect(pair.code).toBe(0);
    expect(JSON.parse(pair.stdout).server_url).toBe("https://sms.example.com/mobile/v1");
    expect((await runCommand(bin, ["migrate"], env)).stdout).toContain("up to date");
  }, 60_000);

  test("a send accepted by one server is fetched, listed and cancelled through the others", async () => {
    const [a, b, c] = servers;
    await registerCloudNumber(a, key, fake);
    const later = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19).replace("T", " ");
    const sent = await a.api("/v1/api/sms/send", key, {
      recipient_contact: RECIPIENT,
      message: "see you later",
      schedule_time: later,
    });
    expect(sent.status).toBe(200);
    const id = sent.body.data.notification_id as number;
    const fetched = await b.api(`/v1/api/notification/${id}`, key);
    expect({ status: fetched.status, message: fetched.body.data.message }).toEqual({ status: 200, message: "see you later" });
    const listed = await c.api("/v1/api/notification/list", key);
    expect(listed.body.data.notifications.map((n: { notification_id: number }) => n.notification_id)).toContain(id);
    const cancelled = await b.api("/v1/api/notification/cancel", key, { notification_id: id });
    expect(cancelled.status).toBe(200);
    expect((await c.api(`/v1/api/notification/${id}`, key)).body.data.status).toBe("cancelled");
  }, 60_000);

  test("a phone holding its event stream on one server hears of a send accepted by another, and of an inbox export asked through it", async () => {
    // Neither the phone's server nor the sending one leads, so the leader's announce-due cannot be
    // what tells it: the sending server's signal must reach the phone's.
    expect(await settle(() => servers.some((s) => s.output().includes("now leads the cluster")), 20_000, 100)).toBe(true);
    const [sender, phoneServer] = servers.filter((s) => !s.output().includes("now leads the cluster"));
    const ua = "me.capcom.smsgateway/1.68.0";
    const token = (await phoneServer.api("/v1/api/device/pairing", key)).body.data.pairing_token;
    const reg = await fetch(`${phoneServer.url}/mobile/v1/device`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "user-agent": ua, "content-type": "application/json" },
      body: JSON.stringify({ name: "Pixel/replica", simCards: [{ slotIndex: 0, simNumber: 1, phoneNumber: "*******1234" }] }),
    });
    expect(reg.status).toBe(201);
    const phone = (await reg.json()) as { id: string; token: string };
    const [{ id: deviceId }] = await query<{ id: number }>(url, `SELECT id FROM device WHERE external_id = '${phone.id}'`);
    const events = await fetch(`${phoneServer.url}/mobile/v1/events`, {
      headers: { authorization: `Bearer ${phone.token}`, "user-agent": ua },
    });
    const reader = events.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    const readUntil = async (text: string, ms: number) => {
      const deadline = Date.now() + ms;
      while (!buffer.includes(text) && Date.now() < deadline) {
        const chunk = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)]);
        if (chunk?.value) buffer += decoder.decode(chunk.value);
      }
      return buffer.includes(text);
    };
    expect(await readUntil(":connected", 5_000)).toBe(true);
    await Bun.sleep(300); // the stream's first hints (settings, webhooks) go out
    buffer = "";
    const sent = await sender.api("/v1/api/sms/send", key, {
      recipient_contact: RECIPIENT,
      message: "for the phone",
      device_id: deviceId,
    });
    expect(sent.status).toBe(200);
    // The hint arrives in milliseconds (the issue asks for 2 s; bench territory). The wait is long
    // so a busy machine cannot fail it, and still decides: without the signal no hint ever comes.
    expect(await readUntil("event: MessageEnqueued", 10_000)).toBe(true);
    // Asked through a server that does not hold its stream, the phone is asked all the same.
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const refresh = await sender.api(`/v1/api/device/${deviceId}/inbox/refresh`, key, { since, until: new Date().toISOString() });
    expect(refresh.status).toBe(202);
    expect(await readUntil("event: MessagesExportRequested", 10_000)).toBe(true);
    await reader.cancel();
  }, 60_000);

  test("a dashboard works across servers: live badges, a bulk draft sent once through another, the next page's message", async () => {
    const [watched, acting] = servers;
    const env = serverEnv(url, keyFile);
    const made = await runCommand(bin, ["users", "create", "--email", "owner@example.com", "--password", "correct horse battery"], env);
    expect(made.code).toBe(0);
    const cookieOf = (res: Response, name: string) =>
      new RegExp(`${name}=([^;]*)`).exec(res.headers.getSetCookie().join("\n"))?.[1] ?? null;
    const form = await fetch(`${watched.url}/dashboard/sign-in`);
    const pre = cookieOf(form, "pigeon_presession")!;
    const signedIn = await fetch(`${watched.url}/dashboard/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: `pigeon_presession=${pre}` },
      body: new URLSearchParams({ _csrf: pre, email: "owner@example.com", password: "correct horse battery" }).toString(),
    });
    const session = cookieOf(signedIn, "pigeon_session");
    expect(session).not.toBeNull();
    const later = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19).replace("T", " ");
    const sent = await acting.api("/v1/api/sms/send", key, {
      recipient_contact: RECIPIENT,
      message: "to cancel",
      schedule_time: later,
    });
    const id = sent.body.data.notification_id as number;
    const live = await fetch(`${watched.url}/dashboard/live`, { headers: { cookie: `pigeon_session=${session}` } });
    expect(live.status).toBe(200);
    const reader = live.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    const frame = `"id":${id},"status":"cancelled"`;
    const read = (async () => {
      const deadline = Date.now() + 10_000;
      while (!buffer.includes(frame) && Date.now() < deadline) {
        const chunk = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)]);
        if (chunk?.value) buffer += decoder.decode(chunk.value);
      }
    })();
    await Bun.sleep(100);
    expect((await acting.api("/v1/api/notification/cancel", key, { notification_id: id })).status).toBe(200);
    await read;
    expect(buffer).toContain(frame);
    await reader.cancel();

    // A bulk CSV uploaded through one server is sent through another, once; the message that a
    // second click finds nothing to send is shown on the next page, opened through a third.
    const third = servers[2];
    const post = (server: RunningServer, path: string, fields: Record<string, string>) =>
      fetch(`${server.url}${path}`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: `pigeon_session=${session}` },
        body: new URLSearchParams(fields).toString(),
      });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(
      await (await fetch(`${watched.url}/dashboard/bulk`, { headers: { cookie: `pigeon_session=${session}` } })).text(),
    )![1];
    const uploaded = await post(watched, "/dashboard/bulk", {
      _csrf: csrf,
      channel: "sms",
      message: "Hello {{name}}",
      csv: "phone,name\n+14155550101,Ann\n+14155550102,Bo\n",
      template: "",
      device: "",
    });
    expect(uploaded.status).toBe(200);
    const draft = /name="draft" value="([^"]+)"/.exec(await uploaded.text())![1];
    const sentBulk = await post(acting, "/dashboard/bulk/send", { _csrf: csrf, draft });
    expect(sentBulk.status).toBe(200);
    expect(await sentBulk.text()).toContain("2 messages accepted");
    const again = await post(third, "/dashboard/bulk/send", { _csrf: csrf, draft });
    expect(again.status).toBe(303);
    const next = await fetch(`${watched.url}/dashboard/messages`, { headers: { cookie: `pigeon_session=${session}` } });
    expect(await next.text()).toContain("That upload was already sent or has expired");
  }, 60_000);

  test("a key's per-minute limit and the sign-in throttle hold for the cluster, not per server", async () => {
    const env = serverEnv(url, keyFile);
    const run = async (args: string[]) => {
      const r = await runCommand(bin, [...args, "--json"], env);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: "" });
      return JSON.parse(r.stdout);
    };
    await run(["plans", "set", "--code", "tight", "--name", "Tight", "--per-minute", "30", "--per-day", "1000"]);
    const account = await run(["accounts", "create", "--name", "Tight Ltd", "--plan", "tight"]);
    const tight = (await run(["keys", "create", "--name", "tight", "--workspace", String(account.workspace_id)])) as Credentials;
    // 50 requests at once, spread over the three servers: 30 pass, whichever server they reach.
    const statuses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => servers[i % 3].fetch("/v1/api/project/list", { key: tight }).then((r) => r.status)),
    );
    expect({ ok: statuses.filter((s) => s === 200).length, limited: statuses.filter((s) => s === 429).length }).toEqual({
      ok: 30,
      limited: 20,
    });

    // Wrong passwords through the three servers in turn (after the dashboard test: its sign-in
    // comes from the same loopback address, which this leaves throttled for a minute).: the sixth attempt is refused on any of them.
    const email = "throttled@example.com";
    expect((await runCommand(bin, ["users", "create", "--email", email, "--password", "the right one, at last"], env)).code).toBe(0);
    const cookieOf = (res: Response, name: string) =>
      new RegExp(`${name}=([^;]*)`).exec(res.headers.getSetCookie().join("\n"))?.[1] ?? null;
    const attempt = async (server: RunningServer, password: string) => {
      const pre = cookieOf(await fetch(`${server.url}/dashboard/sign-in`), "pigeon_presession")!;
      const res = await fetch(`${server.url}/dashboard/sign-in`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: `pigeon_presession=${pre}` },
        body: new URLSearchParams({ _csrf: pre, email, password }).toString(),
      });
      return res.status;
    };
    // Counted per server, each would see three attempts and check every password (401); counted
    // together, no more than five of the eight reach the password check.
    const tries: number[] = [];
    for (let i = 0; i < 8; i++) tries.push(await attempt(servers[i % 3], `wrong guess ${i}`));
    expect(tries.filter((t) => t === 401).length).toBeLessThanOrEqual(5);
    expect(tries.slice(5)).toEqual([429, 429, 429]);
    expect(await attempt(servers[2], "the right one, at last")).toBe(429);
  }, 60_000);

  test("credits never go below zero when sends through three servers race for the last of them", async () => {
    const env = serverEnv(url, keyFile);
    const credits = async () =>
      JSON.parse((await runCommand(bin, ["credits", "show", "--workspace", "1", "--json"], env)).stdout).balance as number;
    const devices = (await servers[0].api("/v1/api/device/list", key)).body.data.devices as {
      device_id: number;
      kind?: string;
      name: string;
    }[];
    const cloud = devices.find((d) => d.name === "cloud")!;
    const left = 10;
    expect((await runCommand(bin, ["credits", "add", "--workspace", "1", `--amount=${left - (await credits())}`], env)).code).toBe(0);
    expect(await credits()).toBe(left);
    const later = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19).replace("T", " ");
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        servers[i % 3].api("/v1/api/sms/send", key, {
          recipient_contact: RECIPIENT,
          message: `race ${i}`,
          device_id: cloud.device_id,
          schedule_time: later,
        }),
      ),
    );
    const accepted = answers.filter((a) => a.status === 200).length;
    const refused = answers.filter((a) => a.status !== 200);
    expect(accepted).toBe(left);
    expect(new Set(refused.map((a) => a.body.data.error_code))).toEqual(new Set(["insufficient_credits"]));
    const ledger = await query<{ delta: number; reason: string; notification_id: number | null }>(
      url,
      "SELECT delta::int, reason, notification_id FROM credit_ledger ORDER BY id DESC LIMIT 14",
    );
    expect({ balance: await credits(), ledger }).toEqual({ balance: 0, ledger });
    // Given back for the tests that follow (the scheduled sends are cancelled, and refunded).
    expect((await runCommand(bin, ["credits", "add", "--workspace", "1", "--amount", "100000"], env)).code).toBe(0);
    for (const a of answers.filter((x) => x.status === 200))
      await servers[0].api("/v1/api/notification/cancel", key, { notification_id: a.body.data.notification_id });
  }, 60_000);

  test("SIGKILL of a server mid-dispatch: the others finish its work, the provider gets each message once", async () => {
    const bodies = Array.from({ length: 100 }, (_, i) => `replica message ${i}`);
    const [first] = servers;
    const res = await first.api("/v1/api/sms/send/bulk", key, {
      messages: bodies.map((message) => ({ recipient_contact: RECIPIENT, message })),
    });
    expect(res.body.data.accepted).toBe(bodies.length);
    // Kill a server that holds claims (its calls are in flight), known by the id it printed.
    let holder: RunningServer | undefined;
    const claimed = await settle(
      async () => {
        const rows = await query<{ claimed_by: string }>(url, "SELECT DISTINCT claimed_by FROM notification WHERE stage = 'dispatching'");
        holder = servers.find((s) => rows.some((r) => s.output().includes(`id in the cluster is ${r.claimed_by}`)));
        return holder !== undefined;
      },
      15_000,
      20,
    );
    expect(claimed).toBe(true);
    const a = holder!;
    a.proc.kill("SIGKILL");
    await a.proc.exited;
    const survivor = servers.find((s) => s !== a)!;
    const ids = res.body.data.results.map((r: { notification_id: number }) => r.notification_id) as number[];
    const drained = await settle(
      async () => {
        const rows = await query<{ n: number }>(
          url,
          `SELECT count(*)::int AS n FROM notification WHERE id IN (${ids.join(",")}) AND status = 'pending'`,
        );
        return rows[0].n === 0;
      },
      45_000,
      250,
    );
    expect(drained).toBe(true);
    const atProvider = [...fake.messages.values()].map((m) => m.body).filter((body) => body.startsWith("replica message"));
    expect(atProvider.length).toBe(bodies.length);
    expect(new Set(atProvider).size).toBe(bodies.length);
    for (const id of ids) expect((await survivor.api(`/v1/api/notification/${id}`, key)).body.data.status).toBe("sent");
    // The killed server's calls in flight were recovered by a survivor, not by its own restart.
    const logs = await query<{ n: number }>(
      url,
      `SELECT count(*)::int AS n FROM notification_log WHERE event = 'interrupted' AND notification_id IN (${ids.join(",")})`,
    );
    expect(logs[0].n).toBeGreaterThan(0);
  }, 90_000);

  test("the periodic tasks have one leader; when it is killed another takes over", async () => {
    const alive = servers.filter((s) => s.proc.exitCode === null && !s.proc.killed);
    expect(alive.length).toBeGreaterThanOrEqual(2);
    expect(await settle(() => alive.some((s) => s.output().includes("now leads the cluster")), 20_000, 100)).toBe(true);
    const leaders = alive.filter((s) => s.output().includes("now leads the cluster"));
    const leader = leaders[leaders.length - 1];
    const others = alive.filter((s) => s !== leader);
    for (const s of others) expect(s.output()).not.toContain("now leads the cluster");
    leader.proc.kill("SIGKILL");
    await leader.proc.exited;
    // Once the dead leader's 10 s lease has run out; the wait leaves a busy machine room.
    expect(await settle(() => others.some((s) => s.output().includes("now leads the cluster")), 30_000, 100)).toBe(true);
    expect(others.filter((s) => s.output().includes("now leads the cluster"))).toHaveLength(1);
  }, 60_000);
});

describe("a server killed while it delivers webhooks", () => {
  test("the others deliver what it had claimed once its lease runs out, with the same event ids", async () => {
    const url = await pg.createDatabase("hooks");
    const keyFile = join(tempDir("pigeon-key-"), "pigeon.key");
    const [a, b] = await Promise.all([start(serverEnv(url, keyFile)), start(serverEnv(url, keyFile))]);
    const key = (a.initialKey ?? b.initialKey)!;
    // A receiver that answers nothing until the server holding the calls is killed: the kill always
    // finds them in flight, however slow the machine is to find that server.
    const seen: { event: string; delivery: string }[] = [];
    let answered = 0;
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const receiver = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        seen.push({ event: req.headers.get("x-pigeon-event") ?? "", delivery: req.headers.get("x-pigeon-delivery") ?? "" });
        await req.text();
        await held;
        answered++;
        return new Response("ok");
      },
    });
    try {
      await registerCloudNumber(a, key, fake);
      expect((await runCommand(bin, ["credits", "add", "--workspace", "1", "--amount", "100"], serverEnv(url, keyFile))).code).toBe(0);
      const hook = await a.api("/v1/api/webhook/create", key, {
        url: `http://127.0.0.1:${receiver.port}/hook`,
        events: ["notification.cancelled"],
      });
      expect(hook.status).toBe(200);
      const later = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19).replace("T", " ");
      const ids: number[] = [];
      for (let i = 0; i < 12; i++) {
        const sent = await a.api("/v1/api/sms/send", key, {
          recipient_contact: RECIPIENT,
          message: `hook ${i}`,
          schedule_time: later,
        });
        if (sent.status !== 200) throw new Error(JSON.stringify(sent.body));
        ids.push(sent.body.data.notification_id);
      }
      for (const id of ids) expect((await b.api("/v1/api/notification/cancel", key, { notification_id: id })).status).toBe(200);
      // Kill the server whose calls are in flight (known by the id it printed), before any is answered.
      let holder: RunningServer | undefined;
      const claimed = await settle(
        async () => {
          const rows = await query<{ claimed_by: string }>(
            url,
            "SELECT DISTINCT claimed_by FROM webhook_delivery WHERE status = 'delivering'",
          );
          holder = [a, b].find((s) => rows.some((r) => s.output().includes(`id in the cluster is ${r.claimed_by}`)));
          return holder !== undefined;
        },
        15_000,
        20,
      );
      expect(claimed).toBe(true);
      expect(answered).toBe(0);
      const survivor = holder === a ? b : a;
      holder!.proc.kill("SIGKILL");
      await holder!.proc.exited;
      release();
      const events = new Set(
        (await query<{ id: string }>(url, "SELECT id FROM event WHERE type = 'notification.cancelled'")).map((r) => r.id),
      );
      expect(events.size).toBe(ids.length);
      const allDone = await settle(
        async () =>
          (await query<{ n: number }>(url, "SELECT count(*)::int AS n FROM webhook_delivery WHERE status <> 'delivered'"))[0].n === 0,
        45_000,
        250,
      );
      expect(allDone).toBe(true);
      // Every event reached the receiver, under its one id; what the kill cut off came again with the same id.
      expect(new Set(seen.map((s) => s.event))).toEqual(events);
      const hooks = (await survivor.api("/v1/api/webhook/list", key)).body.data.webhooks as { webhook_id: number }[];
      const deliveries = (await survivor.api(`/v1/api/webhook/${hooks[0].webhook_id}/deliveries`, key)).body.data.deliveries as {
        status: string;
        attempts: { error: string | null }[];
      }[];
      expect(deliveries.every((d) => d.status === "delivered")).toBe(true);
      // The cut-off calls each have an attempt saying so, then the one that delivered.
      expect(deliveries.some((d) => d.attempts.length > 1)).toBe(true);
    } finally {
      release();
      receiver.stop(true);
    }
  }, 90_000);
});
