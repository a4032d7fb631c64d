// Sender pools (src/modules/pools) in process, on both back ends: the API refuses what cannot be a
// member, round robin spreads evenly, sticky keeps each recipient on its member and follows a reply,
// geomatch prefers the recipient's country, a phone offline for a send for now is skipped and the
// log says so, the default pool serves sends that name neither pool nor device, and a pool nobody
// in which can send is a 400 naming each member's reason.
import { describe, expect, test } from "bun:test";
import { recordInbound } from "../../src/modules/threads/inbound";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { startFakeCloud } from "../helpers/fake-cloud";
import { ABROAD } from "../helpers/numbers";

const send = async (ctx: TestContext, body: Record<string, unknown>) => {
  const reply = await ctx.post("/v1/api/sms/send", { message: "Hello", ...body });
  return reply;
};
const deviceOf = async (ctx: TestContext, id: number) => expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data;
const sent = async (ctx: TestContext, body: Record<string, unknown>) => {
  const reply = await send(ctx, body);
  if (reply.status !== 200) throw new Error(reply.text);
  const n = await deviceOf(ctx, reply.body.data.notification_id);
  return {
    id: n.notification_id as number,
    device: n.device_id as number,
    sim: n.sim_number as number | null,
    logs: n.logs as { event: string; detail: string }[],
  };
};
const recipient = (i: number) => `+1415555${String(1000 + i).padStart(4, "0")}`;

/** Hundreds of sends a minute: a plan that lets them through. */
const roomyPlan = (ctx: TestContext) =>
  ctx.services.accounts.upsertPlan({
    code: "owner",
    name: "Owner",
    monthlySmsLimit: null,
    requestsPerMinute: 100_000,
    requestsPerDay: 1_000_000,
  });

async function threePhones() {
  const ctx = await createTestContext();
  await roomyPlan(ctx);
  const a = await ctx.phone("A");
  const b = await ctx.phone("B");
  const c = await ctx.phone("C");
  return { ctx, a: a.device_id, b: b.device_id, c: c.device_id };
}

