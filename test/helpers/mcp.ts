// The official MCP client (@modelcontextprotocol/client) as the judge of Pigeon's MCP server: how
// the tests connect it (over HTTP to an app or a server, or over `pigeon mcp` stdio), and what they
// require of every tool's listing.
import { expect } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

/** The tools Pigeon's MCP server offers, each called by the judges. */
export const TOOL_NAMES = [
  "send_sms",
  "send_chat_message",
  "preview_message",
  "list_messages",
  "get_message",
  "cancel_message",
  "list_threads",
  "read_thread",
  "search_contacts",
  "create_contact",
  "list_templates",
  "list_devices",
  "get_statistics",
].sort();

export type Era = "legacy" | "modern";

function client(era: Era) {
  return new Client({ name: "pigeon-test-judge", version: "1.0.0" }, era === "modern" ? { versionNegotiation: { mode: "auto" } } : {});
}

/** A client connected over Streamable HTTP to `url` with `headers`, through `fetch` (an app's handler, or the network). */
export async function connectHttp(
  url: string,
  headers: Record<string, string>,
  options: { era?: Era; fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response> } = {},
) {
  const c = client(options.era ?? "legacy");
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
    ...(options.fetch ? { fetch: options.fetch as never } : {}),
  });
  await c.connect(transport);
  return c;
}

/** A client connected to `pigeon mcp` run as `command` with `env`. */
export async function connectStdio(command: string, args: string[], env: Record<string, string>, era: Era = "legacy") {
  const c = client(era);
  const transport = new StdioClientTransport({ command, args, env, stderr: "pipe" });
  await c.connect(transport);
  return { client: c, transport };
}

/** A fetch that hands each request to `handle` (an app in process). */
export function fetchVia(handle: (request: Request) => Promise<Response>) {
  return (input: string | URL | Request, init?: RequestInit) => handle(input instanceof Request ? input : new Request(input, init));
}

/** Every tool listed once, each with a title, a description, input and output schemas and all four hints. */
export function expectToolListing(
  tools: {
    name: string;
    title?: string;
    description?: string;
    inputSchema: unknown;
    outputSchema?: unknown;
    annotations?: Record<string, unknown>;
  }[],
) {
  expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
  for (const tool of tools) {
    const input = tool.inputSchema as { type: string; properties?: Record<string, unknown> };
    const output = tool.outputSchema as { type: string; properties?: Record<string, unknown> } | undefined;
    expect({ name: tool.name, title: typeof tool.title, description: (tool.description ?? "").length > 40 }).toEqual({
      name: tool.name,
      title: "string",
      description: true,
    });
    expect({ name: tool.name, input: input.type, output: output?.type }).toEqual({ name: tool.name, input: "object", output: "object" });
    expect(Object.keys(output?.properties ?? {}).length).toBeGreaterThan(0);
    for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"])
      expect({ name: tool.name, hint, type: typeof tool.annotations?.[hint] }).toEqual({ name: tool.name, hint, type: "boolean" });
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  expect(byName.send_sms.annotations).toMatchObject({ readOnlyHint: false, openWorldHint: true });
  expect(byName.cancel_message.annotations).toMatchObject({ destructiveHint: true });
  expect(byName.list_messages.annotations).toMatchObject({ readOnlyHint: true });
  expect(Object.keys((byName.send_sms.inputSchema as { properties: object }).properties)).toEqual(
    expect.arrayContaining([
      "to",
      "contact_name",
      "message",
      "device_id",
      "pool_id",
      "sim_number",
      "schedule_time",
      "timezone",
      "urgent",
      "reason",
      "idempotency_key",
    ]),
  );
}

/** A tool call's result as the tests read it. */
export interface ToolAnswer {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { type: string; text?: string }[];
}

/** Waits until `check` is true, up to `ms`. */
export async function until(check: () => boolean, ms = 8_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await Bun.sleep(50);
  }
  return check();
}

type Caller = (name: string, args?: Record<string, unknown>) => Promise<ToolAnswer>;

/**
 * Calls every tool once against a workspace that has an online phone, credits, and a contact
 * named `contact.name`, with an inbound message in a thread from `contact.phone`. Returns what
 * the checks after it need.
 */
export async function callEveryTool(call: Caller, contact: { name: string; phone: string }, newContactPhone = "+14155550199") {
  const ok = async (name: string, args: Record<string, unknown> = {}) => {
    const r = await call(name, args);
    expect({ name, isError: r.isError ?? false, text: r.isError ? r.content[0]?.text : "" }).toEqual({ name, isError: false, text: "" });
    expect(typeof r.structuredContent).toBe("object");
    return r.structuredContent!;
  };
  const preview = await ok("preview_message", { contact_name: contact.name, message: "Your part arrived" });
  expect(preview).toMatchObject({ would: "send", segments: 1, encoding: "GSM-7" });
  const sent = await ok("send_sms", {
    contact_name: contact.name,
    message: "Your part arrived",
    idempotency_key: `judge-send-${newContactPhone}`,
  });
  expect(sent).toMatchObject({ recipient: contact.phone, awaiting_approval: false, resource: `pigeon://messages/${sent.notification_id}` });
  const scheduled = await ok("send_sms", {
    to: contact.phone,
    message: "Reminder: pick up your part",
    schedule_time: "2099-06-01 09:30:00",
    timezone: "Europe/Berlin",
    urgent: true,
  });
  expect(scheduled.scheduled_for).toBe("2099-06-01T07:30:00.000Z");
  const got = await ok("get_message", { notification_id: sent.notification_id });
  expect(got).toMatchObject({ notification_id: sent.notification_id, recipient: contact.phone, message: "Your part arrived" });
  const listed = await ok("list_messages", { recipient: contact.phone });
  expect(listed.messages.map((m: { notification_id: number }) => m.notification_id)).toEqual(
    expect.arrayContaining([sent.notification_id, scheduled.notification_id]),
  );
  const cancelled = await ok("cancel_message", { notification_id: scheduled.notification_id });
  expect(cancelled).toMatchObject({ notification_id: scheduled.notification_id });
  expect((await ok("get_message", { notification_id: scheduled.notification_id })).status).toBe("cancelled");
  const threads = await ok("list_threads", {});
  const thread = threads.threads.find((t: { peer: string }) => t.peer === contact.phone);
  expect(thread).toBeDefined();
  const read = await ok("read_thread", { thread_id: thread.thread_id });
  expect(read.messages.some((m: { direction: string }) => m.direction === "inbound")).toBe(true);
  const found = await ok("search_contacts", { query: contact.name.split(" ")[0] });
  expect(found.contacts.map((c: { phone: string }) => c.phone)).toContain(contact.phone);
  const created = await ok("create_contact", { name: "Bea Judge", phone: newContactPhone, tags: ["mcp"] });
  expect(created).toMatchObject({ name: "Bea Judge", phone: newContactPhone });
  const templates = await ok("list_templates", { channel: "sms" });
  expect(templates.templates.length).toBeGreaterThan(0);
  const devices = await ok("list_devices", {});
  expect(devices.devices.length).toBeGreaterThan(0);
  expect(typeof devices.devices[0].health?.health_score).toBe("number");
  const stats = await ok("get_statistics", { period: "day" });
  expect(stats.period).toBe("day");
  // No chat-app number in this workspace: the API's refusal, as a tool error with its code.
  const chat = await call("send_chat_message", { to: contact.phone, message: "hello", idempotency_key: "judge-chat-1" });
  expect(chat.isError).toBe(true);
  expect(chat.structuredContent?.error_code).toBe("no_active_device");
  return { sent, scheduled, thread, templateId: templates.templates[0].template_id as number };
}
