// The compiled binary's MCP server judged from outside: the official MCP client over Streamable
// HTTP at /mcp and over `pigeon mcp` stdio (listing, every tool, a refusal, a retried send sent
// once, a resource update after an inbound SMS posted as the phone app posts it), stdout holding
// nothing but MCP, and the MCP Inspector's CLI as a second client.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pairAppPhone, type AppPhone } from "../helpers/app-phone-http";
import { runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { crashRig } from "../helpers/crash-setup";
import { postgresBin, postgresCluster } from "../helpers/postgres";
import { callEveryTool, connectHttp, connectStdio, expectToolListing, TOOL_NAMES, until, type ToolAnswer } from "../helpers/mcp";

const CONTACT = { name: "Ann Example", phone: "+14155552671" };
let server: RunningServer;
let bin: string;
let key: Credentials;
let phone: AppPhone;

beforeAll(async () => {
  const { rig, server: started } = await crashRig(null);
  server = started;
  bin = rig.bin;
  key = rig.key;
  const { server_url: base, pairing_token: pairing } = (await server.api("/v1/api/device/pairing", key)).body.data;
  phone = await pairAppPhone(base, pairing, "Shop phone");
  expect((await server.api("/v1/api/contact/create", key, CONTACT)).status).toBe(200);
  await phone.receive(CONTACT.phone, "Is my part there yet?");
}, 60_000);

afterAll(async () => {
  await server?.stop("SIGKILL").catch(() => {});
});

const headers = () => ({ authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret });
const stdioEnv = () => ({ PATH: process.env.PATH ?? "", PIGEON_API_KEY: key.api_key, PIGEON_API_SECRET: key.api_secret });
type Connected = Awaited<ReturnType<typeof connectHttp>>;
const callOf =
  (client: Connected) =>
  async (name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as unknown as ToolAnswer;

async function threadUri(client: Connected): Promise<string> {
  const threads = (await callOf(client)("list_threads")).structuredContent!.threads as { thread_id: number; peer: string }[];
  return `pigeon://threads/${threads.find((t) => t.peer === CONTACT.phone)!.thread_id}`;
}

describe("the binary's /mcp over Streamable HTTP", () => {
  test("no key: 401 with WWW-Authenticate; a key: every tool listed and called", async () => {
    const r = await fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toContain("Bearer");
    const client = await connectHttp(`${server.url}/mcp`, headers());
    expectToolListing((await client.listTools()).tools as never);
    await callEveryTool(callOf(client), CONTACT, "+14155550101");
    await client.close();
  }, 60_000);

  test("a refusal is a tool error with error_code; a retried send is sent once", async () => {
    const client = await connectHttp(`${server.url}/mcp`, headers());
    const call = callOf(client);
    const bad = await call("send_sms", { to: "12", message: "hi" });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent?.error_code).toBe("invalid_phone_number");
    const args = { to: CONTACT.phone, message: "Binary: sent once", idempotency_key: "binary-retry-1" };
    const first = await call("send_sms", args);
    const second = await call("send_sms", args);
    expect(second.structuredContent?.notification_id).toBe(first.structuredContent?.notification_id);
    const listed = (await server.api(`/v1/api/notification/list?recipient=${encodeURIComponent(CONTACT.phone)}&limit=100`, key)).body.data
      .notifications as { message: string }[];
    expect(listed.filter((n) => n.message === args.message)).toHaveLength(1);
    await client.close();
  }, 60_000);

  test("a listening client hears of a new inbound SMS in its thread", async () => {
    const client = await connectHttp(`${server.url}/mcp`, headers(), { era: "modern" });
    const uri = await threadUri(client);
    const updated: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
    const subscription = await client.listen({ resourceSubscriptions: [uri] });
    await phone.receive(CONTACT.phone, "Coming by at five");
    expect(await until(() => updated.includes(uri), 10_000)).toBe(true);
    const text = ((await client.readResource({ uri })).contents[0] as { text: string }).text;
    expect(text).toContain("<- Coming by at five");
    await subscription.close();
    await client.close();
  }, 60_000);
});

describe("pigeon mcp over stdio", () => {
  test("every tool listed and called; a refusal as a tool error; a subscribed thread told of an inbound SMS", async () => {
    const { client } = await connectStdio(bin, ["mcp", "--url", server.url, "--poll-seconds", "0.5"], stdioEnv());
    expectToolListing((await client.listTools()).tools as never);
    const call = callOf(client as Connected);
    await callEveryTool(call, CONTACT, "+14155550102");
    expect((await call("cancel_message", { notification_id: 999999 })).structuredContent?.error_code).toBe("not_found");
    // The 2025 protocol's resources/subscribe.
    const uri = await threadUri(client as Connected);
    const updated: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
    await client.subscribeResource({ uri });
    await phone.receive(CONTACT.phone, "Over stdio too");
    expect(await until(() => updated.includes(uri), 10_000)).toBe(true);
    await client.close();
  }, 60_000);

  test("the 2026-07-28 protocol's subscriptions/listen over stdio", async () => {
    const { client } = await connectStdio(bin, ["mcp", "--url", server.url, "--poll-seconds", "0.5"], stdioEnv(), "modern");
    const uri = await threadUri(client as Connected);
    const updated: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
    const subscription = await client.listen({ resourceSubscriptions: [uri] });
    await phone.receive(CONTACT.phone, "Listening over stdio");
    expect(await until(() => updated.includes(uri), 10_000)).toBe(true);
    await subscription.close();
    await client.close();
  }, 60_000);

  test("stdout carries MCP alone: every line a JSON-RPC message; the rest goes to stderr", async () => {
    const proc = Bun.spawn([bin, "mcp", "--url", server.url], { env: stdioEnv(), stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    const lines = [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_statistics", arguments: {} } },
    ];
    for (const line of lines) proc.stdin.write(`${JSON.stringify(line)}\n`);
    await proc.stdin.flush();
    let out = "";
    const reader = proc.stdout.getReader();
    const decoder = new TextDecoder();
    const deadline = Date.now() + 15_000;
    // One read outstanding at a time: a read abandoned to a timeout would take its chunk with it.
    let pending: ReturnType<typeof reader.read> | null = null;
    while (!out.includes('"id":2') && Date.now() < deadline) {
      pending ??= reader.read();
      const next = await Promise.race([pending, Bun.sleep(500).then(() => null)]);
      if (next === null) continue;
      pending = null;
      if (next.done) break;
      out += decoder.decode(next.value, { stream: true });
    }
    proc.stdin.end();
    proc.kill();
    await proc.exited;
    const stderr = await new Response(proc.stderr).text();
    if (!out.includes('"id":2')) throw new Error(`no answer to the tool call in 15 s; stdout: ${out}; stderr: ${stderr}`);
    const parsed = out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { jsonrpc: string; id?: number; result?: { structuredContent?: { period?: string } } });
    expect(parsed.every((m) => m.jsonrpc === "2.0")).toBe(true);
    expect(parsed.find((m) => m.id === 2)?.result?.structuredContent?.period).toBe("day");
    expect(stderr).toContain("serving MCP on stdio");
  }, 30_000);

  test("without PIGEON_API_KEY it exits 2 with one line on stderr and nothing on stdout", async () => {
    const proc = Bun.spawn([bin, "mcp", "--url", server.url], { env: { PATH: process.env.PATH ?? "" }, stdout: "pipe", stderr: "pipe" });
    expect(await proc.exited).toBe(2);
    expect(await new Response(proc.stdout).text()).toBe("");
    expect(await new Response(proc.stderr).text()).toContain("PIGEON_API_KEY");
  });
});

// The MCP Inspector's CLI (npm @modelcontextprotocol/inspector) as a second client, when it is installed.
const INSPECTOR = join(import.meta.dir, "../../node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");

async function inspector(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(["node", INSPECTOR, "--cli", ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", MCP_CATALOG_PATH: join(bin, "..", "inspector-catalog.json") },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describe.skipIf(!existsSync(INSPECTOR))("the MCP Inspector's CLI as a second client", () => {
  test("over HTTP: it lists every tool and calls one", async () => {
    const auth = ["--header", `Authorization: Bearer ${key.api_key}`, "--header", `X-API-SECRET: ${key.api_secret}`];
    const listed = await inspector([`${server.url}/mcp`, "--transport", "http", ...auth, "--method", "tools/list"]);
    expect({ code: listed.code, stderr: listed.code === 0 ? "" : listed.stderr }).toEqual({ code: 0, stderr: "" });
    expect((JSON.parse(listed.stdout).tools as { name: string }[]).map((t) => t.name).sort()).toEqual(TOOL_NAMES);
    const called = await inspector([
      `${server.url}/mcp`,
      "--transport",
      "http",
      ...auth,
      "--method",
      "tools/call",
      "--tool-name",
      "search_contacts",
      "--tool-arg",
      "query=Ann",
    ]);
    expect(called.code).toBe(0);
    expect(JSON.parse(called.stdout).structuredContent.contacts[0].phone).toBe(CONTACT.phone);
  }, 60_000);

  test("over stdio through pigeon mcp: it lists every tool", async () => {
    const env = ["-e", `PIGEON_API_KEY=${key.api_key}`, "-e", `PIGEON_API_SECRET=${key.api_secret}`];
    const listed = await inspector([...env, "--method", "tools/list", bin, "mcp", "--url", server.url]);
    expect({ code: listed.code, stderr: listed.code === 0 ? "" : listed.stderr }).toEqual({ code: 0, stderr: "" });
    expect((JSON.parse(listed.stdout).tools as { name: string }[]).map((t) => t.name).sort()).toEqual(TOOL_NAMES);
  }, 60_000);
});

describe.skipIf(!postgresBin())("two binaries on one PostgreSQL database", () => {
  test("initialize on one, call tools on the other, hear of an SMS that arrived at the other", async () => {
    const pg = await postgresCluster();
    const url = await pg.createDatabase("mcp_replicas");
    const keyFile = join(tempDir("pigeon-key-"), "pigeon.key");
    const env = () => ({
      PIGEON_DATABASE_URL: url,
      PIGEON_KEY_FILE: keyFile,
      PIGEON_DATA_DIR: tempDir(),
      PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1",
    });
    const a = await startServer(bin, env(), 30_000);
    const b = await startServer(bin, env(), 30_000);
    try {
      const owner = a.initialKey!;
      const plans = ["plans", "set", "--code", "owner", "--name", "Owner", "--per-minute", "100000", "--per-day", "1000000"];
      expect((await runCommand(bin, plans, env())).code).toBe(0);
      expect((await runCommand(bin, ["credits", "add", "--workspace", "1", "--amount", "1000"], env())).code).toBe(0);
      expect((await a.api("/v1/api/contact/create", owner, CONTACT)).status).toBe(200);
      // The phone is paired through the second server, so what it receives is posted there.
      const { pairing_token: pairing } = (await b.api("/v1/api/device/pairing", owner)).body.data;
      const shopPhone = await pairAppPhone(`${b.url}/mobile/v1`, pairing, "Shop phone");
      await shopPhone.receive(CONTACT.phone, "First message");
      const bases = [a.url, b.url];
      let turn = 0;
      const servedBy: string[] = [];
      // Each request goes to the next server in turn, whatever the client connected to.
      const alternate = (input: string | URL | Request, init?: RequestInit) => {
        const request = input instanceof Request ? input : new Request(input, init);
        const base = bases[turn++ % 2];
        servedBy.push(base);
        return fetch(new Request(`${base}/mcp`, request));
      };
      const auth = { authorization: `Bearer ${owner.api_key}`, "x-api-secret": owner.api_secret };
      const client = await connectHttp(`${a.url}/mcp`, auth, { era: "modern", fetch: alternate });
      const call = callOf(client);
      const args = { to: CONTACT.phone, message: "Sent through either", idempotency_key: "pg-binary-1" };
      const first = (await call("send_sms", args)).structuredContent!;
      const again = (await call("send_sms", args)).structuredContent!;
      expect(again.notification_id).toBe(first.notification_id);
      expect(new Set(servedBy)).toEqual(new Set(bases));
      const uri = await threadUri(client);
      const updated: string[] = [];
      client.setNotificationHandler("notifications/resources/updated", (n) => void updated.push(n.params.uri));
      turn = 0;
      const subscription = await client.listen({ resourceSubscriptions: [uri] });
      expect(servedBy.at(-1)).toBe(a.url);
      await shopPhone.receive(CONTACT.phone, "Arrived at the second server");
      expect(await until(() => updated.includes(uri), 10_000)).toBe(true);
      await subscription.close();
      await client.close();
    } finally {
      await Promise.all([a.stop("SIGKILL"), b.stop("SIGKILL")]);
    }
  }, 120_000);
});