describe("pools: the API", () => {
  test("create, list, get, update and delete; one default; refusals name the field", async () => {
    const { ctx, a, b } = await threePhones();
    const made = expectEnvelope(
      await ctx.post("/v1/api/pool/create", {
        name: "Shop",
        members: [{ device_id: a, sim_number: 1, number: "+1 (415) 555-0100" }, { device_id: a, sim_number: 2 }, { device_id: b }],
        is_default: true,
      }),
      200,
    ).data;
    expect(made).toMatchObject({ name: "Shop", strategy: "sticky", geomatch: false, is_default: true });
    // Its Messaging Service SID, as Twilio's libraries send it, on create, get and list.
    const mg = `MG${made.pool_id.toString(16).padStart(32, "0")}`;
    expect(made.messaging_service_sid).toBe(mg);
    expect(expectEnvelope(await ctx.get(`/v1/api/pool/${made.pool_id}`), 200).data.messaging_service_sid).toBe(mg);
    expect(
      expectEnvelope(await ctx.get("/v1/api/pool/list"), 200).data.pools.map(
        (p: { messaging_service_sid: string }) => p.messaging_service_sid,
      ),
    ).toEqual([mg]);
    expect(
      made.members.map((m: { device_id: number; sim_number: number | null; number: string | null }) => [
        m.device_id,
        m.sim_number,
        m.number,
      ]),
    ).toEqual([
      [a, 1, "+14155550100"],
      [a, 2, null],
      [b, null, null],
    ]);
    const second = expectEnvelope(
      await ctx.post("/v1/api/pool/create", { name: "Other", members: [{ device_id: b }], is_default: true }),
      200,
    ).data;
    // Only one default: the newer took it.
    expect(expectEnvelope(await ctx.get(`/v1/api/pool/${made.pool_id}`), 200).data.is_default).toBe(false);
    expect(expectEnvelope(await ctx.get("/v1/api/pool/list"), 200).data.pools.map((p: { name: string }) => p.name)).toEqual([
      "Shop",
      "Other",
    ]);

    const refusals: [Record<string, unknown>, number, string][] = [
      [{ name: "Shop", members: [{ device_id: b }] }, 409, "duplicate_pool"],
      [{ name: "X", members: [] }, 400, "validation_error"],
      [{ name: "X", members: [{ device_id: 999_999 }] }, 404, "not_found"],
      [{ name: "X", members: [{ device_id: a }, { device_id: a }] }, 400, "validation_error"],
      [{ name: "X", members: [{ device_id: a, sim_number: 4 }] }, 400, "validation_error"],
      [{ name: "X", members: [{ device_id: a, number: "12" }] }, 400, "invalid_phone_number"],
      [{ name: "X", strategy: "random", members: [{ device_id: a }] }, 400, "validation_error"],
      [{ name: "X", members: [{ device_id: a, extra: 1 }] }, 400, "validation_error"],
    ];
    for (const [body, status, code] of refusals) {
      const reply = await ctx.post("/v1/api/pool/create", body);
      expect({ body, status: reply.status, code: reply.body.data.error_code }).toEqual({ body, status, code });
    }
    const updated = expectEnvelope(
      await ctx.post("/v1/api/pool/update", { pool_id: made.pool_id, strategy: "round_robin", members: [{ device_id: b }] }),
      200,
    ).data;
    expect(updated).toMatchObject({ strategy: "round_robin", name: "Shop" });
    expect(updated.members).toHaveLength(1);
    expect(expectEnvelope(await ctx.post("/v1/api/pool/delete", { pool_id: second.pool_id }), 200).data.deleted).toBe(true);
    expect((await ctx.get(`/v1/api/pool/${second.pool_id}`)).status).toBe(404);
    // Another workspace sees none of them.
    const other = await ctx.otherWorkspace();
    expect(expectEnvelope(await ctx.get("/v1/api/pool/list", { key: other.key }), 200).data.pools).toEqual([]);
    expect((await ctx.get(`/v1/api/pool/${made.pool_id}`, { key: other.key })).status).toBe(404);
  });

  test("a cloud number takes no SIM; a chat-app number is no member", async () => {
    const { ctx, a } = await threePhones();
    await ctx.sql.run(
      "INSERT INTO device (workspace_id, name, kind, external_id, created_at, updated_at) VALUES (?, 'wa', 'chatapp', 'wa-1', 0, 0)",
      [ctx.workspace.id],
    );
    const wa = (await ctx.sql.get<{ id: number }>("SELECT id FROM device WHERE external_id = 'wa-1'"))!.id;
    const chat = await ctx.post("/v1/api/pool/create", { name: "X", members: [{ device_id: a }, { device_id: Number(wa) }] });
    expect(chat.status).toBe(400);
    expect(chat.body.data).toMatchObject({ error_code: "invalid_device", field: "members[1].device_id" });
  });
});

