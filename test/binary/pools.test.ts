// Sender pools on the compiled binary, with three simulated phones (`pigeon simulate-phone`, one
// of them with two SIMs) and a cloud number on the fake provider: round robin spreads 300 sends
// within one of even over the five members, each going out through the phone and SIM it was given;
// sticky keeps 50 recipients on their member over 5 rounds and follows a reply; geomatch picks the
// recipient's country and area code; a daily cap moves sends on and, all members capped, makes one
// wait for midnight UTC; segments count toward a segment cap; a cloud member failing three times
// is paused and resumed; a phone that goes offline loses only its never-pulled messages.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { waitFor } from "../helpers/api";
import type { RunningServer } from "../helpers/binary";
import { crashRig, readDb, registerCloudNumber, type CrashRig } from "../helpers/crash-setup";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { startSimulator, type RunningPhone } from "../helpers/simulator";
import { pairAppPhone, type AppPhone } from "../helpers/app-phone-http";
import { ABROAD } from "../helpers/numbers";

let fake: FakeCloud;
let rig: CrashRig;
let server: RunningServer;
const phones: RunningPhone[] = [];
const members: { device_id: number; sim_number?: number }[] = [];

beforeAll(async () => {
  fake = await startFakeCloud();
  ({ rig, server } = await crashRig(null));
  const cloud = await registerCloudNumber(server, rig.key, fake);
  const pairing = (await server.api("/v1/api/device/pairing", rig.key)).body.data;
  for (const [name, sims] of [
    ["Pool/A", "1"],
    ["Pool/B", "1"],
    ["Pool/C", "2"],
  ] as const) {
    phones.push(
      await startSimulator(rig.bin, [
        "--server",
        pairing.server_url,
        "--token",
        pairing.pairing_token,
        "--delay",
        "0",
        "--name",
        name,
        "--sims",
        sims,
      ]),
    );
  }
  const devices = (await server.api("/v1/api/device/list?limit=100", rig.key)).body.data.devices as { name: string; device_id: number }[];
  const id = (name: string) => devices.find((d) => d.name === name)!.device_id;
  members.push({ device_id: id("Pool/A") }, { device_id: id("Pool/B") }, { device_id: id("Pool/C"), sim_number: 1 });
  members.push({ device_id: id("Pool/C"), sim_number: 2 }, { device_id: cloud.device_id });
}, 60_000);

afterAll(async () => {
  for (const phone of phones) phone.proc.kill("SIGKILL");
  await server?.stop("SIGKILL");
  fake?.stop();
});

/** Sends `recipients` through the pool in bulk requests of 100; the notification ids in order. */
async function bulk(poolId: number, recipients: string[]): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < recipients.length; i += 100) {
    const reply = await server.api("/v1/api/sms/send/bulk", rig.key, {
      messages: recipients.slice(i, i + 100).map((to) => ({ recipient_contact: to, message: "Your order is ready", pool_id: poolId })),
    });
    expect(reply.status).toBe(200);
    expect(reply.body.data.accepted).toBe(Math.min(100, recipients.length - i));
    ids.push(...reply.body.data.results.map((r: { notification_id: number }) => r.notification_id));
  }
  return ids;
}

/** Each notification's device and SIM, as stored. */
const carriers = (ids: number[]) =>
  readDb(rig.dataDir, (db) => {
    const rows = db.query(`SELECT id, device_id AS d, sim_number AS s FROM notification WHERE id IN (${ids.join(", ")})`).all() as {
      id: number;
      d: number;
      s: number | null;
    }[];
    const byId = new Map(rows.map((r) => [r.id, `${r.d}:${r.s ?? ""}`]));
    return ids.map((id) => byId.get(id)!);
  });

const recipient = (i: number) => `+1415556${String(i).padStart(4, "0")}`;

