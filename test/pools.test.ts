// Sender pools (src/modules/pools) in process, on both back ends: the API refuses what cannot be a
// member, round robin spreads evenly, sticky keeps each recipient on its member and follows a reply,
// geomatch prefers the recipient's country, a phone offline for a send for now is skipped and the
// log says so, the default pool serves sends that name neither pool nor device, and a pool nobody
// in which can send is a 400 naming each member's reason.
import { describe, expect, test } from "bun:test";
import { recordInbound } from "../src/modules/threads/inbound";
import { createTestContext, expectEnvelope, type TestContext } from "./helpers/context";

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

async function threePhones() {
  const ctx = await createTestContext();
  // Hundreds of sends a minute: a plan that lets them through.
  await ctx.services.accounts.upsertPlan({
    code: "owner",
    name: "Owner",
    monthlySmsLimit: null,
    requestsPerMinute: 100_000,
    requestsPerDay: 1_000_000,
  });
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
  test("round robin spreads 300 sends evenly, SIMs counted as members", async () => {
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
    for (let i = 0; i < 300; i++) {
      const s = await sent(ctx, { recipient_contact: recipient(i % 40), pool_id: pool.pool_id });
      const k = `${s.device}:${s.sim}`;
      count.set(k, (count.get(k) ?? 0) + 1);
    }
    expect([...count.entries()].sort()).toEqual([
      [`${a}:1`, 100],
      [`${a}:2`, 100],
      [`${b}:null`, 100],
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
    for (let round = 0; round < 5; round++)
      for (let i = 0; i < 50; i++) {
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
        ctx.services.threads,
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
    expect((await sent(ctx, { recipient_contact: "+447911123456", pool_id: pool.pool_id })).device).toBe(c);
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