describe("pools: choosing the member", () => {
  // Four turns of the three members show the rotation; more sends only repeat it.
  test("round robin spreads 12 sends evenly, SIMs counted as members", async () => {
    const { ctx, a, b } = await threePhones();
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", {
        name: "RR",
        strategy: "round_robin",
        members: [{ device_id: a, sim_number: 1 }, { device_id: a, sim_number: 2 }, { device_id: b }],
      }),
      200,
    ).data;
    const count = new Map<string, number>();
    for (let i = 0; i < 12; i++) {
      const s = await sent(ctx, { recipient_contact: recipient(i % 5), pool_id: pool.pool_id });
      const k = `${s.device}:${s.sim}`;
      count.set(k, (count.get(k) ?? 0) + 1);
    }
    expect([...count.entries()].sort()).toEqual([
      [`${a}:1`, 4],
      [`${a}:2`, 4],
      [`${b}:null`, 4],
    ]);
  });

  test("sticky: each recipient keeps its member across rounds; new ones spread; a reply moves the sender", async () => {
    const { ctx, a, b, c } = await threePhones();
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", {
        name: "Sticky",
        members: [{ device_id: a }, { device_id: b }, { device_id: c }],
        is_default: true,
      }),
      200,
    ).data;
    const first = new Map<string, number>();
    // Fifteen recipients, five for each member, and two rounds after the first that must keep them.
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < 15; i++) {
        const s = await sent(ctx, { recipient_contact: recipient(i) });
        if (round === 0) first.set(recipient(i), s.device);
        else expect({ to: recipient(i), device: s.device }).toEqual({ to: recipient(i), device: first.get(recipient(i))! });
      }
    // The new recipients went to the least loaded member each time: all three are used, evenly.
    const per = [a, b, c].map((d) => [...first.values()].filter((x) => x === d).length);
    expect(Math.max(...per) - Math.min(...per)).toBeLessThanOrEqual(1);
    // The log says which member and why.
    const again = await sent(ctx, { recipient_contact: recipient(7) });
    const line = again.logs.find((l) => l.event === "pool")!;
    expect(line.detail).toContain(`pool ${pool.pool_id} (Sticky, sticky)`);
    expect(line.detail).toContain("kept for this recipient");

    // Recipient 7 writes to another phone: the next message goes out through that one.
    const kept = first.get(recipient(7))!;
    const other = [a, b, c].find((d) => d !== kept)!;
    await ctx.services.storage.transaction(() =>
      recordInbound(
        ctx.services.channelCore.threads,
        ctx.services.events,
        {
          workspaceId: ctx.workspace.id,
          channel: "sms",
          deviceId: other,
          from: recipient(7),
          body: "hi",
          externalId: "in-7",
          at: ctx.clock.now(),
        },
        ctx.services.channelCore.onInbound,
      ),
    );
    expect((await sent(ctx, { recipient_contact: recipient(7) })).device).toBe(other);
  });

  test("geomatch: a member in the recipient's country (and +1 area code) goes first", async () => {
    const { ctx, a, b, c } = await threePhones();
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", {
        name: "Geo",
        strategy: "least_loaded",
        geomatch: true,
        members: [
          { device_id: a, number: "+14155550100" },
          { device_id: b, number: "+12125550100" },
          { device_id: c, number: "+447911000000" },
        ],
      }),
      200,
    ).data;
    expect((await sent(ctx, { recipient_contact: ABROAD, pool_id: pool.pool_id })).device).toBe(c);
    expect((await sent(ctx, { recipient_contact: "+12125559876", pool_id: pool.pool_id })).device).toBe(b);
    const sf = await sent(ctx, { recipient_contact: "+14155559876", pool_id: pool.pool_id });
    expect(sf.device).toBe(a);
    expect(sf.logs.find((l) => l.event === "pool")!.detail).toContain("area code 415");
    // No member in the recipient's country: any of them.
    expect([a, b, c]).toContain((await sent(ctx, { recipient_contact: "+33612345678", pool_id: pool.pool_id })).device);
  });

  test("an offline phone and a paused member are skipped, and the log says why; none usable is a 400 naming each", async () => {
    const { ctx, a, b } = await threePhones();
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", {
        name: "P",
        strategy: "round_robin",
        members: [{ device_id: a }, { device_id: b, paused: true }],
      }),
      200,
    ).data;
    // Phone A goes quiet for longer than PIGEON_OFFLINE_AFTER.
    ctx.clock.advance(301_000);
    await ctx.sql.run("UPDATE device SET last_seen_at = ? WHERE id <> ?", [ctx.clock.now(), a]);
    const refused = await send(ctx, { recipient_contact: recipient(1), pool_id: pool.pool_id });
    expect(refused.status).toBe(400);
    expect(refused.body.data.error_code).toBe("pool_unavailable");
    expect(refused.body.data.members).toEqual([
      { member_id: expect.any(Number), device_id: a, reason: "offline" },
      { member_id: expect.any(Number), device_id: b, reason: "paused" },
    ]);
    // B resumed: it takes the send, and the log names A as skipped.
    await ctx.post("/v1/api/pool/update", { pool_id: pool.pool_id, members: [{ device_id: a }, { device_id: b }] });
    const s = await sent(ctx, { recipient_contact: recipient(1), pool_id: pool.pool_id });
    expect(s.device).toBe(b);
    expect(s.logs.find((l) => l.event === "pool")!.detail).toContain(`skipped member`);
    expect(s.logs.find((l) => l.event === "pool")!.detail).toContain(`(device ${a}): offline`);
    // A scheduled send may wait for an offline phone.
    const later = new Date(ctx.clock.now() + 3_600_000).toISOString().slice(0, 19).replace("T", " ");
    const waiting = await send(ctx, { recipient_contact: recipient(2), pool_id: pool.pool_id, schedule_time: later });
    expect(waiting.status).toBe(200);
  });

  test("a send names a pool or a device, not both; an unknown pool is 404; without a default nothing changes", async () => {
    const { ctx, a } = await threePhones();
    // No pool: the first active device, as before pools.
    expect((await sent(ctx, { recipient_contact: recipient(1) })).device).toBe(a);
    const pool = expectEnvelope(await ctx.post("/v1/api/pool/create", { name: "P", members: [{ device_id: a }] }), 200).data;
    const both = await send(ctx, { recipient_contact: recipient(1), pool_id: pool.pool_id, device_id: a });
    expect(both.status).toBe(400);
    expect(both.body.data.field).toBe("pool_id");
    const sim = await send(ctx, { recipient_contact: recipient(1), pool_id: pool.pool_id, sim_number: 1 });
    expect(sim.body.data.field).toBe("sim_number");
    expect((await send(ctx, { recipient_contact: recipient(1), pool_id: 999_999 })).status).toBe(404);
    // A device named is the device used, default pool or not.
    await ctx.post("/v1/api/pool/update", { pool_id: pool.pool_id, is_default: true });
    const pinned = await sent(ctx, { recipient_contact: recipient(1), device_id: a });
    expect(pinned.logs.some((l) => l.event === "pool")).toBe(false);
    expect((await sent(ctx, { recipient_contact: recipient(1) })).logs.some((l) => l.event === "pool")).toBe(true);
  });
});

