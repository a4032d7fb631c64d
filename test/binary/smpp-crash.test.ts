// SIGKILL the compiled binary while an ESME (the `smpp` package from npm, bound as a transceiver)
// submits all the while, restart it on the same data directory and ports, and let the ESME
// reconnect and bind again each time. Every submit_sm answered with a message id is a stored
// notification; a phone paired over HTTP is handed each stored message exactly once across the
// restarts and reports it Delivered; and the ESME gets a delivery receipt for each, the acknowledged
// ones among them (receipts are at least once: counted by id). On SQLite and on PostgreSQL.
import { afterAll, describe, expect, test } from "bun:test";
import { settle, waitFor } from "../helpers/api";
import { type AppPhone, type HandedMessage, pairAppPhone } from "../helpers/app-phone-http";
import type { Credentials, RunningServer } from "../helpers/binary";
import { crashRig, json } from "../helpers/crash-setup";
import { postgresBin, postgresCluster } from "../helpers/postgres";
import { connectEsme, type Esme, type Pdu } from "../helpers/smpp-client";

const SEED = Number(process.env.PIGEON_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 32));
console.log(`smpp crash seed ${SEED} (PIGEON_CRASH_SEED=${SEED} repeats its choices)`);

/** Restarts of the server, each after a SIGKILL. */
const KILLS = 3;
/** submit_sm the ESME keeps outstanding at once. */
const WINDOW = 4;
/** The pause after each answer, but in the moments before a kill: the phone keeps up on either back end. */
const PAUSE_MS = 250;
const RECIPIENT = "14155552671";

