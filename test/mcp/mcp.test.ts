// Pigeon's MCP server at /mcp, judged in process by the official MCP client: the listing of every
// tool, a call of every tool, refusals as tool errors with Pigeon's error_code, a retried send sent
// once, resources and their updates, and the 401 an MCP client expects. Runs on both back ends;
// on PostgreSQL also two servers on one database, a client moving between them.
import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext, testBackend, type TestContext } from "../helpers/context";
import { callEveryTool, connectHttp, expectToolListing, fetchVia, until, type ToolAnswer } from "../helpers/mcp";
import { appPhone, postPhoneWebhook, registerAppPhone } from "../helpers/phone";
import { tempDirsToRemove } from "../helpers/temp-dirs";

const CONTACT = { name: "Ann Example", phone: "+14155552671" };

async function workspace(ctx: TestContext) {
  // The manual clock never moves, so every request of a test falls in one rate-limit minute.
  await ctx.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100_000, requestsPerDay: 1_000_000 });
  await ctx.topUp(1000);
  const phone = await appPhone(ctx);
  await ctx.post("/v1/api/contact/create", { name: CONTACT.name, phone: CONTACT.phone });
  await phone.receive(CONTACT.phone, "Is my part there yet?");
  return phone;
}

const keyHeaders = (key: { api_key: string; api_secret: string }) => ({
  authorization: `Bearer ${key.api_key}`,
  "x-api-secret": key.api_secret,
});

function connect(ctx: TestContext, era: "legacy" | "modern" = "legacy", headers = keyHeaders(ctx.key)) {
  return connectHttp("http://localhost/mcp", headers, { era, fetch: fetchVia((r) => ctx.app.handle(r)) });
}