describe("pools: carrier-plan caps", () => {
  test("a daily cap of 10 moves the 11th message on; every member capped makes a send wait for the first reset", async () => {
    const { ctx, a, b } = await threePhones();
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", {
        name: "Capped",
        strategy: "least_loaded",
        members: [
          { device_id: a, daily_limit: 10 },
          { device_id: b, daily_limit: 12, monthly_limit: 500 },
        ],
      }),
      200,
    ).data;
    // A takes the first ten (B is kept busier by queued messages of its own).
    for (let i = 0; i < 20; i++) await sent(ctx, { recipient_contact: recipient(900 + i), device_id: b });
    for (let i = 0; i < 10; i++) expect((await sent(ctx, { recipient_contact: recipient(i), pool_id: pool.pool_id })).device).toBe(a);
    const eleventh = await sent(ctx, { recipient_contact: recipient(10), pool_id: pool.pool_id });
    expect(eleventh.device).toBe(b);
    expect(eleventh.logs.find((l) => l.event === "pool")!.detail).toContain("at its daily limit (10 of 10 messages)");
    // B's twelve are used up too: the next send waits until midnight UTC, and says so.
    for (let i = 11; i < 22; i++) await sent(ctx, { recipient_contact: recipient(i), pool_id: pool.pool_id });
    const usage = expectEnvelope(await ctx.get(`/v1/api/pool/${pool.pool_id}/usage`), 200).data;
    expect(usage.members.map((m: { today: { messages: number } }) => m.today.messages)).toEqual([10, 12]);
    expect(usage.members[1].this_month).toEqual({ messages: 12, segments: 12, limit: 500 });
    const held = await send(ctx, { recipient_contact: recipient(99), pool_id: pool.pool_id });
    expect(held.status).toBe(200);
    expect(held.body.data.scheduled_for).toBe("2026-01-16T00:00:00.000Z");
    const n = await deviceOf(ctx, held.body.data.notification_id);
    expect(n.logs.find((l: { event: string }) => l.event === "pool_held").detail).toContain("every member is at a cap");
    // One with a time to live that ends before the reset fails quota_exhausted then.
    const short = await send(ctx, { recipient_contact: recipient(97), pool_id: pool.pool_id, ttl: 600 });
    expect(short.body.data.scheduled_for).toBe("2026-01-16T00:00:00.000Z");
    ctx.clock.advance(601_000);
    await ctx.services.expiry.expireDue();
    expect(await deviceOf(ctx, short.body.data.notification_id)).toMatchObject({ status: "failed", error_code: "quota_exhausted" });
    ctx.clock.advance(-601_000);
    // It counts in the day it goes out: tomorrow's first.
    expect(expectEnvelope(await ctx.get(`/v1/api/pool/${pool.pool_id}/usage`), 200).data.members[0].today.messages).toBe(10);
    // Once the day turns, the caps are fresh.
    ctx.clock.set(Date.UTC(2026, 0, 16, 0, 0, 1));
    await ctx.sql.run("UPDATE device SET last_seen_at = ?", [ctx.clock.now()]);
    const next = await send(ctx, { recipient_contact: recipient(98), pool_id: pool.pool_id });
    expect(next.body.data.scheduled_for).toBeNull();
  });

  test("in one bulk request, the items before count toward a member's caps: messages, segments and distinct recipients", async () => {
    const { ctx, a, b, c } = await threePhones();
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", {
        name: "Bulk caps",
        strategy: "round_robin",
        members: [
          { device_id: a, daily_limit: 5 },
          { device_id: b, daily_limit: 6, count: "segments" },
          { device_id: c, monthly_unique_recipients: 4 },
        ],
      }),
      200,
    ).data;
    const long = "x".repeat(300); // two segments
    const bulk = await ctx.post("/v1/api/sms/send/bulk", {
      messages: Array.from({ length: 12 }, (_, i) => ({ recipient_contact: recipient(i), message: long, pool_id: pool.pool_id })),
    });
    expect(bulk.status).toBe(200);
    const devices = await Promise.all(
      bulk.body.data.results.map(async (r: { notification_id: number }) => (await deviceOf(ctx, r.notification_id)).device_id),
    );
    const per = (d: number) => devices.filter((x) => x === d).length;
    // A takes 5 messages, B 3 two-segment ones (6 segments), C 4 recipients: 12 in all, none over.
    expect([per(a), per(b), per(c)]).toEqual([5, 3, 4]);
    const usage = expectEnvelope(await ctx.get(`/v1/api/pool/${pool.pool_id}/usage`), 200).data.members;
    expect(usage.map((m: { today: { messages: number; segments: number } }) => m.today)).toEqual([
      { messages: 5, segments: 10, limit: 5 },
      { messages: 3, segments: 6, limit: 6 },
      { messages: 4, segments: 8, limit: null },
    ]);
  });

  test("segments count toward a segment cap; distinct recipients toward theirs", async () => {
    const { ctx, a, b } = await threePhones();
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", {
        name: "Plans",
        strategy: "round_robin",
        members: [
          { device_id: a, daily_limit: 5, count: "segments" },
          { device_id: b, monthly_unique_recipients: 2 },
        ],
      }),
      200,
    ).data;
    const long = "x".repeat(300); // 2 segments of GSM-7
    expect((await sent(ctx, { recipient_contact: recipient(1), pool_id: pool.pool_id, message: long })).device).toBe(a);
    expect((await sent(ctx, { recipient_contact: recipient(2), pool_id: pool.pool_id })).device).toBe(b);
    expect((await sent(ctx, { recipient_contact: recipient(3), pool_id: pool.pool_id, message: long })).device).toBe(a);
    // A has 4 of 5 segments: a 2-segment message does not fit, so B takes it (its second recipient).
    expect((await sent(ctx, { recipient_contact: recipient(4), pool_id: pool.pool_id, message: long })).device).toBe(b);
    // B has texted two people this month: a third goes to A (one segment still fits), a known one may still go to B.
    expect((await sent(ctx, { recipient_contact: recipient(5), pool_id: pool.pool_id })).device).toBe(a);
    expect((await sent(ctx, { recipient_contact: recipient(2), pool_id: pool.pool_id })).device).toBe(b);
    const usage = expectEnvelope(await ctx.get(`/v1/api/pool/${pool.pool_id}/usage`), 200).data.members;
    expect(usage[0].today).toEqual({ messages: 3, segments: 5, limit: 5 });
    expect(usage[1].unique_recipients).toEqual({ count: 2, limit: 2 });
    const refused = await ctx.post("/v1/api/pool/create", { name: "Bad", members: [{ device_id: a, daily_limit: 0 }] });
    expect(refused.status).toBe(400);
    expect((await ctx.post("/v1/api/pool/create", { name: "Bad", members: [{ device_id: a, count: "words" }] })).status).toBe(400);
  });
});

