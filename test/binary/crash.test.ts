// SIGKILL the compiled binary while it accepts sends and while its worker dispatches, restart it,
// and check: every acknowledged notification exists, all of them get out, and the provider never
// received one twice.
import { afterAll, expect, test } from "bun:test";
import type { RunningServer } from "../helpers/binary";
import { settle } from "../helpers/api";
import { crashRig, json, readDb, TO, waitSettled } from "../helpers/crash-setup";
import { startFakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT } from "../helpers/numbers";

const fake = await startFakeCloud({ latencyMs: 120 });
let server: RunningServer | null = null;

afterAll(async () => {
  await server?.stop("SIGKILL");
  fake.stop();
});

test("nothing acknowledged is lost and nothing the provider took is sent twice across SIGKILLs", async () => {
  const setup = await crashRig(fake);
  const { rig } = setup;
  const key = rig.key;
  server = setup.server;

  // 1. Kill while sends are being accepted.
  const acked = new Map<number, string>();
  const sendOne = async (i: number) => {
    const body = `crash test message ${i}`;
    try {
      const res = await server!.fetch("/v1/api/sms/send", {
        method: "POST",
        key,
        body: JSON.stringify({ recipient_contact: RECIPIENT, message: body }),
      });
      if (res.status === 200) acked.set((await json(res)).data.notification_id, body);
    } catch {
      // cut off by the kill: not acknowledged, so the client would retry
    }
  };
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < 150; i++) {
    inFlight.push(sendOne(i));
    if (i === 90) setTimeout(() => server!.proc.kill("SIGKILL"), 0);
    await Bun.sleep(2);
  }
  await Promise.all(inFlight);
  await server.proc.exited;
  expect(acked.size).toBeGreaterThan(10);

  // 2. Restart, and kill again while the worker is mid-call.
  // The first server's worker may already have reached the provider: wait for a call of this one.
  const createsBefore = fake.creates.length;
  server = await rig.start();
  // Killed while a call the provider has taken waits for its answer: this process serves the fake,
  // so nothing answers that call between the check and the kill, however loaded the machine.
  expect(await settle(() => fake.creates.length > createsBefore && fake.takenUnanswered() > 0, 30_000, 5)).toBe(true);
  server.proc.kill("SIGKILL");
  await server.proc.exited;

  // 3. Restart and let the worker finish.
  server = await rig.start();
  expect(await waitSettled(server, key, 30_000)).toBe(0);

  // Every acknowledged notification is there, as it was sent, and got out. (Read after the second
  // kill, not before it: reading them first gave the worker time to send them all.)
  for (const [id, body] of acked) {
    const n = await json(await server.fetch(`/v1/api/notification/${id}`, { key }));
    expect(n.status_id).toBe(200);
    expect(n.data.message).toBe(body);
    expect(n.data.status).toBe("sent");
  }
  // The second kill did cut calls off mid-flight, and some of those had reached the provider:
  // recovery found them there instead of sending again.
  let interrupted = 0;
  let foundAtProvider = 0;
  for (const id of acked.keys()) {
    const logs = (await json(await server.fetch(`/v1/api/notification/${id}`, { key }))).data.logs as {
      event: string;
      detail: string | null;
    }[];
    if (logs.some((l) => l.event === "interrupted")) interrupted++;
    if (logs.some((l) => l.event === "sent" && l.detail?.includes("found after an interrupted attempt"))) foundAtProvider++;
  }
  expect(interrupted).toBeGreaterThan(0);
  expect(foundAtProvider).toBeGreaterThan(0);
  // The provider holds each acknowledged message exactly once.
  const bodies = [...fake.messages.values()].map((m) => m.body);
  for (const body of acked.values()) expect(bodies.filter((b) => b === body)).toHaveLength(1);
  expect(new Set(bodies).size).toBe(bodies.length);

  // 4. Each acknowledged send is in its thread exactly once: those the first server had not yet
  // added to their thread when it was killed were added after the restart, none twice.
  const threads = (await json(await server.fetch("/v1/api/thread/list", { key }))).data.threads as { peer: string }[];
  expect(threads.map((t) => t.peer)).toContain(TO);
  const threaded = readDb(rig.dataDir, (db) =>
    db
      .query<{ id: number; n: number }, []>(
        "SELECT notification_id AS id, count(*) AS n FROM thread_message WHERE notification_id IS NOT NULL GROUP BY notification_id",
      )
      .all(),
  );
  const times = new Map(threaded.map((r) => [r.id, r.n]));
  for (const id of acked.keys()) expect(times.get(id)).toBe(1);
}, 90_000);
