// The threads API over every conversation: both directions, paging, filters, tenancy.
import { describe, expect, test } from "bun:test";
import { smsSender } from "../helpers/api";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { postPhoneWebhook, registerAppPhone } from "../helpers/phone";
import { RECIPIENT, ABROAD } from "../helpers/numbers";

const ADA = RECIPIENT;
const BOB = ABROAD;

async function phone(ctx: TestContext) {
  const reg = await registerAppPhone(ctx);
  let n = 0;
  return {
    auth: reg.auth,
    /** The phone reports an SMS it received. */
    async receive(from: string, text: string) {
      const body = JSON.stringify({
        id: `in-${++n}-${from}`,
        webhookId: "w",
        event: "sms:received",
        deviceId: reg.id,
        payload: { messageId: `m${n}`, message: text, sender: from, receivedAt: new Date(ctx.clock.now()).toISOString() },
      });
      const res = await postPhoneWebhook(ctx, reg.signingKey, body);
      expect(res.status).toBe(204);
    },
  };
}

const send = smsSender({});

describe("threads", () => {
  test("a two-way SMS conversation: one thread, both directions, newest first, with each outbound status", async () => {
    const ctx = await createTestContext();
    const p = await phone(ctx);
    const contact = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Ada", phone: ADA }), 200).data;
    const first = await send(ctx, { recipient_contact: ADA, message: "Your order is ready" });
    ctx.clock.advance(60_000);
    await p.receive(ADA, "Great, coming at 5");
    ctx.clock.advance(60_000);
    await send(ctx, { recipient_contact: ADA, message: "See you then" });
    await ctx.services.state.transition(first, "delivered", {});

    const list = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data;
    expect(list.pagination.total).toBe(1);
    const thread = list.threads[0];
    expect(thread).toMatchObject({
      channel: "sms",
      peer: ADA,
      contact: { contact_id: contact.contact_id, name: "Ada" },
      device_id: null,
      unread_count: 1,
      last_message: { body: "See you then", direction: "outbound", at: "2026-01-15T12:02:00.000Z" },
      window: null,
    });
    const msgs = expectEnvelope(await ctx.get(`/v1/api/thread/${thread.thread_id}/messages`), 200).data;
    expect(msgs.messages.map((m: { direction: string; body: string; status: string }) => [m.direction, m.body, m.status])).toEqual([
      ["outbound", "See you then", "pending"],
      ["inbound", "Great, coming at 5", "received"],
      ["outbound", "Your order is ready", "delivered"],
    ]);
    expect(msgs.messages[2].notification_id).toBe(first);

    const read = expectEnvelope(await ctx.post(`/v1/api/thread/${thread.thread_id}/read`), 200).data;
    expect(read.unread_count).toBe(0);
  });

  test("threads per person, most recent first, paged and filtered", async () => {
    const ctx = await createTestContext();
    const p = await phone(ctx);
    const bob = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Bob", phone: BOB }), 200).data;
    await send(ctx, { recipient_contact: ADA, message: "to Ada" });
    ctx.clock.advance(1000);
    await p.receive(BOB, "from Bob");
    ctx.clock.advance(1000);
    await send(ctx, { recipient_contact: "+33612345678", message: "to Claire" });

    const peers = async (query: Record<string, string | number | boolean> = {}) =>
      expectEnvelope(await ctx.get("/v1/api/thread/list", { query }), 200).data.threads.map((t: { peer: string }) => t.peer);
    expect(await peers()).toEqual(["+33612345678", BOB, ADA]);
    expect(await peers({ limit: 2, page: 2 })).toEqual([ADA]);
    expect(await peers({ unread: true })).toEqual([BOB]);
    expect(await peers({ unread: false })).toEqual(["+33612345678", ADA]);
    expect(await peers({ contact_id: bob.contact_id })).toEqual([BOB]);
    expect(await peers({ channel: "chatapp" })).toEqual([]);
    expect(expectEnvelope(await ctx.get("/v1/api/thread/list", { query: { channel: "fax" } }), 400).data.field).toBe("channel");
    expect(expectEnvelope(await ctx.get("/v1/api/thread/list", { query: { limit: 500 } }), 400).data.field).toBe("limit");
  });

  test("messages page newest first", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    for (let i = 0; i < 5; i++) {
      await send(ctx, { recipient_contact: ADA, message: `m${i}` });
      ctx.clock.advance(1000);
    }
    const thread = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads[0];
    const page = expectEnvelope(await ctx.get(`/v1/api/thread/${thread.thread_id}/messages`, { query: { page: 2, limit: 2 } }), 200).data;
    expect(page.messages.map((m: { body: string }) => m.body)).toEqual(["m2", "m1"]);
    expect(page.pagination).toEqual({ page: 2, limit: 2, total: 5 });
  });

  test("a contact created after the first message is linked on the next one", async () => {
    const ctx = await createTestContext();
    const p = await phone(ctx);
    await p.receive(ADA, "hello?");
    const before = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads[0];
    expect(before.contact).toBeNull();
    const ada = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Ada", phone: ADA }), 200).data;
    await p.receive(ADA, "it's Ada");
    const after = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads[0];
    expect(after.contact).toEqual({ contact_id: ada.contact_id, name: "Ada" });
    // Deleting the contact keeps the conversation.
    await ctx.post("/v1/api/contact/delete", { contact_id: ada.contact_id });
    const orphan = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads[0];
    expect(orphan).toMatchObject({ thread_id: after.thread_id, contact: null });
  });

  test("another workspace's thread answers 404, and its threads are not listed", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await send(ctx, { recipient_contact: ADA, message: "private" });
    const thread = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads[0];
    const other = await ctx.otherWorkspace();
    expect((await ctx.get(`/v1/api/thread/${thread.thread_id}/messages`, { key: other.key })).status).toBe(404);
    expect((await ctx.post(`/v1/api/thread/${thread.thread_id}/read`, undefined, { key: other.key })).status).toBe(404);
    expect(expectEnvelope(await ctx.get("/v1/api/thread/list", { key: other.key }), 200).data.threads).toEqual([]);
    expect((await ctx.get("/v1/api/thread/99999/messages")).status).toBe(404);
  });
});