let random = SEED >>> 0;
/** An integer in [lo, hi] from the seed (mulberry32). */
function between(lo: number, hi: number): number {
  random = (random + 0x6d2b79f5) >>> 0;
  let t = random;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return lo + Math.floor((((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * (hi - lo + 1));
}

const servers: RunningServer[] = [];
const allEsmes: Esme[] = [];
afterAll(async () => {
  for (const e of allEsmes) e.close();
  for (const s of servers) if (s.proc.exitCode === null) await s.stop("SIGKILL");
});

/** A port free now, so each restart listens where the last one did. */
function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

/** What the ESME saw. */
interface Ledger {
  /** message_id → the text it was submitted with (status 0). */
  acked: Map<string, string>;
  /** Texts answered with an error status. */
  refused: Map<string, number>;
  /** Texts whose answer never came (the server was killed first). */
  cut: Set<string>;
  binds: number;
}

/**
 * The ESME: connects and binds (again after each kill), and keeps WINDOW submits outstanding while
 * `control.submitting`, each with a text of its own and registered_delivery 1.
 */
function startEsme(port: number, creds: { systemId: string; password: string }, tag: string) {
  const ledger: Ledger = { acked: new Map(), refused: new Map(), cut: new Set(), binds: 0 };
  const control = { submitting: true, done: false, busy: 0, pauseMs: PAUSE_MS, sent: 0 };
  const esmes: Esme[] = [];
  let next = 0;
  const run = (async () => {
    while (!control.done) {
      const esme = await connectEsme(port).catch(() => null);
      if (!esme) {
        await Bun.sleep(50);
        continue;
      }
      esmes.push(esme);
      allEsmes.push(esme);
      let open = true;
      const closed = esme.closed.then(() => {
        open = false;
        return null;
      });
      const bound = await Promise.race([
        esme.call("bind_transceiver", { system_id: creds.systemId, password: creds.password }),
        closed,
      ]).catch(() => null);
      if (bound?.command_status !== 0) {
        esme.close();
        await Bun.sleep(50);
        continue;
      }
      ledger.binds++;
      const worker = async () => {
        while (open && !control.done) {
          if (!control.submitting) {
            await Bun.sleep(20);
            continue;
          }
          const text = `smpp crash ${tag} #${next++}`;
          control.busy++;
          control.sent++;
          const resp = await Promise.race([
            esme.call("submit_sm", { destination_addr: RECIPIENT, dest_addr_ton: 1, short_message: text, registered_delivery: 1 }),
            closed,
          ]).catch(() => null);
          control.busy--;
          // Cut off by the kill: not acknowledged, so an ESME would submit it again (this one does not).
          if (!resp) ledger.cut.add(text);
          else if (resp.command_status === 0) ledger.acked.set(String(resp.message_id), text);
          else ledger.refused.set(text, resp.command_status);
          if (control.pauseMs > 0) await Bun.sleep(control.pauseMs);
        }
      };
      await Promise.all(Array.from({ length: WINDOW }, worker));
      await closed;
    }
  })();
  return {
    ledger,
    control,
    /** Every deliver_sm any of its sessions received. */
    delivered: (): Pdu[] => esmes.flatMap((e) => e.delivered),
    async stop() {
      control.done = true;
      for (const e of esmes) e.close();
      await run;
    },
  };
}

/** A receipt's message id: its receipted_message_id, else the `id:` of its text. */
const receiptId = (p: Pdu): string => p.receipted_message_id ?? /^id:(\S+)/.exec(String(p.short_message?.message ?? ""))?.[1] ?? "";

/** Every stored message of the run's tag: text → ids. */
async function storedOf(server: RunningServer, key: Credentials, tag: string): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  for (let page = 1; ; page++) {
    const list = (await json(await server.fetch(`/v1/api/notification/list?limit=100&page=${page}`, { key }))).data;
    for (const n of list.notifications as { notification_id: number; message: string }[])
      if (n.message.includes(tag)) out.set(n.message, [...(out.get(n.message) ?? []), n.notification_id]);
    if (list.notifications.length < 100) break;
  }
  return out;
}

async function crashLoop(extraEnv: Record<string, string>) {
  const tag = SEED.toString(36);
  const smppPort = freePort();
  const { rig, server: first } = await crashRig(null, {
    PIGEON_PORT: String(freePort()),
    PIGEON_SMPP_PORT: String(smppPort),
    ...extraEnv,
  });
  let server = first;
  servers.push(server);
  const key = rig.key;
  expect(server.output()).toContain(`smpp on 127.0.0.1:${smppPort}`);
  const issued = await server.api("/v1/api/smpp/credentials/rotate", key, {});
  expect(issued.status).toBe(200);
  const creds = { systemId: issued.body.data.system_id as string, password: issued.body.data.password as string };

  const { server_url: base, pairing_token: pairing } = (await server.api("/v1/api/device/pairing", key)).body.data;
  const phone: AppPhone = await pairAppPhone(base, pairing, "SMPP phone");
  const devices = (await server.api("/v1/api/device/list", key)).body.data.devices as { device_id: number }[];
  // The phone takes whatever waits: pacing is not under test.
  expect((await server.api("/v1/api/device/update", key, { device_id: devices[0].device_id, send_limit_per_minute: 60_000 })).status).toBe(
    200,
  );

  const handed: HandedMessage[] = [];
  /** The phone takes what waits (`rounds` times at most, or until nothing does) and reports it sent, then delivered. */
  const phoneTakes = async (rounds: number) => {
    for (let i = 0; i < rounds; i++) {
      const got = await phone.take();
      if (got.length === 0) return;
      handed.push(...got);
      await phone.report(got, "Sent");
      await phone.report(got, "Delivered");
    }
  };
  const esme = startEsme(smppPort, creds, tag);
  const { ledger } = esme;
  const receipted = () => new Set(esme.delivered().map(receiptId));

  for (let kill = 0; kill < KILLS; kill++) {
    const before = ledger.acked.size;
    expect(await settle(() => ledger.acked.size >= before + 20, 30_000, 5)).toBe(true);
    // The phone's reports, and the receipts they bring, are settled before the kill: a receipt a
    // server held when it died waits out that server's lease before another may send it.
    await phoneTakes(1);
    expect(await settle(() => receipted().size >= handed.length, 30_000, 10)).toBe(true);
    // Killed at a random moment of submits at full speed: after a random number of them.
    esme.control.pauseMs = 0;
    const from = esme.control.sent;
    const burst = between(10, 120);
    expect(await settle(() => esme.control.sent >= from + burst, 30_000, 1)).toBe(true);
    server.proc.kill("SIGKILL");
    await server.proc.exited;
    esme.control.pauseMs = PAUSE_MS;
    await Bun.sleep(between(0, 300));
    server = await rig.start();
    servers.push(server);
  }
  // After the last restart the ESME binds again and goes on; then it stops and waits for its receipts.
  const afterLast = ledger.acked.size;
  const resumed = await settle(() => ledger.acked.size >= afterLast + 20, 30_000, 5);
  // What the ESME and the server were doing, should it not have gone on.
  if (!resumed)
    console.log(
      `smpp crash: stuck after the last restart: ${ledger.binds} binds, ${esme.control.busy} outstanding, server said:\n${server.output().slice(-3000)}`,
    );
  expect(resumed).toBe(true);
  esme.control.submitting = false;
  expect(await settle(() => esme.control.busy === 0, 10_000, 5)).toBe(true);
  expect(ledger.binds).toBe(KILLS + 1);

  await waitFor(
    "the phone to take every stored message",
    async () => {
      await phoneTakes(50);
      const pending = (await json(await server.fetch("/v1/api/notification/list?status=pending&limit=1", { key }))).data.pagination.total;
      return pending === 0 ? true : null;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  const stored = await storedOf(server, key, tag);
  const storedIds = [...stored.values()].flat().map(String);

  // (a) Every acknowledged id is a stored notification with its text, delivered.
  for (const [id, text] of ledger.acked) {
    const n = await json(await server.fetch(`/v1/api/notification/${id}`, { key }));
    expect({ id, status: n.status_id, message: n.data?.message, state: n.data?.status }).toEqual({
      id,
      status: 200,
      message: text,
      state: "delivered",
    });
  }
  // Each text stored once; a refused submit stored nothing; what is stored without an answer had
  // its answer cut by a kill (at most a window's worth each time).
  expect([...stored.entries()].filter(([, ids]) => ids.length !== 1)).toEqual([]);
  expect([...ledger.refused.keys()].filter((text) => stored.has(text))).toEqual([]);
  const ackedTexts = new Set(ledger.acked.values());
  const unanswered = [...stored.keys()].filter((text) => !ackedTexts.has(text));
  expect(unanswered.filter((text) => !ledger.cut.has(text))).toEqual([]);
  expect(unanswered.length).toBeLessThanOrEqual(KILLS * WINDOW);

  // (b) The phone was handed each stored message exactly once, across the restarts.
  const times = new Map<string, number>();
  for (const m of handed) times.set(m.text, (times.get(m.text) ?? 0) + 1);
  expect([...times.entries()].filter(([, n]) => n !== 1)).toEqual([]);
  expect([...times.keys()].sort()).toEqual([...stored.keys()].sort());
  expect(new Set(handed.map((m) => m.id)).size).toBe(handed.length);

  // (c) Delivered, and a receipt for each at the ESME: every stored message's id, so every acknowledged one.
  await waitFor("a receipt for every message", () => (storedIds.every((id) => receipted().has(id)) ? true : null), {
    timeoutMs: 30_000,
    intervalMs: 100,
  });
  const receipts = esme.delivered();
  expect([...receipted()].sort()).toEqual([...storedIds].sort());
  for (const id of ledger.acked.keys()) expect(receipted().has(id)).toBe(true);
  expect(receipts.filter((p) => !/ stat:DELIVRD err:000 /.test(String(p.short_message?.message)) || p.message_state !== 2)).toEqual([]);
  console.log(
    `smpp crash: ${KILLS} kills, ${ledger.binds} binds, ${ledger.acked.size} acknowledged, ${unanswered.length} stored with their answer cut, ` +
      `${ledger.cut.size} cut, ${ledger.refused.size} refused (${[...new Set(ledger.refused.values())].join(", ")}), ` +
      `${handed.length} handed to the phone, ${receipts.length} receipts for ${receipted().size} ids`,
  );
  await esme.stop();
  expect(await server.stop("SIGTERM")).toBe(0);
}

const TITLE = "SIGKILLs while an ESME submits: every acknowledged submit is stored, handed to the phone once, and receipted";

describe("on SQLite", () => {
  test(TITLE, () => crashLoop({}), 120_000);
});

describe.skipIf(!postgresBin())("on PostgreSQL", () => {
  test(TITLE, async () => {
    const pg = await postgresCluster();
    await crashLoop({ PIGEON_DATABASE_URL: await pg.createDatabase("smpp_crash") });
  }, 120_000);
});