describe("pools: members whose carrier keeps failing", () => {
  test("three carrier failures in a row pause a member (pool.member_paused); after its back-off it resumes; a success clears the count", async () => {
    const ctx = await createTestContext();
    await roomyPlan(ctx);
    const fakeA = await startFakeCloud({ deliver: (req) => ctx.app.handle(req), accountSid: "AC0000000000000000000000000000000a" });
    const fakeB = await startFakeCloud({ deliver: (req) => ctx.app.handle(req), accountSid: "AC0000000000000000000000000000000b" });
    try {
      const a = (await ctx.cloudDevice(fakeA)).device_id;
      const b = (await ctx.cloudDevice(fakeB)).device_id;
      await ctx.topUp(1000);
      const hook = await ctx.post("/v1/api/webhook/create", {
        url: "http://127.0.0.1:9/hook",
        events: ["pool.member_paused", "pool.member_resumed"],
      });
      expect(hook.status).toBe(200);
      const pool = expectEnvelope(
        await ctx.post("/v1/api/pool/create", {
          name: "Clouds",
          strategy: "least_loaded",
          failure_backoff_seconds: 600,
          members: [{ device_id: a }, { device_id: b }],
        }),
        200,
      ).data;
      expect(pool).toMatchObject({ failure_threshold: 3, failure_backoff_seconds: 600 });
      const viaPool = async (i: number) => {
        const s = await sent(ctx, { recipient_contact: recipient(i), pool_id: pool.pool_id });
        await ctx.services.dispatcher.dispatchDue();
        return s;
      };
      // A fails twice, then succeeds: the count starts again.
      for (const i of [1, 2]) {
        fakeA.failNext(400, 21610, "Attempt to send to unsubscribed recipient");
        expect((await viaPool(i)).device).toBe(a);
      }
      expect((await viaPool(3)).device).toBe(a);
      const members = async () => expectEnvelope(await ctx.get(`/v1/api/pool/${pool.pool_id}`), 200).data.members;
      expect((await members())[0].consecutive_failures).toBe(0);
      // Three in a row: paused for 600 s, announced; the next send goes to B.
      for (const i of [4, 5, 6]) {
        fakeA.failNext(400, 30003, "Unreachable destination handset");
        expect((await viaPool(i)).device).toBe(a);
      }
      const paused = (await members())[0];
      expect(paused.paused_until).toBe(new Date(ctx.clock.now() + 600_000).toISOString());
      const events = await ctx.sql.all<{ type: string; data: string }>(
        "SELECT type, data FROM event WHERE type LIKE 'pool.%' ORDER BY created_at",
      );
      expect(events.map((e) => e.type)).toEqual(["pool.member_paused"]);
      expect(JSON.parse(events[0].data)).toMatchObject({
        pool_id: pool.pool_id,
        device_id: a,
        failures: 3,
        last_error_code: "30003",
        backoff_seconds: 600,
      });
      const moved = await viaPool(7);
      expect(moved.device).toBe(b);
      expect(moved.logs.find((l) => l.event === "pool")!.detail).toContain("paused after carrier failures");
      // After the back-off it is chosen again and announced once.
      ctx.clock.advance(601_000);
      expect(await ctx.services.pools.resumeDue()).toBe(1);
      expect(await ctx.services.pools.resumeDue()).toBe(0);
      expect((await ctx.sql.all<{ type: string }>("SELECT type FROM event WHERE type LIKE 'pool.%'")).map((e) => e.type).sort()).toEqual([
        "pool.member_paused",
        "pool.member_resumed",
      ]);
      // Chosen again, and paused again before a message of it went out: the back-off doubles.
      for (const i of [8, 9, 10]) {
        fakeA.failNext(400, 30003, "Unreachable destination handset");
        expect((await viaPool(i)).device).toBe(a);
      }
      expect((await members())[0].paused_until).toBe(new Date(ctx.clock.now() + 1_200_000).toISOString());
      // A resume by hand lifts it at once, and says so once, naming the key.
      const poolEvents = async () =>
        (
          await ctx.sql.all<{ type: string; data: string }>("SELECT type, data FROM event WHERE type LIKE 'pool.%' ORDER BY created_at")
        ).map((e) => ({ type: e.type, ...JSON.parse(e.data) }));
      const seen = (await poolEvents()).length;
      expect((await poolEvents()).slice(-1)[0]).toMatchObject({ type: "pool.member_paused", by: { type: "carrier_failures" } });
      // (The test clock stands still: each change a second later keeps the events' order readable.)
      ctx.clock.advance(1000);
      await ctx.post("/v1/api/pool/update", { pool_id: pool.pool_id, members: [{ device_id: a, resume: true }, { device_id: b }] });
      expect((await members())[0].paused_until).toBeNull();
      const key = { type: "api_key", key_id: ctx.key.key_id, key_name: ctx.key.name };
      expect((await poolEvents()).slice(seen)).toEqual([
        { type: "pool.member_resumed", pool_id: pool.pool_id, member_id: paused.member_id, device_id: a, sim_number: null, by: key },
      ]);
      // Paused by hand, then resumed by hand: each announced once; an update that changes neither announces nothing.
      const update = (aPaused: boolean) => {
        ctx.clock.advance(1000);
        return ctx.post("/v1/api/pool/update", { pool_id: pool.pool_id, members: [{ device_id: a, paused: aPaused }, { device_id: b }] });
      };
      expect((await update(true)).status).toBe(200);
      expect((await update(true)).status).toBe(200);
      expect((await ctx.post("/v1/api/pool/update", { pool_id: pool.pool_id, name: "Clouds 2" })).status).toBe(200);
      expect((await update(false)).status).toBe(200);
      expect((await update(false)).status).toBe(200);
      expect((await poolEvents()).slice(seen + 1)).toEqual([
        {
          type: "pool.member_paused",
          pool_id: pool.pool_id,
          member_id: paused.member_id,
          device_id: a,
          sim_number: null,
          failures: null,
          last_error_code: null,
          paused_until: null,
          backoff_seconds: null,
          by: key,
        },
        { type: "pool.member_resumed", pool_id: pool.pool_id, member_id: paused.member_id, device_id: a, sim_number: null, by: key },
      ]);
      // The back-off's own resume names it.
      for (const i of [11, 12, 13]) {
        fakeA.failNext(400, 30003, "Unreachable destination handset");
        expect((await viaPool(i)).device).toBe(a);
      }
      ctx.clock.advance(3_600_000);
      expect(await ctx.services.pools.resumeDue()).toBe(1);
      expect((await poolEvents()).slice(-1)[0]).toMatchObject({ type: "pool.member_resumed", by: { type: "backoff_ended" } });
    } finally {
      fakeA.stop();
      fakeB.stop();
    }
  });
});

