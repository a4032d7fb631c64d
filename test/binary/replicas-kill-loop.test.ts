// SIGKILL loops on a cluster: three `pigeon serve` processes of the compiled binary on one real
// PostgreSQL database, under steady load (single and bulk sends through whichever servers are up, a
// cloud number whose provider answers slowly, a paired phone that pulls and reports through a
// server picked at random each time, a webhook subscription), while a server is killed and started
// again round after round. Each kill is aimed: at a server with provider calls in flight, at the
// server a phone pull is on its way to, at the one delivering webhooks (the leader), or at random.
// Afterwards, counted where the messages land (the fake provider, the phone, the receiver): every
// acknowledged send exists once and reaches `sent`, the provider took each message once plus at
// most one more for each attempt a kill cut off, the phone is handed a message again only while its
// report that it has it is still on the way, and every sent event arrives under one stable id.
// test/binary/replicas.test.ts kills one server once per scenario; this one keeps killing.
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { settle } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { registerCloudNumber } from "../helpers/crash-setup";
import { startFakeCloud } from "../helpers/fake-cloud";
import { postgresCluster } from "../helpers/postgres";
import { startReceiver } from "../helpers/receiver";

const pg = await postgresCluster();
const bin = isolatedBinary();
// Slow enough that a killed server has provider calls in flight, fast enough to keep up.
const fake = await startFakeCloud({ latencyMs: 400 });
// The receiver answers after a pause too, so the leader is killed with deliveries in flight.
const receiver = startReceiver();
receiver.answer(async () => {
  await Bun.sleep(150);
  return new Response("ok");
});

const ROUNDS = 7;
const UA = "me.capcom.smsgateway/1.68.0";
const rand = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

/** One server's place in the cluster: its environment (kept across restarts) and the process now running, if any. */
interface Slot {
  env: Record<string, string>;
  server: RunningServer | null;
  restarting: Promise<void> | null;
}
const slots: Slot[] = [];
let sql: ReturnType<typeof postgres> | null = null;

afterAll(async () => {
  await Promise.all(slots.map((s) => s.restarting?.catch(() => {})));
  await Promise.all(slots.map((s) => s.server?.stop("SIGKILL").catch(() => {})));
  await sql?.end();
  fake.stop();
  receiver.stop();
});

const isUp = (s: RunningServer | null): s is RunningServer => s !== null && s.proc.exitCode === null && !s.proc.killed;
const alive = () => slots.map((s) => s.server).filter(isUp);
const anyAlive = () => {
  const up = alive();
  return up.length > 0 ? up[rand(0, up.length - 1)] : null;
};
/** A running server at random, once one is up (while restarts are under way, none may be). */
async function someAlive(): Promise<RunningServer> {
  for (;;) {
    const server = anyAlive();
    if (server) return server;
    await Bun.sleep(50);
  }
}
/** The running server that printed `id` as its id in the cluster (a restart prints a new one). */
const serverWithId = (ids: string[]) => alive().find((s) => ids.some((id) => s.output().includes(`id in the cluster is ${id}`)));

