// Approval before a send, in process on either back end: a key that needs approval stores its sends
// awaiting_approval (credits reserved, nothing dispatched), and an approver approves, rejects or
// lets them expire; every send records its key and agent session.
import { afterEach, describe, expect, test } from "bun:test";
import type { CreatedKey } from "../../src/modules/accounts/service";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT } from "../helpers/numbers";

const SEND = "/v1/notification/sms/api/send";
let fake: FakeCloud | null = null;
afterEach(() => fake?.stop());

async function setup() {
  const ctx = await createTestContext();
  fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
  await ctx.cloudDevice(fake);
  await ctx.topUp(10);
  const agent = await ctx.services.accounts.createKey("support agent", ctx.workspace.id, { needsApproval: true });
  return { ctx, fake, agent };
}

async function agentSend(ctx: TestContext, agent: CreatedKey, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const r = await ctx.call("POST", SEND, {
    key: agent,
    body: { recipient_contact: RECIPIENT, message: "Your part arrived", reason: "the customer asked to be told", ...body },
    headers: { "x-pigeon-agent-session": "claude-desktop-7f3a", ...headers },
  });
  const data = expectEnvelope(r, 200).data;
  // The reply says the send waits (a send by any other key carries no status).
  expect(data.status).toBe("awaiting_approval");
  return data.notification_id as number;
}

const detail = async (ctx: TestContext, id: number) => expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data;
const balance = (ctx: TestContext) => ctx.services.credits.balance(ctx.workspace.id);