const callOf =
  (client: Awaited<ReturnType<typeof connect>>) =>
  async (name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as unknown as ToolAnswer;

describe("MCP over Streamable HTTP, in process", () => {
  test("without credentials, or with a wrong secret: 401 with a WWW-Authenticate challenge", async () => {
    const ctx = await createTestContext();
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
    const post = (headers: Record<string, string>) =>
      ctx.app.handle(
        new Request("http://localhost/mcp", {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
          body,
        }),
      );
    const attempts: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${ctx.key.api_key}`, "x-api-secret": "sk_wrong" },
      { authorization: "Basic bm9wZQ==" },
    ];
    for (const headers of attempts) {
      const r = await post(headers);
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toContain('Bearer realm="pigeon"');
      expect(((await r.json()) as { data: { error_code: string } }).data.error_code).toBe("unauthorized");
    }
    // A page of another origin (a DNS-rebinding page among them) is refused, even with the key; the
    // server's own origin, and a client that sends no Origin, are not.
    const keyed = { authorization: `Bearer ${ctx.key.api_key}`, "x-api-secret": ctx.key.api_secret };
    for (const origin of ["http://evil.example", "null", "http://localhost.evil.example"]) {
      const r = await post({ ...keyed, origin });
      expect(r.status).toBe(403);
      expect(((await r.json()) as { data: { error_code: string } }).data.error_code).toBe("forbidden");
    }
    expect((await post({ ...keyed, origin: "http://localhost" })).status).toBe(200);
    // Basic base64(key:secret) is the other way in.
    const basic = `Basic ${Buffer.from(`${ctx.key.api_key}:${ctx.key.api_secret}`).toString("base64")}`;
    const client = await connect(ctx, "legacy", { authorization: basic } as never);
    expect((await client.listTools()).tools.length).toBe(13);
    await client.close();
  });

  for (const era of ["legacy", "modern"] as const) {
    test(`${era} protocol: every tool listed with its schemas and hints, and every tool called`, async () => {
      const ctx = await createTestContext();
      await workspace(ctx);
      const client = await connect(ctx, era);
      expectToolListing((await client.listTools()).tools as never);
      await callEveryTool(callOf(client), CONTACT);
      await client.close();
    });
  }

  test("a refusal is a tool error carrying Pigeon's error_code and message, not a protocol error", async () => {
    const ctx = await createTestContext();
    await workspace(ctx);
    const client = await connect(ctx);
    const call = callOf(client);
    const bad = await call("send_sms", { to: "not-a-number", message: "hi" });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ error_code: "invalid_phone_number", status: 400 });
    expect(bad.content[0].text).toContain("invalid_phone_number");
    const missing = await call("get_message", { notification_id: 987654 });
    expect(missing.structuredContent).toMatchObject({ error_code: "not_found", status: 404 });
    const nobody = await call("send_sms", { contact_name: "Nobody Here", message: "hi" });
    expect(nobody.structuredContent?.error_code).toBe("not_found");
    // Arguments the schema refuses are a tool error too.
    const wrong = await call("get_message", { notification_id: "seven" });
    expect(wrong.isError).toBe(true);
    await client.close();
  });

  test("a send retried with the same idempotency_key is sent once", async () => {
    const ctx = await createTestContext();
    await workspace(ctx);
    const client = await connect(ctx);
    const call = callOf(client);
    const args = { to: CONTACT.phone, message: "Sent once, however often asked", idempotency_key: "retry-7f3a" };
    const first = await call("send_sms", args);
    const again = await call("send_sms", args);
    expect(again.structuredContent?.notification_id).toBe(first.structuredContent?.notification_id);
    const listed = (await call("list_messages", { recipient: CONTACT.phone, limit: 100 })).structuredContent!;
    expect(listed.messages.filter((m: { message: string }) => m.message === args.message)).toHaveLength(1);
    // The same key with other arguments is refused, not sent.
    const reused = await call("send_sms", { ...args, message: "Another text" });
    expect(reused.structuredContent?.error_code).toBe("idempotency_key_reuse");
    await client.close();
  });

  test("resources: list, templates, read a thread as text, a template and a message's status", async () => {
    const ctx = await createTestContext();
    await workspace(ctx);
    const client = await connect(ctx);
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate).sort();
    expect(templates).toEqual(["pigeon://messages/{message_id}", "pigeon://templates/{template_id}", "pigeon://threads/{thread_id}"]);
    const listed = (await client.listResources()).resources;
    const thread = listed.find((r) => r.uri.startsWith("pigeon://threads/"))!;
    expect(thread.name).toContain(CONTACT.name);
    const text = (await client.readResource({ uri: thread.uri })).contents[0] as { text: string };
    expect(text.text).toContain("<- Is my part there yet?");
    const template = listed.find((r) => r.uri.startsWith("pigeon://templates/"))!;
    expect(((await client.readResource({ uri: template.uri })).contents[0] as { text: string }).text).toContain("variables:");
    // Text beyond ASCII passes through /mcp and the API unchanged.
    const text2 = "Status please — Grüße 👋";
    const sent = (await callOf(client)("send_sms", { to: CONTACT.phone, message: text2 })).structuredContent!;
    const status = JSON.parse(((await client.readResource({ uri: sent.resource })).contents[0] as { text: string }).text);
    expect(status).toMatchObject({ notification_id: sent.notification_id, awaiting_approval: false, message: text2 });
    await expect(client.readResource({ uri: "pigeon://threads/999999" })).rejects.toThrow();
    // The 2025 protocol's resources/subscribe needs a session, which /mcp does not keep: refused, naming the way that works.
    await expect(client.subscribeResource({ uri: thread.uri })).rejects.toThrow("subscriptions/listen");
    await client.close();
  });

  test("a subscribed thread is told of a new inbound message, a subscribed message of its new status", async () => {
    const ctx = await createTestContext();
    const phone = await workspace(ctx);
    const client = await connect(ctx, "modern");
    const call = callOf(client);
    const thread = (await call("list_threads")).structuredContent!.threads[0];
    const later = (await call("send_sms", { to: CONTACT.phone, message: "Later", schedule_time: "2099-01-01 10:00:00" }))
      .structuredContent!;
    const updated: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
    const threadUri = `pigeon://threads/${thread.thread_id}`;
    const subscription = await client.listen({ resourceSubscriptions: [threadUri, later.resource] });
    expect(subscription.honoredFilter.resourceSubscriptions).toEqual([threadUri, later.resource]);
    await phone.receive(CONTACT.phone, "Thanks, I will come by");
    expect(await until(() => updated.includes(threadUri))).toBe(true);
    expect(updated).not.toContain(later.resource);
    await call("cancel_message", { notification_id: later.notification_id });
    expect(await until(() => updated.includes(later.resource))).toBe(true);
    await subscription.close();
    await client.close();
  });

  test("a subscription to another workspace's thread is refused", async () => {
    const ctx = await createTestContext();
    await workspace(ctx);
    const other = await ctx.otherWorkspace();
    const threadId = (await ctx.get("/v1/api/thread/list")).body.data.threads[0].thread_id;
    const client = await connect(ctx, "modern", keyHeaders(other.key));
    await expect(client.listen({ resourceSubscriptions: [`pigeon://threads/${threadId}`] })).rejects.toThrow();
    const read = await callOf(client)("read_thread", { thread_id: threadId });
    expect(read.structuredContent?.error_code).toBe("not_found");
    await client.close();
  });
});

describe.skipIf(testBackend() !== "postgres")("two servers on one PostgreSQL database", () => {
  test("connect on one, call tools on the other, and hear of a message that arrived at the other", async () => {
    // Both servers seal and open secrets with the same key file, as replicas must.
    const dir = mkdtempSync(join(tmpdir(), "pigeon-mcp-"));
    tempDirsToRemove.push(dir);
    const keyFile = join(dir, "pigeon.key");
    const first = await createTestContext({ config: { keyFile } });
    await workspace(first);
    const reg = await registerAppPhone(first, "Phone on the second server");
    const second = await createTestContext({ databaseUrl: first.databaseUrl!, config: { keyFile } });
    const apps = [first.app, second.app];
    let turn = 0;
    const served: number[] = [];
    // Each request goes to the next server in turn: the connection is made on one, the calls alternate.
    const alternate = fetchVia((request) => {
      const at = turn++ % 2;
      served.push(at);
      return apps[at].handle(request);
    });
    const client = await connectHttp("http://localhost/mcp", keyHeaders(first.key), { era: "modern", fetch: alternate });
    const call = callOf(client);
    const sent = (await call("send_sms", { to: CONTACT.phone, message: "From whichever server", idempotency_key: "replica-1" }))
      .structuredContent!;
    const again = (await call("send_sms", { to: CONTACT.phone, message: "From whichever server", idempotency_key: "replica-1" }))
      .structuredContent!;
    expect(again.notification_id).toBe(sent.notification_id);
    expect((await call("get_message", { notification_id: sent.notification_id })).structuredContent?.message).toBe("From whichever server");
    expect(new Set(served)).toEqual(new Set([0, 1]));
    // The subscription is held by the first server; the message arrives at the second.
    const thread = (await call("list_threads")).structuredContent!.threads[0];
    const uri = `pigeon://threads/${thread.thread_id}`;
    const updated: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
    turn = 0;
    const subscription = await client.listen({ resourceSubscriptions: [uri] });
    expect(served.at(-1)).toBe(0);
    await receiveOn(second, reg, CONTACT.phone, "Arrived at the other server");
    expect(await until(() => updated.includes(uri))).toBe(true);
    await subscription.close();
    await client.close();
  }, 60_000);
});

/** An inbound SMS posted to `ctx`'s app by a paired phone, as the app posts it. */
async function receiveOn(ctx: TestContext, phone: Awaited<ReturnType<typeof registerAppPhone>>, from: string, text: string) {
  const body = JSON.stringify({
    id: "in-replica",
    webhookId: "w",
    event: "sms:received",
    deviceId: phone.id,
    payload: { messageId: "m-replica", message: text, sender: from, receivedAt: new Date(ctx.clock.now()).toISOString() },
  });
  expect((await postPhoneWebhook(ctx, phone.signingKey, body)).status).toBe(204);
}
