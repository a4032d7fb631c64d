// One MCP server definition (tools, resources, subscriptions) over an ApiCall port, used alike by
// the /mcp endpoint (a fresh instance per request, calling the app in process) and by `pigeon mcp`
// (one instance per stdio connection, calling --url over HTTP).
import { fromJsonSchema, McpServer, ResourceTemplate } from "@modelcontextprotocol/server";
import { VERSION } from "../../version";
import { jsonSchema, toolResult, type ToolDef } from "./kit";
import type { AgentContext, ApiCall } from "./port";
import { listResources, parseResourceUri, readResource, type ResourceKind } from "./resources";
import { cancelMessage, previewMessage, sendChatMessage, sendSms } from "./tools-send";
import {
  createContact,
  getMessage,
  getStatistics,
  listDevices,
  listMessages,
  listTemplates,
  listThreads,
  readThread,
  searchContacts,
} from "./tools-read";

/** Every tool, in the order tools/list shows them. */
export const TOOLS: readonly ToolDef[] = [
  sendSms,
  sendChatMessage,
  previewMessage,
  listMessages,
  getMessage,
  cancelMessage,
  listThreads,
  readThread,
  searchContacts,
  createContact,
  listTemplates,
  listDevices,
  getStatistics,
];

const INSTRUCTIONS =
  "Pigeon sends SMS and chat-app messages for a business and keeps its conversations. Messages reach real people: " +
  "preview before sending when unsure, give every send an idempotency_key and a reason, and never retry a send with a new key. " +
  "A send may await a person's approval; pigeon://messages/{id} tells when it is decided. " +
  "Subscribe to pigeon://threads/{id} to hear of replies.";

/** Where resources/subscribe of the 2025 protocol is served (stdio); absent over HTTP, where subscriptions/listen is. */
export interface LegacySubscriptions {
  subscribe(uri: string): Promise<void>;
  unsubscribe(uri: string): void;
}

export interface PigeonMcpOptions {
  api: ApiCall;
  agent: AgentContext;
  legacySubscriptions?: LegacySubscriptions;
}

const TEMPLATES: { kind: ResourceKind; title: string; description: string; mimeType: string }[] = [
  {
    kind: "threads",
    title: "Conversation",
    description: "A conversation with one person as text, oldest message first; subscribe to hear when a new message arrives.",
    mimeType: "text/plain",
  },
  { kind: "templates", title: "Message template", description: "A template's text and the variables it needs.", mimeType: "text/plain" },
  {
    kind: "messages",
    title: "Sent message",
    description: "A sent message's status as JSON (awaiting_approval until a person decides); subscribe to hear when it changes.",
    mimeType: "application/json",
  },
];

const ID_VARIABLE: Record<ResourceKind, string> = { threads: "thread_id", templates: "template_id", messages: "message_id" };

export function createPigeonMcpServer(options: PigeonMcpOptions): McpServer {
  const { api, agent } = options;
  const server = new McpServer(
    { name: "pigeon", title: "Pigeon", version: VERSION },
    { capabilities: { resources: { subscribe: true }, tools: {} }, instructions: INSTRUCTIONS },
  );
  for (const tool of TOOLS) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: fromJsonSchema(jsonSchema(tool.input)),
        outputSchema: fromJsonSchema(jsonSchema(tool.output)),
        annotations: { title: tool.title, ...tool.hints },
      },
      async (args: unknown) => {
        try {
          return toolResult(await tool.run((args ?? {}) as Record<string, unknown>, api, agent));
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          return toolResult({
            refused: true,
            status: 503,
            error_code: "service_unavailable",
            message: `Pigeon could not be reached: ${message}`,
            data: {},
          });
        }
      },
    );
  }
  for (const template of TEMPLATES) {
    server.registerResource(
      template.kind,
      new ResourceTemplate(`pigeon://${template.kind}/{${ID_VARIABLE[template.kind]}}`, {
        list: async () => ({ resources: await listResources(api, template.kind) }),
      }),
      { title: template.title, description: template.description, mimeType: template.mimeType },
      async (uri) => ({ contents: [await readResource(api, uri.href)] }),
    );
  }
  // The 2025 protocol's subscriptions: a subscribed resource is one the caller can read.
  server.server.setRequestHandler("resources/subscribe", async (request) => {
    const uri = request.params.uri;
    if (!parseResourceUri(uri)) throw new Error(`${uri} is not a Pigeon resource`);
    await readResource(api, uri);
    if (!options.legacySubscriptions)
      throw new Error(
        "Over HTTP, subscribe with subscriptions/listen (protocol 2026-07-28); resources/subscribe needs a session, which /mcp does not keep",
      );
    await options.legacySubscriptions.subscribe(uri);
    return {};
  });
  server.server.setRequestHandler("resources/unsubscribe", async (request) => {
    options.legacySubscriptions?.unsubscribe(request.params.uri);
    return {};
  });
  return server;
}