describe("approval", () => {
  test("a send by such a key awaits approval: reserved, not dispatched, and says who sent it and why", async () => {
    const { ctx, fake, agent } = await setup();
    const id = await agentSend(ctx, agent);
    const n = await detail(ctx, id);
    expect(n).toMatchObject({
      status: "awaiting_approval",
      api_key_id: agent.key_id,
      key_name: "support agent",
      agent_session: "claude-desktop-7f3a",
      approval_reason: "the customer asked to be told",
      approved_at: null,
      rejected_at: null,
      decided_by: null,
    });
    expect(await balance(ctx)).toBe(10 - n.cost);
    expect(n.cost).toBeGreaterThan(0);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    expect(fake.creates).toHaveLength(0);
    const events = await ctx.sql.all<{ type: string }>("SELECT type FROM event ORDER BY id");
    expect(events.map((e) => e.type)).toContain("notification.awaiting_approval");
    // A key that needs no approval sends as before, and its send names its key too.
    const plainReply = expectEnvelope(await ctx.post(SEND, { recipient_contact: RECIPIENT, message: "hello" }), 200).data;
    expect(plainReply).not.toHaveProperty("status");
    const plain = plainReply.notification_id;
    expect(await detail(ctx, plain)).toMatchObject({
      status: "pending",
      api_key_id: ctx.key.key_id,
      key_name: "test key",
      agent_session: null,
    });
  });

  test("listed for an approver; approved it is dispatched once; a second approval changes nothing", async () => {
    const { ctx, fake, agent } = await setup();
    const id = await agentSend(ctx, agent);
    const list = expectEnvelope(await ctx.get("/v1/api/approval/list"), 200).data;
    expect(list.pagination.total).toBe(1);
    expect(list.notifications[0]).toMatchObject({
      notification_id: id,
      key_name: "support agent",
      approval_reason: "the customer asked to be told",
    });
    expect(Date.parse(list.notifications[0].expires_at) - Date.parse(list.notifications[0].created_at)).toBe(86_400_000);
    const approved = expectEnvelope(await ctx.post("/v1/api/approval/approve", { ids: [id] }), 200).data;
    expect(approved).toEqual({ decided: [id], skipped: [] });
    const n = await detail(ctx, id);
    expect(n).toMatchObject({ status: "pending", decided_by: `key ${ctx.key.key_id} (test key)` });
    expect(n.approved_at).not.toBeNull();
    expect(n.logs.map((l: { event: string }) => l.event)).toContain("approved");
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    expect(fake.creates).toHaveLength(1);
    expect((await detail(ctx, id)).status).toBe("sent");
    const again = expectEnvelope(await ctx.post("/v1/api/approval/approve", { ids: [id] }), 200).data;
    expect(again).toEqual({ decided: [], skipped: [{ notification_id: id, status: "sent" }] });
    const types = (await ctx.sql.all<{ type: string }>("SELECT type FROM event ORDER BY id")).map((e) => e.type);
    expect(types.filter((t) => t === "notification.approved")).toHaveLength(1);
  });

  test("a key that needs approval may not list, approve or reject (403 approver_needs_approval)", async () => {
    const { ctx, agent } = await setup();
    const id = await agentSend(ctx, agent);
    for (const [method, path, body] of [
      ["GET", "/v1/api/approval/list", undefined],
      ["POST", "/v1/api/approval/approve", { ids: [id] }],
      ["POST", "/v1/api/approval/reject", { ids: [id] }],
    ] as const) {
      const r = await ctx.call(method, path, { key: agent, body });
      expect(expectEnvelope(r, 403).data.error_code).toBe("approver_needs_approval");
    }
    expect((await detail(ctx, id)).status).toBe("awaiting_approval");
  });

  test("rejected: failed approval_rejected with the approver's reason, refunded, never dispatched", async () => {
    const { ctx, fake, agent } = await setup();
    const id = await agentSend(ctx, agent);
    const r = expectEnvelope(await ctx.post("/v1/api/approval/reject", { ids: [id], reason: "wrong customer" }), 200).data;
    expect(r.decided).toEqual([id]);
    const n = await detail(ctx, id);
    expect(n).toMatchObject({ status: "failed", error_code: "approval_rejected", error_reason: "wrong customer" });
    expect(n.rejected_at).not.toBeNull();
    expect(await balance(ctx)).toBe(10);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    expect(fake.creates).toHaveLength(0);
  });

  test("expired after the approval time to live: failed approval_expired, refunded", async () => {
    const { ctx, agent } = await setup();
    const id = await agentSend(ctx, agent);
    ctx.clock.advance(86_400_000 - 1000);
    expect(await ctx.services.approval.expireDue()).toBe(0);
    ctx.clock.advance(2000);
    expect(await ctx.services.approval.expireDue()).toBe(1);
    expect(await detail(ctx, id)).toMatchObject({ status: "failed", error_code: "approval_expired", decided_by: "expiry" });
    expect(await balance(ctx)).toBe(10);
  });

  test("cancelled before a decision: cancelled and refunded", async () => {
    const { ctx, agent } = await setup();
    const id = await agentSend(ctx, agent);
    expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: id }, { key: agent }), 200);
    expect((await detail(ctx, id)).status).toBe("cancelled");
    expect(await balance(ctx)).toBe(10);
    expect(expectEnvelope(await ctx.post("/v1/api/approval/approve", { ids: [id] }), 200).data.decided).toEqual([]);
  });

  test("approved with a schedule still ahead: due at its schedule, not at once", async () => {
    const { ctx, fake, agent } = await setup();
    const at = new Date(ctx.clock.now() + 3_600_000).toISOString().replace("T", " ").slice(0, 19);
    const id = await agentSend(ctx, agent, { schedule_time: at });
    expectEnvelope(await ctx.post("/v1/api/approval/approve", { ids: [id] }), 200);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    ctx.clock.advance(3_600_000 + 1000);
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    expect(fake.creates).toHaveLength(1);
  });

  test("approve and reject at once, and approve twice at once: one decision wins, dispatched at most once", async () => {
    const { ctx, fake, agent } = await setup();
    const a = await agentSend(ctx, agent);
    const b = await agentSend(ctx, agent);
    const [approve, reject] = await Promise.all([
      ctx.post("/v1/api/approval/approve", { ids: [a] }),
      ctx.post("/v1/api/approval/reject", { ids: [a] }),
    ]);
    const decided = [expectEnvelope(approve, 200).data.decided, expectEnvelope(reject, 200).data.decided].flat();
    expect(decided).toEqual([a]);
    const status = (await detail(ctx, a)).status;
    expect(["pending", "failed"]).toContain(status);
    const twice = await Promise.all([
      ctx.post("/v1/api/approval/approve", { ids: [b] }),
      ctx.post("/v1/api/approval/approve", { ids: [b] }),
    ]);
    expect(twice.flatMap((r) => expectEnvelope(r, 200).data.decided)).toEqual([b]);
    await ctx.services.dispatcher.dispatchDue();
    expect(fake.creates).toHaveLength(status === "pending" ? 2 : 1);
    // Credits: each of them debited once; the rejected one (if it lost to the rejection) refunded once.
    const refunds = await ctx.sql.all<{ n: number }>(
      "SELECT count(*) AS n FROM credit_ledger WHERE reason = 'refund' AND notification_id IN (?, ?)",
      [a, b],
    );
    expect(Number(refunds[0].n)).toBe(status === "failed" ? 1 : 0);
  });

  test("bulk sends of such a key await approval each; a bad agent session header or a long reason is a 400", async () => {
    const { ctx, agent } = await setup();
    const bulk = await ctx.call("POST", "/v1/api/sms/send/bulk", {
      key: agent,
      body: {
        messages: [
          { recipient_contact: RECIPIENT, message: "one" },
          { recipient_contact: RECIPIENT, message: "two", reason: "why" },
        ],
      },
    });
    const results = expectEnvelope(bulk, 200).data.results as { notification_id: number }[];
    for (const r of results) expect((await detail(ctx, r.notification_id)).status).toBe("awaiting_approval");
    expect((await detail(ctx, results[1].notification_id)).approval_reason).toBe("why");
    const bad = await ctx.call("POST", SEND, {
      key: agent,
      body: { recipient_contact: RECIPIENT, message: "x" },
      headers: { "x-pigeon-agent-session": "a".repeat(129) },
    });
    expect(expectEnvelope(bad, 400).data).toMatchObject({ error_code: "validation_error", field: "X-Pigeon-Agent-Session" });
    const long = await ctx.call("POST", SEND, {
      key: agent,
      body: { recipient_contact: RECIPIENT, message: "x", reason: "r".repeat(501) },
    });
    expect(expectEnvelope(long, 400).data.error_code).toBe("validation_error");
    // Turned off, the key sends as any other.
    await ctx.services.accounts.setKeyApproval(String(agent.key_id), false);
    const id = expectEnvelope(await ctx.call("POST", SEND, { key: agent, body: { recipient_contact: RECIPIENT, message: "x" } }), 200).data
      .notification_id;
    expect((await detail(ctx, id)).status).toBe("pending");
  });
});