describe("servers SIGKILLed and started again, round after round, under load", () => {
  test("nothing acknowledged is lost, nothing goes out twice beyond a cut-off call, every sent event arrives under one id", async () => {
    const url = await pg.createDatabase("killloop");
    const keyFile = join(tempDir("pigeon-key-"), "pigeon.key");
    sql = postgres(url, { max: 2, onnotice: () => {} });
    const db = sql;
    const rows = async <T>(text: string, params: (string | number)[] = []) => (await db.unsafe(text, params)) as unknown as T[];
    const env = (): Record<string, string> => ({
      PIGEON_DATABASE_URL: url,
      PIGEON_KEY_FILE: keyFile,
      PIGEON_DATA_DIR: tempDir(),
      PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1",
    });
    for (let i = 0; i < 3; i++) slots.push({ env: env(), server: null, restarting: null });
    const first = await Promise.all(slots.map((s) => startServer(bin, s.env, 30_000)));
    first.forEach((server, i) => {
      slots[i].server = server;
    });
    const key: Credentials = first.find((s) => s.initialKey !== null)!.initialKey!;
    const cli = async (args: string[]) => expect((await runCommand(bin, args, env())).code).toBe(0);
    await cli(["plans", "set", "--code", "owner", "--name", "Owner", "--per-minute", "100000", "--per-day", "1000000"]);
    await cli(["credits", "add", "--workspace", "1", "--amount", "100000"]);

    const [a] = first;
    const cloud = await registerCloudNumber(a, key, fake);
    const hook = await a.api("/v1/api/webhook/create", key, { url: receiver.url, events: ["notification.sent"] });
    expect(hook.status).toBe(200);
    // The phone pairs as the app does, and its pacing is opened up so the load is never held back.
    const pairing = (await a.api("/v1/api/device/pairing", key)).body.data.pairing_token as string;
    const reg = await fetch(`${a.url}/mobile/v1/device`, {
      method: "POST",
      headers: { authorization: `Bearer ${pairing}`, "user-agent": UA, "content-type": "application/json" },
      body: JSON.stringify({ name: "Pixel/killloop", simCards: [{ slotIndex: 0, simNumber: 1, phoneNumber: "*******1234" }] }),
    });
    expect(reg.status).toBe(201);
    const phoneAuth = { authorization: `Bearer ${((await reg.json()) as { token: string }).token}`, "user-agent": UA };
    const phoneDeviceId = Number((await rows<{ id: number }>("SELECT id FROM device WHERE kind = 'sms' AND deleted_at IS NULL"))[0].id);
    const paced = await a.api("/v1/api/device/update", key, { device_id: phoneDeviceId, send_limit_per_minute: 6000 });
    expect(paced.status).toBe(200);

    // --- The client: sends with an Idempotency-Key, and a connection cut by a kill is retried through
    // another server under the same key (the first may have committed: then it replays).
    const acked = new Map<number, { body: string; route: "cloud" | "phone" }>();
    const tried = new Map<string, "cloud" | "phone">();
    const refused: { status: number; body: unknown }[] = [];
    let gaveUp = 0;
    let cutSends = 0;
    let stalledSends = 0;
    let replays = 0;
    let sendNo = 0;
    /** Sends on their way to each server now: a kill round aims at one. */
    const sending = new Map<RunningServer, number>();
    const item = (route: "cloud" | "phone") => {
      const n = sendNo++;
      const body = `kill loop ${n} via ${route}`;
      tried.set(body, route);
      // A recipient per message keeps the provider's list that recovery reads short.
      return {
        recipient_contact: `+1415555${String(1000 + n).padStart(4, "0")}`,
        message: body,
        device_id: route === "cloud" ? cloud.device_id : phoneDeviceId,
      };
    };
    async function post(path: string, payload: unknown): Promise<any | null> {
      const idempotencyKey = crypto.randomUUID();
      const deadline = Date.now() + 45_000;
      while (Date.now() < deadline) {
        const server = await someAlive();
        sending.set(server, (sending.get(server) ?? 0) + 1);
        try {
          const res = await server.fetch(path, {
            method: "POST",
            key,
            headers: { "idempotency-key": idempotencyKey },
            body: JSON.stringify(payload),
            // A request stuck on a live server is given up and sent again, as a client would.
            signal: AbortSignal.timeout(15_000),
          });
          const answer = await res.json();
          if (res.status >= 500) {
            refused.push({ status: res.status, body: answer });
            await Bun.sleep(100);
            continue;
          }
          if (res.status !== 200) {
            refused.push({ status: res.status, body: answer });
            return null;
          }
          if (res.headers.get("idempotent-replayed") === "true") replays++;
          return answer;
        } catch (error) {
          if ((error as Error).name === "TimeoutError") stalledSends++;
          else cutSends++;
          await Bun.sleep(50);
        } finally {
          sending.set(server, sending.get(server)! - 1);
        }
      }
      gaveUp++;
      return null;
    }
    async function sendSome(): Promise<void> {
      if (Math.random() < 0.15) {
        const messages = [item("cloud"), item("phone"), item("cloud"), item("phone")];
        const answer = await post("/v1/api/sms/send/bulk", { messages });
        if (!answer) return;
        (answer.data.results as { notification_id?: number }[]).forEach((r, i) => {
          if (r.notification_id !== undefined)
            acked.set(r.notification_id, {
              body: messages[i].message,
              route: messages[i].device_id === cloud.device_id ? "cloud" : "phone",
            });
          else refused.push({ status: 200, body: r });
        });
        return;
      }
      const route = Math.random() < 0.5 ? "cloud" : "phone";
      const one = item(route);
      const answer = await post("/v1/api/sms/send", one);
      if (answer) acked.set(answer.data.notification_id, { body: one.message, route });
    }
    let loadOn = true;
    const clients = [0, 1, 2].map(async () => {
      while (loadOn) {
        await sendSome();
        await Bun.sleep(rand(250, 450));
      }
    });

    // --- The phone: pulls through a server picked at random, takes each new message once (the app
    // keeps what it downloaded by id), and reports Processed, then Sent, each retried through
    // another server until one takes it. Reports run beside the pulls, as the app's do.
    const received = new Map<string, number[]>(); // phone id → when each pull that handed it began
    const confirmed = new Map<string, number>(); // phone id → when its Processed report was answered
    const reporting = new Set<Promise<void>>();
    const reportFailures: string[] = [];
    let pullingFrom: RunningServer | null = null;
    let pullsBegun = 0;
    let pullsCut = 0;
    let reportsCut = 0;
    let phoneOn = true;
    async function report(items: { id: string; state: string }[]): Promise<boolean> {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const server = await someAlive();
        try {
          const res = await fetch(`${server.url}/mobile/v1/message`, {
            method: "PATCH",
            headers: { ...phoneAuth, "content-type": "application/json" },
            body: JSON.stringify(items),
            signal: AbortSignal.timeout(15_000),
          });
          if (res.status === 204) return true;
          reportFailures.push(`PATCH answered ${res.status}: ${await res.text()}`);
          return false;
        } catch {
          reportsCut++;
          await Bun.sleep(50);
        }
      }
      reportFailures.push(`PATCH ${items[0]?.state} of ${items.length} never taken`);
      return false;
    }
    const phone = (async () => {
      while (phoneOn) {
        const server = await someAlive();
        const began = performance.now();
        pullingFrom = server;
        pullsBegun++;
        let items: { id: string; state: string }[];
        try {
          const res = await fetch(`${server.url}/mobile/v1/message?order=fifo`, {
            headers: phoneAuth,
            signal: AbortSignal.timeout(15_000),
          });
          if (res.status !== 200) throw new Error(`GET /message answered ${res.status}`);
          items = (await res.json()) as { id: string; state: string }[];
        } catch {
          pullsCut++;
          continue;
        } finally {
          pullingFrom = null;
        }
        const fresh: string[] = [];
        for (const m of items) {
          if (m.state !== "Pending") continue;
          const times = received.get(m.id) ?? [];
          if (times.length === 0) fresh.push(m.id);
          received.set(m.id, [...times, began]);
        }
        if (fresh.length > 0) {
          const work = (async () => {
            if (!(await report(fresh.map((id) => ({ id, state: "Processed" }))))) return;
            const at = performance.now();
            for (const id of fresh) confirmed.set(id, at);
            await Bun.sleep(rand(20, 200));
            await report(fresh.map((id) => ({ id, state: "Sent" })));
          })();
          reporting.add(work);
          void work.finally(() => reporting.delete(work));
        }
        await Bun.sleep(rand(80, 200));
      }
    })();

    // --- The kill loop. Each round waits a random moment, finds its target, kills it and starts it
    // again (same environment) after a short pause, in the background: the next round may come
    // while it is still down, but never kills the last server up.
    /** Polls `find` until it names a running server, for at most `ms`. */
    const seek = async (find: () => Promise<RunningServer | undefined> | RunningServer | undefined, ms: number, every: number) => {
      let found: RunningServer | undefined;
      await settle(
        async () => {
          found = await find();
          return isUp(found ?? null);
        },
        ms,
        every,
      );
      return found;
    };
    const claimHolder = async (query: string) =>
      serverWithId((await rows<{ claimed_by: string }>(query)).map((r) => r.claimed_by).filter((id) => id !== null));
    // A send or a pull lasts milliseconds, so they are polled closely; once one is seen on its way,
    // the kill comes a moment later, landing before, during or after the server's commit.
    const targets: Record<string, () => Promise<RunningServer | undefined>> = {
      "provider call": () => seek(() => claimHolder("SELECT DISTINCT claimed_by FROM notification WHERE stage = 'dispatching'"), 3_000, 20),
      async send() {
        const victim = await seek(() => alive().find((s) => (sending.get(s) ?? 0) > 0), 3_000, 1);
        if (victim) await Bun.sleep(rand(0, 8));
        return victim;
      },
      // A pull that finds messages waiting (its answer hands them out), killed while it runs.
      async "phone pull"() {
        const waiting = async () =>
          (
            await rows<{ n: number }>(
              "SELECT count(*)::int AS n FROM notification WHERE device_id = $1 AND status = 'pending' AND stage = 'queued' AND dispatched_at IS NULL",
              [phoneDeviceId],
            )
          )[0].n > 0;
        if (!(await settle(waiting, 3_000, 10))) return undefined;
        const after = pullsBegun;
        const victim = await seek(() => (pullsBegun > after && pullingFrom !== null ? pullingFrom : undefined), 2_000, 1);
        if (victim) await Bun.sleep(rand(2, 25));
        return victim;
      },
      "webhook delivery": () =>
        seek(() => claimHolder("SELECT DISTINCT claimed_by FROM webhook_delivery WHERE status = 'delivering'"), 8_000, 20),
      random: async () => anyAlive() ?? undefined,
    };
    const plan = ["provider call", "send", "phone pull", "webhook delivery", "random", "send", "phone pull"];
    const kills: string[] = [];
    await Bun.sleep(2_000);
    for (let round = 0; round < ROUNDS; round++) {
      await Bun.sleep(rand(1_000, 3_000));
      // Within a round no server goes down but the one killed, so two up now leaves one up after.
      await settle(() => alive().length >= 2, 30_000, 50);
      const aim = plan[round % plan.length];
      let victim = await targets[aim]();
      if (!isUp(victim ?? null)) victim = undefined;
      // Not found in time (no call of that kind in flight just then): a random one instead.
      kills.push(victim ? aim : `${aim} (none in flight: random)`);
      if (!victim) victim = (await targets.random())!;
      const slot = slots.find((s) => s.server === victim)!;
      victim.proc.kill("SIGKILL");
      await victim.proc.exited;
      slot.server = null;
      slot.restarting = (async () => {
        await Bun.sleep(rand(300, 1_500));
        slot.server = await startServer(bin, slot.env, 30_000);
        slot.restarting = null;
      })();
    }
    await Bun.sleep(1_000);
    loadOn = false;
    await Promise.all(clients);
    await Promise.all(slots.map((s) => s.restarting));
    expect(alive()).toHaveLength(3);

    // --- Drain: the killed servers' claims come back once their leases run out (10 s), a leader
    // recovers them, the phone keeps pulling. Waited for generously; the assertions below decide.
    const ids = [...acked.keys()];
    const idList = ids.length > 0 ? ids.join(",") : "-1";
    const drained = await settle(
      async () => {
        const [pending] = await rows<{ n: number }>(
          `SELECT count(*)::int AS n FROM notification WHERE status = 'pending' AND id IN (${idList})`,
        );
        const [hooks] = await rows<{ n: number }>("SELECT count(*)::int AS n FROM webhook_delivery WHERE status <> 'delivered'");
        return pending.n === 0 && hooks.n === 0 && reporting.size === 0;
      },
      75_000,
      500,
    );
    phoneOn = false;
    await phone;
    await Promise.all([...reporting]);

    // The client: every send was answered in the end, and no server refused one or failed on it
    // (a kill cuts connections to the server killed; the others answer as if nothing happened).
    expect({ gaveUp, refused }).toEqual({ gaveUp: 0, refused: [] });
    expect(acked.size).toBeGreaterThan(100);
    expect(drained).toBe(true);

    // Every acknowledged send exists once, under the id its answer gave, and went out; nothing the
    // client tried exists twice (a retry under the same key made nothing new).
    const stored = await rows<{ id: number; message: string; status: string; external_id: string | null; dispatched_at: string | null }>(
      "SELECT id::int AS id, message, status, external_id, dispatched_at::text FROM notification WHERE message LIKE 'kill loop %'",
    );
    const byBody = new Map<string, typeof stored>();
    for (const r of stored) byBody.set(r.message, [...(byBody.get(r.message) ?? []), r]);
    expect([...byBody.values()].filter((list) => list.length > 1)).toEqual([]);
    expect(stored.length).toBe(tried.size);
    const notSent = [...acked].flatMap(([id, { body }]) => {
      const row = byBody.get(body)?.[0];
      return row?.id === id && row.status === "sent" ? [] : [{ id, body, row: row ?? null }];
    });
    expect(notSent).toEqual([]);

    // The provider: each cloud message once, plus at most one more for each attempt a kill cut off
    // (recovery asks the provider first, so in practice the cut-off calls it had are not repeated).
    const interrupted = new Map(
      (
        await rows<{ id: number; n: number }>(
          "SELECT notification_id::int AS id, count(*)::int AS n FROM notification_log WHERE event = 'interrupted' GROUP BY notification_id",
        )
      ).map((r) => [r.id, r.n]),
    );
    const calls = new Map<string, number>();
    for (const c of fake.creates) calls.set(c.Body, (calls.get(c.Body) ?? 0) + 1);
    const overSent = [...acked].flatMap(([id, { body, route }]) => {
      if (route !== "cloud") return [];
      const n = calls.get(body) ?? 0;
      return n >= 1 && n <= 1 + (interrupted.get(id) ?? 0) ? [] : [{ id, body, calls: n, interrupted: interrupted.get(id) ?? 0 }];
    });
    expect(overSent).toEqual([]);
    // Nothing reached the provider that was never meant for it.
    expect([...calls.keys()].filter((body) => tried.get(body) !== "cloud")).toEqual([]);
    // The kills did cut provider calls off (else this proved nothing about them).
    expect(interrupted.size).toBeGreaterThan(0);
    const foundAfterCut = (
      await rows<{ n: number }>(
        "SELECT count(*)::int AS n FROM notification_log WHERE event = 'sent' AND detail LIKE '%found after an interrupted attempt%'",
      )
    )[0].n;

    // The phone: every message meant for it reached it. A message is handed out again until the
    // phone's report that it has it is recorded (a pull cut by a kill may have handed it to no one),
    // but never by a pull that began after that report was answered.
    const phoneIdOf = new Map(stored.map((r) => [r.id, r.external_id]));
    const missed = [...acked].filter(([id, { route }]) => route === "phone" && !received.has(phoneIdOf.get(id) ?? ""));
    expect(missed).toEqual([]);
    const handedAfterReport = [...received].flatMap(([id, times]) => {
      const at = confirmed.get(id);
      return at !== undefined && times.some((t) => t > at) ? [{ id, confirmedAt: at, pulls: times }] : [];
    });
    expect(handedAfterReport).toEqual([]);
    expect(reportFailures).toEqual([]);
    const phoneIds = new Set([...acked].filter(([, { route }]) => route === "phone").map(([id]) => phoneIdOf.get(id)));
    expect([...received.keys()].filter((id) => !phoneIds.has(id))).toEqual([]);
    // Handed by a pull the phone never saw the answer of: first marked handed before the pull that reached it began.
    const pullStart = performance.timeOrigin;
    const rehanded = stored.filter((r) => {
      const times = r.external_id ? received.get(r.external_id) : undefined;
      return times !== undefined && r.dispatched_at !== null && Number(r.dispatched_at) < pullStart + times[0] - 1;
    }).length;

    // The webhooks: one notification.sent event per acknowledged send, each delivered at least once,
    // every delivery of an event the same bytes under the same id, and repeated only where a kill
    // cut a delivery off.
    const deliveries = receiver.ofType("notification.sent");
    const eventsOf = new Map<number, Set<string>>();
    const bodiesOf = new Map<string, Set<string>>();
    const badIds: string[] = [];
    for (const d of deliveries) {
      const eventId = d.headers.get("x-pigeon-event") ?? "";
      if (d.body.id !== eventId) badIds.push(eventId);
      const nid = d.body.data.notification_id as number;
      eventsOf.set(nid, new Set([...(eventsOf.get(nid) ?? []), eventId]));
      bodiesOf.set(eventId, new Set([...(bodiesOf.get(eventId) ?? []), d.raw]));
    }
    expect(badIds).toEqual([]);
    expect(ids.filter((id) => eventsOf.get(id)?.size !== 1)).toEqual([]);
    expect([...bodiesOf].filter(([, raws]) => raws.size !== 1).map(([id]) => id)).toEqual([]);
    const cutDeliveries = new Map(
      (
        await rows<{ event_id: string; n: number }>(
          `SELECT d.event_id, count(*)::int AS n FROM webhook_attempt a JOIN webhook_delivery d ON d.id = a.delivery_id
           WHERE a.error LIKE 'interrupted%' GROUP BY d.event_id`,
        )
      ).map((r) => [r.event_id, r.n]),
    );
    const timesOf = new Map<string, number>();
    for (const d of deliveries) {
      const eventId = d.headers.get("x-pigeon-event") ?? "";
      timesOf.set(eventId, (timesOf.get(eventId) ?? 0) + 1);
    }
    expect([...timesOf].filter(([id, n]) => n > 1 + (cutDeliveries.get(id) ?? 0))).toEqual([]);

    console.log(
      `kill loop: kills ${kills.join(", ")}; ${acked.size} sends acknowledged (${cutSends} cut and retried, ${replays} replayed, ${stalledSends} stalled); ` +
        `provider: ${interrupted.size} calls cut off, ${foundAfterCut} found there after; ` +
        `phone: ${pullsCut} pulls and ${reportsCut} reports cut, ${rehanded} handed again after a cut pull; ` +
        `webhooks: ${deliveries.length} deliveries of ${timesOf.size} events, ${cutDeliveries.size} cut off`,
    );
  }, 150_000);
});