describe("sender pools on the binary", () => {
  test("round robin spreads 300 sends evenly over two phones, two SIMs of a third and a cloud number; the phones send theirs", async () => {
    const made = await server.api("/v1/api/pool/create", rig.key, { name: "Everyone", strategy: "round_robin", members });
    expect(made.status).toBe(200);
    const ids = await bulk(
      made.body.data.pool_id,
      Array.from({ length: 300 }, (_, i) => recipient(i)),
    );
    const counts = new Map<string, number>();
    for (const c of carriers(ids)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(5);
    for (const n of counts.values()) expect(Math.abs(n - 60)).toBeLessThanOrEqual(1);
    // The cloud number's share reached the provider; the phones take theirs and send them.
    await waitFor("the cloud number's 60", () => fake.creates.length >= 60, { timeoutMs: 30_000 });
    await waitFor("the phones' first messages sent", () => phones.every((p) => p.output().includes("→ Sent")), {
      timeoutMs: 60_000,
      detail: () => phones.map((p) => p.output().slice(-300)).join("\n---\n"),
    });
  }, 120_000);

  test("sticky keeps 50 recipients on the member they first got, over 5 rounds", async () => {
    const made = await server.api("/v1/api/pool/create", rig.key, { name: "Sticky", members });
    expect(made.status).toBe(200);
    const recipients = Array.from({ length: 50 }, (_, i) => recipient(1000 + i));
    const first = carriers(await bulk(made.body.data.pool_id, recipients));
    expect(new Set(first).size).toBeGreaterThan(1);
    for (let round = 1; round < 5; round++) expect(carriers(await bulk(made.body.data.pool_id, recipients))).toEqual(first);
  }, 120_000);
});

describe("caps and failing members on the binary", () => {
  test("a daily cap of 10 moves the 11th send on; with every member capped a send waits and says until when", async () => {
    const [a, b] = members;
    const made = await server.api("/v1/api/pool/create", rig.key, {
      name: "Capped",
      strategy: "round_robin",
      members: [
        { ...a, daily_limit: 10 },
        { ...b, daily_limit: 10 },
      ],
    });
    expect(made.status).toBe(200);
    const ids = await bulk(
      made.body.data.pool_id,
      Array.from({ length: 20 }, (_, i) => recipient(2000 + i)),
    );
    const counts = new Map<string, number>();
    for (const c of carriers(ids)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect([...counts.values()]).toEqual([10, 10]);
    const held = await server.api("/v1/api/sms/send", rig.key, {
      recipient_contact: recipient(2100),
      message: "One more",
      pool_id: made.body.data.pool_id,
    });
    expect(held.status).toBe(200);
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect(held.body.data.scheduled_for).toBe(midnight.toISOString());
  }, 60_000);

  test("a cloud member whose provider fails three times in a row is paused and the next send goes to another member", async () => {
    const cloud = members[4];
    const made = await server.api("/v1/api/pool/create", rig.key, {
      name: "Failing",
      strategy: "least_loaded",
      members: [cloud, members[1]],
    });
    expect(made.status).toBe(200);
    const poolId = made.body.data.pool_id;
    // What the earlier tests queued on the cloud number goes out first, so the failures below are these sends'.
    const waitingOnCloud = () =>
      readDb(
        rig.dataDir,
        (db) =>
          (
            db.query("SELECT count(*) AS n FROM notification WHERE device_id = ? AND status = 'pending'").get(cloud.device_id) as {
              n: number;
            }
          ).n,
      );
    await waitFor("the cloud number's queue to empty", () => waitingOnCloud() === 0, { timeoutMs: 60_000 });
    for (let i = 0; i < 3; i++) {
      fake.failNext(400, 30003, "Unreachable destination handset");
      const r = await server.api("/v1/api/sms/send", rig.key, { recipient_contact: recipient(3000 + i), message: "x", pool_id: poolId });
      expect(r.status).toBe(200);
      const id = r.body.data.notification_id;
      await waitFor(
        "the provider's refusal",
        async () => (await server.api(`/v1/api/notification/${id}`, rig.key)).body.data.status === "failed",
        {
          timeoutMs: 15_000,
        },
      );
    }
    const pool = await waitFor(
      "the member's pause",
      async () => {
        const got = (await server.api(`/v1/api/pool/${poolId}`, rig.key)).body.data;
        return got.members[0].paused_until ? got : null;
      },
      { timeoutMs: 15_000 },
    );
    expect(pool.members[0]).toMatchObject({ device_id: cloud.device_id, consecutive_failures: 0 });
    const next = await server.api("/v1/api/sms/send", rig.key, { recipient_contact: recipient(3100), message: "y", pool_id: poolId });
    const n = (await server.api(`/v1/api/notification/${next.body.data.notification_id}`, rig.key)).body.data;
    expect(n.device_id).toBe(members[1].device_id);
    expect(n.logs.find((l: { event: string }) => l.event === "pool").detail).toContain("paused after carrier failures");
    // Resumed by hand before its back-off ends: it takes sends again.
    const resumed = await server.api("/v1/api/pool/update", rig.key, {
      pool_id: poolId,
      members: [{ ...cloud, resume: true }, members[1]],
    });
    expect(resumed.status).toBe(200);
    expect(resumed.body.data.members[0]).toMatchObject({ device_id: cloud.device_id, paused_until: null });
    const after = await server.api("/v1/api/sms/send", rig.key, { recipient_contact: recipient(3200), message: "z", pool_id: poolId });
    expect(carriers([after.body.data.notification_id])).toEqual([`${cloud.device_id}:`]);
  }, 60_000);
});

describe("geomatch, replies and segments on the binary", () => {
  let hand: { device_id: number; phone: AppPhone }[] = [];
  beforeAll(async () => {
    const pairing = (await server.api("/v1/api/device/pairing", rig.key)).body.data;
    hand = [];
    for (const name of ["Hand/1", "Hand/2"]) {
      const phone = await pairAppPhone(pairing.server_url, pairing.pairing_token, name);
      const devices = (await server.api("/v1/api/device/list?limit=100", rig.key)).body.data.devices as {
        name: string;
        device_id: number;
      }[];
      hand.push({ device_id: devices.find((d) => d.name === name)!.device_id, phone });
    }
  });
  const send = async (body: Record<string, unknown>) => {
    const r = await server.api("/v1/api/sms/send", rig.key, { message: "Hello", ...body });
    expect(r.status).toBe(200);
    return carriers([r.body.data.notification_id])[0];
  };

  test("geomatch: the member in the recipient's country, and for +1 its area code, takes a new recipient", async () => {
    const [a, b, , , cloud] = members;
    const made = await server.api("/v1/api/pool/create", rig.key, {
      name: "Geo",
      geomatch: true,
      members: [{ ...a, number: "+447700900100" }, { ...b, number: "+14155550100" }, cloud],
    });
    expect(made.status).toBe(200);
    const pool_id = made.body.data.pool_id;
    expect(await send({ recipient_contact: ABROAD, pool_id })).toBe(`${a.device_id}:`);
    expect(await send({ recipient_contact: "+14155559876", pool_id })).toBe(`${b.device_id}:`);
    expect(await send({ recipient_contact: "+15005550123", pool_id })).toBe(`${cloud.device_id}:`);
  });

  test("sticky follows a reply: a recipient who writes to the other member is answered from it", async () => {
    const [h1, h2] = hand;
    const made = await server.api("/v1/api/pool/create", rig.key, {
      name: "Replies",
      members: [{ device_id: h1.device_id }, { device_id: h2.device_id }],
    });
    expect(made.status).toBe(200);
    const pool_id = made.body.data.pool_id;
    const to = recipient(4000);
    const first = await send({ recipient_contact: to, pool_id });
    expect(await send({ recipient_contact: to, pool_id })).toBe(first);
    const other = first === `${h1.device_id}:` ? h2 : h1;
    await other.phone.receive(to, "Is this the shop?");
    expect(await send({ recipient_contact: to, pool_id })).toBe(`${other.device_id}:`);
  });

  test("segments count toward a segment cap: a 2-segment message no longer fits 4 of 5 and goes to the other member", async () => {
    const [h1, h2] = hand;
    const made = await server.api("/v1/api/pool/create", rig.key, {
      name: "Segments",
      strategy: "round_robin",
      members: [{ device_id: h1.device_id, daily_limit: 5, count: "segments" }, { device_id: h2.device_id }],
    });
    expect(made.status).toBe(200);
    const pool_id = made.body.data.pool_id;
    const long = "x".repeat(300); // two GSM-7 segments
    const placed = [];
    for (let i = 0; i < 4; i++)
      placed.push(await send({ recipient_contact: recipient(4100 + i), pool_id, message: i === 1 ? "Hi" : long }));
    expect(placed).toEqual([`${h1.device_id}:`, `${h2.device_id}:`, `${h1.device_id}:`, `${h2.device_id}:`]);
    const usage = (await server.api(`/v1/api/pool/${pool_id}/usage`, rig.key)).body.data.members;
    expect(usage[0].today).toEqual({ messages: 2, segments: 4, limit: 5 });
  });
});

describe("a member's phone that goes offline, on the binary", () => {
  test("only its never-pulled messages move to the other phone; the one it pulled stays", async () => {
    const { rig: offRig, server: offServer } = await crashRig(null, { PIGEON_OFFLINE_AFTER: "3" });
    const pairing = (await offServer.api("/v1/api/device/pairing", offRig.key)).body.data;
    const sims: RunningPhone[] = [];
    try {
      for (const [name, hold] of [
        ["Off/1", "120000"],
        ["Off/2", "0"],
      ] as const)
        sims.push(
          await startSimulator(offRig.bin, [
            "--server",
            pairing.server_url,
            "--token",
            pairing.pairing_token,
            "--delay",
            "0",
            "--name",
            name,
            "--hold",
            hold,
          ]),
        );
      const devices = (await offServer.api("/v1/api/device/list?limit=100", offRig.key)).body.data.devices as {
        name: string;
        device_id: number;
      }[];
      const [p1, p2] = ["Off/1", "Off/2"].map((n) => devices.find((d) => d.name === n)!.device_id);
      const made = await offServer.api("/v1/api/pool/create", offRig.key, {
        name: "Pair",
        strategy: "round_robin",
        members: [{ device_id: p1 }, { device_id: p2 }],
      });
      const pool_id = made.body.data.pool_id;
      const sendOne = async (i: number) =>
        (await offServer.api("/v1/api/sms/send", offRig.key, { recipient_contact: recipient(5000 + i), message: "Hello", pool_id })).body
          .data.notification_id as number;
      const row = (id: number) =>
        readDb(
          offRig.dataDir,
          (db) =>
            db.query("SELECT device_id AS d, dispatched_at AS pulled FROM notification WHERE id = ?").get(id) as {
              d: number;
              pulled: number | null;
            },
        );
      // The first goes to Off/1, which downloads it and holds it (its --hold); the second to Off/2.
      const pulled = await sendOne(0);
      await sendOne(1);
      await waitFor("Off/1 to download its message", () => row(pulled).pulled !== null, { timeoutMs: 15_000 });
      // Off/1 loses its network: what it is given now it never downloads.
      sims[0].proc.kill("SIGUSR1");
      const waiting: number[] = [];
      for (let i = 2; i < 6; i++) {
        const id = await sendOne(i);
        if (row(id).d === p1) waiting.push(id);
      }
      expect(waiting.length).toBeGreaterThan(0);
      await waitFor("Off/1's waiting messages to move to Off/2", () => waiting.every((id) => row(id).d === p2), { timeoutMs: 30_000 });
      expect(row(pulled).d).toBe(p1);
    } finally {
      for (const s of sims) s.proc.kill("SIGKILL");
      await offServer.stop("SIGKILL");
    }
  }, 90_000);
});
