// The MCP module: Pigeon as a Model Context Protocol server for AI agents, at /mcp on the API's
// port (Streamable HTTP) and as `pigeon mcp` over stdio (src/cli/commands/mcp.ts). Its tools and
// resources (server.ts) call Pigeon's own API with the agent's credentials, so an agent can do
// exactly what its key may do through the API and nothing more. docs/mcp.md describes it.
import { Elysia } from "elysia";
import type { KeyAuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { declaredAuth } from "../../http/declared-auth";
import { envelopeOf } from "../../http/envelope";
import { rawBodyOf } from "../../http/foundation";
import type { AppSelf, ModuleDescriptor, Services } from "../../services-type";
import { createMcpEndpoint, mcpUnauthorized, refuseForeignOrigin } from "./http";
import { credentialHeaders } from "./port";
import { parseResourceUri } from "./resources";
import { createWatcher } from "./watch";

export const MCP_PATH = "/mcp";

/** How often a subscribed resource is read for a change, in the server. */
export const MCP_WATCH_INTERVAL_MS = 1_000;

export type McpRouteDeps = Pick<Services, "threads" | "notifications" | "templates" | "log">;

/** A resource's fingerprint read from the database, in the caller's workspace; null when it is not there. */
function fingerprintOf(s: McpRouteDeps) {
  return async (auth: KeyAuthContext, uri: string): Promise<string | null> => {
    const parsed = parseResourceUri(uri);
    if (!parsed) return null;
    if (parsed.kind === "threads") {
      const read = await s.threads.messages(auth.workspaceId, parsed.id, 1, 1).catch(() => null);
      return read ? `${read.pagination.total}:${read.messages[0]?.message_id ?? 0}` : null;
    }
    const row =
      parsed.kind === "messages"
        ? await s.notifications.find(auth.workspaceId, parsed.id)
        : await s.templates.find(auth.workspaceId, parsed.id);
    return row ? `${row.status}:${row.updatedAt}` : null;
  };
}

export function mcpRoutes(s: McpRouteDeps, app: AppSelf) {
  const endpoint = createMcpEndpoint({
    handle: (request) => app.handle(request),
    rawBody: rawBodyOf,
    fingerprint: fingerprintOf(s),
    watcher: createWatcher(MCP_WATCH_INTERVAL_MS, s.log),
    log: s.log,
  });
  return new Elysia({ name: "mcp-routes" })
    .use(declaredAuth())
    .all(MCP_PATH, ({ request, auth }) => endpoint.serve(request, auth as KeyAuthContext), {
      auth: "mcp",
      detail: { hide: true, operationId: "mcp", summary: "Model Context Protocol (Streamable HTTP)" },
    });
}

/** The caller of /mcp from its headers: Bearer and X-API-SECRET, the x-api-key pair, or Basic key:secret. */
async function authenticateMcp(s: Pick<Services, "authenticate">, request: Request): Promise<KeyAuthContext> {
  refuseForeignOrigin(request);
  const credentials = credentialHeaders(request.headers);
  if (!credentials) throw mcpUnauthorized("Missing API key: send Authorization: Bearer pk_… with X-API-SECRET, or Basic key:secret");
  try {
    return await s.authenticate(new Headers(credentials));
  } catch (error) {
    if (error instanceof AppError && error.status === 401) throw mcpUnauthorized(error.message);
    throw error;
  }
}

export const mcpModule: ModuleDescriptor = {
  name: "mcp",
  routes: (s, app) => ({ foreign: [mcpRoutes(s, app)] }),
  foreign: (s) => ({
    paths: (path) => path === MCP_PATH,
    gate: { matches: (path) => path === MCP_PATH, authenticate: (request) => authenticateMcp(s, request) },
    errors: (_path, status, code, message) => ({ status, body: { ...envelopeOf(status, message, { error_code: code }) } }),
  }),
};
