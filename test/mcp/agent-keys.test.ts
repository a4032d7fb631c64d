// An agent's key over MCP, judged by the official MCP client: what the key was not given comes back
// as a tool error naming the refusal (a scope it lacks, a recipient off its list, its day's cap), a
// resource it may not read cannot be subscribed to, and a key that needs approval sends nothing until
// a person approves, the agent told of the decision through the message's resource. Both back ends.
import { describe, expect, test } from "bun:test";
import type { CreatedKey } from "../../src/modules/accounts/service";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { connectHttp, fetchVia, until, type ToolAnswer } from "../helpers/mcp";
import { appPhone } from "../helpers/phone";

const CUSTOMER = { name: "Ann Example", phone: "+14155552671" };
const STRANGER = "+14155550123";

async function workspace(ctx: TestContext) {
  await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100_000, requestsPerDay: 1_000_000 });
  await ctx.topUp(1000);
  const phone = await appPhone(ctx);
  await ctx.post("/v1/api/contact/create", { name: CUSTOMER.name, phone: CUSTOMER.phone });
  await phone.receive(CUSTOMER.phone, "Is my part there yet?");
  return phone;
}

async function agentClient(ctx: TestContext, key: CreatedKey, era: "legacy" | "modern" = "legacy") {
  const client = await connectHttp(
    "http://localhost/mcp",
    { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret },
    { era, fetch: fetchVia((r) => ctx.app.handle(r)) },
  );
  const call = async (name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as unknown as ToolAnswer;
  return { client, call };
}

describe("an agent's key over MCP", () => {
  test("a tool that needs a scope the key lacks is a tool error key_scope_denied naming it", async () => {
    const ctx = await createTestContext();
    await workspace(ctx);
    const reader = await ctx.services.accounts.createKey("reader", ctx.workspace.id, { scopes: ["threads:read", "messages:read"] });
    const { client, call } = await agentClient(ctx, reader);
    const threads = await call("list_threads");
    expect(threads.isError).toBeFalsy();
    expect(threads.structuredContent?.threads).toHaveLength(1);
    const send = await call("send_sms", { to: CUSTOMER.phone, message: "I should not be able to send this" });
    expect(send.isError).toBe(true);
    expect(send.structuredContent).toMatchObject({ error_code: "key_scope_denied", status: 403, scope: "send" });
    for (const [tool, scope] of [
      ["list_templates", "templates"],
      ["list_devices", "devices"],
      ["search_contacts", "contacts"],
    ] as const) {
      const refused = await call(tool, tool === "search_contacts" ? { query: "Ann" } : {});
      expect(refused.structuredContent).toMatchObject({ error_code: "key_scope_denied", scope });
    }
    // Nothing was stored by the refused send.
    const listed = expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data.notifications;
    expect(listed).toHaveLength(0);
    // Resources follow the same scopes: the templates it may not read are not listed, nor readable.
    const resources = (await client.listResources()).resources.map((r) => r.uri);
    expect(resources.some((u) => u.startsWith("pigeon://threads/"))).toBe(true);
    expect(resources.some((u) => u.startsWith("pigeon://templates/"))).toBe(false);
    const template = expectEnvelope(await ctx.get("/v1/api/template/list"), 200).data.templates[0];
    await expect(client.readResource({ uri: `pigeon://templates/${template.template_id}` })).rejects.toThrow("key_scope_denied");
    await client.close();
  });

  test("a subscription to a resource the key may not read is refused before it opens", async () => {
    const ctx = await createTestContext();
    await workspace(ctx);
    const thread = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads[0];
    const sender = await ctx.services.accounts.createKey("sender", ctx.workspace.id, { scopes: ["send"] });
    const { client } = await agentClient(ctx, sender, "modern");
    await expect(client.listen({ resourceSubscriptions: [`pigeon://threads/${thread.thread_id}`] })).rejects.toThrow("key_scope_denied");
    await client.close();
  });

  test("recipients off the key's list and sends past its daily cap are tool errors, and nothing is sent", async () => {
    const ctx = await createTestContext();
    await workspace(ctx);
    const agent = await ctx.services.accounts.createKey("contacts only", ctx.workspace.id, {
      scopes: ["send", "messages:read", "contacts"],
      recipients: { kind: "contacts" },
      dailyCap: 1,
    });
    const { client, call } = await agentClient(ctx, agent);
    const stranger = await call("send_sms", { to: STRANGER, message: "Hello stranger" });
    expect(stranger.structuredContent).toMatchObject({ error_code: "recipient_not_allowed", status: 403, recipient: STRANGER });
    const first = await call("send_sms", { contact_name: CUSTOMER.name, message: "Your part arrived" });
    expect(first.isError).toBeFalsy();
    expect(first.structuredContent).toMatchObject({ recipient: CUSTOMER.phone, awaiting_approval: false });
    const second = await call("send_sms", { contact_name: CUSTOMER.name, message: "And another thing" });
    expect(second.structuredContent).toMatchObject({ error_code: "key_daily_cap", daily_cap: 1, used: 1 });
    const listed = expectEnvelope(await ctx.get("/v1/api/notification/list"), 200).data.notifications;
    expect(listed.map((n: { message: string }) => n.message)).toEqual(["Your part arrived"]);
    await client.close();
  });

  test("a key that needs approval: the send awaits it, the agent hears when it is approved", async () => {
    const ctx = await createTestContext();
    await workspace(ctx);
    const agent = await ctx.services.accounts.createKey("assistant", ctx.workspace.id, {
      scopes: ["send", "messages:read", "threads:read", "contacts"],
      needsApproval: true,
    });
    const { client, call } = await agentClient(ctx, agent, "modern");
    const sent = await call("send_sms", {
      contact_name: CUSTOMER.name,
      message: "Your part arrived, come by after 3",
      reason: "Ann asked whether her part is in",
    });
    expect(sent.isError).toBeFalsy();
    expect(sent.structuredContent).toMatchObject({ status: "awaiting_approval", awaiting_approval: true });
    expect(sent.content[0]?.text?.toLowerCase()).toContain("approv");
    const id = sent.structuredContent!.notification_id as number;
    // Stored with its key, the agent's session and its reason; nothing dispatched.
    const stored = expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data;
    expect(stored).toMatchObject({
      status: "awaiting_approval",
      api_key_id: agent.key_id,
      key_name: "assistant",
      approval_reason: "Ann asked whether her part is in",
    });
    expect(stored.agent_session).toMatch(/^mcp-http:[0-9a-f]{16}$/);
    // The agent may not approve its own send.
    const updated: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
    const subscription = await client.listen({ resourceSubscriptions: [sent.structuredContent!.resource as string] });
    const decided = await ctx.post("/v1/api/approval/approve", { ids: [id] }, { key: agent });
    expect(decided.status).toBe(403);
    // A person approves with the owner's key; the subscribed agent is told, and reads the decision.
    expectEnvelope(await ctx.post("/v1/api/approval/approve", { ids: [id] }), 200);
    expect(await until(() => updated.includes(sent.structuredContent!.resource as string))).toBe(true);
    const read = await client.readResource({ uri: sent.structuredContent!.resource as string });
    const status = JSON.parse((read.contents[0] as { text: string }).text);
    expect(status.awaiting_approval).toBe(false);
    expect(status.status).not.toBe("awaiting_approval");
    expect(status.approved_at).toEqual(expect.any(String));
    await subscription.close();
    await client.close();
  });
});