describe("pools: a member's phone that goes offline", () => {
  test("its never-downloaded messages move to another phone member of its pool (with that member's SIM); downloaded ones wait", async () => {
    const { ctx, a, b, c } = await threePhones();
    // C is the most recently seen phone, but not in the pool: the pool's own member B takes the messages.
    const pool = expectEnvelope(
      await ctx.post("/v1/api/pool/create", {
        name: "Two",
        strategy: "round_robin",
        members: [{ device_id: a }, { device_id: b, sim_number: 2 }],
      }),
      200,
    ).data;
    const onA: number[] = [];
    for (let i = 0; i < 6; i++) {
      const s = await sent(ctx, { recipient_contact: recipient(i), pool_id: pool.pool_id });
      if (s.device === a) onA.push(s.id);
    }
    expect(onA).toHaveLength(3);
    // A downloaded the first of them before it went quiet; the phones had been announced online.
    await ctx.sql.run("UPDATE notification SET dispatched_at = ? WHERE id = ?", [ctx.clock.now(), onA[0]]);
    await ctx.sql.run("UPDATE device SET presence = 'online'");
    ctx.clock.advance(6 * 60_000);
    await ctx.sql.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [ctx.clock.now() - 1000, b]);
    await ctx.sql.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [ctx.clock.now(), c]);
    await ctx.services.phone.watchPresence();
    await ctx.services.phone.rehomeOffline();
    const after = await Promise.all(onA.map((id) => deviceOf(ctx, id)));
    expect(after.map((n) => [n.device_id, n.sim_number])).toEqual([
      [a, null],
      [b, 2],
      [b, 2],
    ]);
    expect(after[1].logs.at(-1).detail).toContain("another member of its sender pool takes it");
  });
});

describe("pools: the SMSGate-compatible route", () => {
  test("poolId chooses the phone for the first recipient, the others go through it; not with deviceId", async () => {
    const { ctx, a, b } = await threePhones();
    const pool = expectEnvelope(await ctx.post("/v1/api/pool/create", { name: "Gate", members: [{ device_id: b }] }), 200).data;
    const gate = (body: Record<string, unknown>) =>
      ctx.call("POST", "/3rdparty/v1/messages", {
        key: null,
        headers: { authorization: `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}` },
        body: { textMessage: { text: "Hello" }, phoneNumbers: [recipient(1), recipient(2)], ...body },
      });
    const r = await gate({ poolId: pool.pool_id });
    expect(r.status).toBe(202);
    const rows = await ctx.sql.all<{ deviceId: number }>('SELECT device_id AS "deviceId" FROM notification ORDER BY id');
    expect(rows.map((x) => Number(x.deviceId))).toEqual([b, b]);
    const both = await gate({ poolId: pool.pool_id, deviceId: String(a) });
    expect(both.status).toBe(400);
  });
});
