// Webhook deliveries are at-least-once, but the duplicate window is only the
// calls a crash actually cut off mid-flight. Each delivery is marked `delivering` (committed) just
// before its own call; after a SIGKILL, the rows left `delivering` are the calls in flight, only
// those reach the receiver again, and every event still arrives.
import { afterAll, expect, test } from "bun:test";
import type { RunningServer } from "../helpers/binary";
import { settle } from "../helpers/api";
import { crashRig, readDb, sendBulk, waitSettled } from "../helpers/crash-setup";
import { startFakeCloud } from "../helpers/fake-cloud";
import { startReceiver } from "../helpers/receiver";

/** The service's own limit on webhook calls at once. */
const WEBHOOK_CONCURRENCY = 5;

const fake = await startFakeCloud();
const receiver = startReceiver();
let server: RunningServer | null = null;

afterAll(async () => {
  await server?.stop("SIGKILL");
  fake.stop();
  receiver.stop();
});

test("across 4 SIGKILLs and a SIGTERM: no event lost, and only deliveries marked in flight at a kill reach the receiver twice", async () => {
  const setup = await crashRig(fake);
  server = setup.server;
  const { rig } = setup;
  // A receiver that takes a while to answer, so kills land while calls are in flight.
  receiver.answer(async () => {
    await Bun.sleep(120);
    return new Response("ok");
  });
  const hook = await server.fetch("/v1/api/webhook/create", {
    method: "POST",
    key: rig.key,
    body: JSON.stringify({ url: receiver.url, events: ["notification.sent"] }),
  });
  expect(hook.status).toBe(200);
  const ids = [
    ...(await sendBulk(
      server,
      rig.key,
      Array.from({ length: 60 }, (_, i) => `webhook crash ${i}`),
    )),
    ...(await sendBulk(
      server,
      rig.key,
      Array.from({ length: 60 }, (_, i) => `webhook crash ${60 + i}`),
    )),
  ];
  expect(await waitSettled(server, rig.key, 20_000)).toBe(0);

  const inFlightAtKill = new Set<string>();
  let notReceived = 0;
  for (let k = 0; k < 4; k++) {
    const target = receiver.received.length + 8 + k * 5;
    await settle(() => receiver.received.length >= target, 10_000, 5);
    await Bun.sleep(30 + k * 25);
    server.proc.kill("SIGKILL");
    await server.proc.exited;
    const delivering = readDb(
      rig.dataDir,
      (db) => db.query("SELECT id FROM webhook_delivery WHERE status = 'delivering'").all() as { id: string }[],
    );
    // Marked in flight means a call was under way: at most one per concurrent caller ...
    expect(delivering.length).toBeGreaterThan(0);
    expect(delivering.length).toBeLessThanOrEqual(WEBHOOK_CONCURRENCY);
    // ... and those calls had reached the receiver (allowing one that was between its mark and
    // its request arriving when the kill came).
    const seen = new Set(receiver.received.map((r) => r.headers.get("x-pigeon-delivery")));
    notReceived = delivering.filter((d) => !seen.has(d.id)).length;
    expect(notReceived).toBeLessThanOrEqual(1);
    for (const d of delivering) inFlightAtKill.add(d.id);
    server = await rig.start();
  }

  // A SIGTERM mid-flow is no crash: the calls in flight finish and are recorded, none is left marked.
  {
    const target = receiver.received.length + 8;
    await settle(() => receiver.received.length >= target, 10_000, 5);
    expect(new Set(receiver.received.map((r) => r.headers.get("x-pigeon-delivery"))).size).toBeLessThan(ids.length);
    expect(await server.stop("SIGTERM")).toBe(0);
    const delivering = readDb(
      rig.dataDir,
      (db) => (db.query("SELECT count(*) AS n FROM webhook_delivery WHERE status = 'delivering'").get() as { n: number }).n,
    );
    expect(delivering).toBe(0);
    server = await rig.start();
  }

  const until = Date.now() + 30_000;
  let open = -1;
  while (Date.now() < until) {
    open = readDb(
      rig.dataDir,
      (db) => (db.query("SELECT count(*) AS n FROM webhook_delivery WHERE status <> 'delivered'").get() as { n: number }).n,
    );
    if (open === 0) break;
    await Bun.sleep(200);
  }
  expect(open).toBe(0);
  await server.stop("SIGTERM");
  server = null;

  // No event lost: every notification's sent event reached the receiver.
  const events = readDb(
    rig.dataDir,
    (db) => db.query("SELECT d.id AS delivery, d.event_id FROM webhook_delivery d").all() as { delivery: string; event_id: string }[],
  );
  expect(events).toHaveLength(ids.length);
  const counts = new Map<string, number>();
  for (const r of receiver.received) {
    const delivery = r.headers.get("x-pigeon-delivery")!;
    counts.set(delivery, (counts.get(delivery) ?? 0) + 1);
  }
  for (const e of events) expect(counts.get(e.delivery) ?? 0).toBeGreaterThanOrEqual(1);
  // Twice only where a kill cut the call off; never three times.
  const twice = [...counts].filter(([, n]) => n > 1).map(([d]) => d);
  for (const d of twice) expect(inFlightAtKill.has(d)).toBe(true);
  for (const n of counts.values()) expect(n).toBeLessThanOrEqual(2);
  // Each cut-off call is on record as such.
  const marked = readDb(
    rig.dataDir,
    (db) => (db.query("SELECT count(*) AS n FROM webhook_attempt WHERE error LIKE 'interrupted%'").get() as { n: number }).n,
  );
  expect(marked).toBe(inFlightAtKill.size);
}, 90_000);
