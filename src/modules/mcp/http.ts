// /mcp: MCP's Streamable HTTP transport through the SDK's createMcpHandler, which serves the
// 2026-07-28 revision (each request stands alone) and the 2025 ones statelessly from one endpoint.
// Nothing about a client is kept between its requests, so any replica answers any of them; the one
// long-lived exchange, a `subscriptions/listen` stream, is served by the replica it was opened on,
// which watches the subscribed resources in the shared database (watch.ts).
//
// One handler per API key, so a resource update published for one key's subscriptions can never
// reach another key's stream. The tools call the API in process with the request's own credentials.
import { createHash, randomUUID } from "node:crypto";
import { createMcpHandler, type McpHttpHandler } from "@modelcontextprotocol/server";
import type { KeyAuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { credentialHeaders, requestPort } from "./port";
import { parseResourceUri, readResource } from "./resources";
import { createPigeonMcpServer } from "./server";
import type { Fingerprint, Watcher } from "./watch";

/** The challenge a client without (good) credentials is given, naming both ways in; there is no OAuth. */
export const MCP_CHALLENGE = 'Bearer realm="pigeon", Basic realm="pigeon", charset="UTF-8"';

/** A 401 for /mcp, with the WWW-Authenticate header MCP clients look for. */
export function mcpUnauthorized(message: string): AppError {
  return new AppError("unauthorized", message, {}, undefined, { "www-authenticate": MCP_CHALLENGE });
}

/**
 * Refuses a request a browser sent from a page of another origin (403 forbidden), as the protocol
 * asks of every Streamable HTTP server: a page that rebinds its own name to this address must not
 * reach /mcp. A request without Origin (every client that is not a browser page) passes, as does a
 * page of this server's own origin.
 */
export function refuseForeignOrigin(request: Request): void {
  const origin = request.headers.get("origin");
  if (origin === null) return;
  const own = (request.headers.get("host") ?? new URL(request.url).host).toLowerCase();
  let host: string | null = null;
  try {
    host = origin === "null" ? null : new URL(origin).host.toLowerCase();
  } catch {
    host = null;
  }
  if (host !== own)
    throw new AppError("forbidden", `/mcp does not answer pages of another origin (${origin.slice(0, 200)})`, {
      origin: origin.slice(0, 200),
    });
}

export interface McpEndpointDeps {
  /** The app's own handler: a tool's API call runs through every check a client's request does. */
  handle: (request: Request) => Promise<Response>;
  /** The raw body the foundation read (the SDK reads the request again). */
  rawBody: (request: Request) => string;
  /** A resource's fingerprint, read from the database for the caller's workspace. */
  fingerprint: (auth: KeyAuthContext, uri: string) => Promise<string | null>;
  watcher: Watcher;
  log: (message: string, error?: unknown) => void;
}

interface Peeked {
  id: string | number | null;
  /** The URIs a `subscriptions/listen` asks to hear of, or null for any other message. */
  listen: string[] | null;
  clientName: string | null;
}

function peek(raw: string): Peeked {
  try {
    const message = JSON.parse(raw) as { id?: string | number; method?: string; params?: Record<string, unknown> };
    const meta = (message.params?._meta ?? {}) as Record<string, { name?: string } | undefined>;
    const clientInfo =
      Object.entries(meta).find(([k]) => k.endsWith("clientInfo"))?.[1] ?? (message.params?.clientInfo as { name?: string } | undefined);
    const notifications = (message.params?.notifications ?? {}) as { resourceSubscriptions?: unknown };
    const uris = Array.isArray(notifications.resourceSubscriptions)
      ? notifications.resourceSubscriptions.filter((u) => typeof u === "string")
      : [];
    return {
      id: message.id ?? null,
      listen: message.method === "subscriptions/listen" ? uris : null,
      clientName: clientInfo?.name ?? null,
    };
  } catch {
    return { id: null, listen: null, clientName: null };
  }
}

/** A response whose body calls `done` once when it ends or the client goes away. */
function onEnd(response: Response, done: () => void): Response {
  if (!response.body) {
    done();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: finished, value } = await reader.read();
        if (finished) {
          done();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        done();
        controller.error(error);
      }
    },
    cancel(reason) {
      done();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

export function createMcpEndpoint(deps: McpEndpointDeps) {
  const handlers = new Map<number, McpHttpHandler>();

  function handlerFor(auth: KeyAuthContext): McpHttpHandler {
    let handler = handlers.get(auth.keyId);
    if (!handler) {
      handler = createMcpHandler(
        (ctx) => {
          const extra = (ctx.authInfo?.extra ?? {}) as { credentials?: Record<string, string>; session?: string };
          const api = requestPort(deps.handle, "http://pigeon.internal", extra.credentials ?? {});
          return createPigeonMcpServer({ api, agent: { session: extra.session ?? `mcp-http:${randomUUID()}` } });
        },
        { onerror: (error) => deps.log(`mcp: ${error.message}`) },
      );
      handlers.set(auth.keyId, handler);
    }
    return handler;
  }

  return {
    /** Serves one /mcp request of an authenticated caller. */
    async serve(request: Request, auth: KeyAuthContext): Promise<Response> {
      const credentials = credentialHeaders(request.headers);
      if (!credentials) throw mcpUnauthorized("Send the API key as Bearer with X-API-SECRET, or key:secret as Basic");
      const hasBody = request.method !== "GET" && request.method !== "HEAD" && request.method !== "DELETE";
      const raw = hasBody ? deps.rawBody(request) : "";
      const seen: Peeked = hasBody ? peek(raw) : { id: null, listen: null, clientName: null };
      // The agent session a send records: the client's own when it names one, else one per key and client.
      const session =
        request.headers.get("x-pigeon-agent-session")?.slice(0, 200) ||
        `mcp-http:${createHash("sha256")
          .update(`${auth.keyId}\n${seen.clientName ?? request.headers.get("user-agent") ?? ""}`)
          .digest("hex")
          .slice(0, 16)}`;
      // The body as the foundation decoded it, so its length is measured afresh.
      const headers = new Headers(request.headers);
      headers.delete("content-length");
      headers.delete("transfer-encoding");
      const forwarded = new Request(request.url, { method: request.method, headers, body: hasBody ? raw : undefined });
      const handler = handlerFor(auth);
      const api = requestPort(deps.handle, "http://pigeon.internal", credentials);
      const uris = seen.listen?.filter((uri) => parseResourceUri(uri) !== null) ?? [];
      // A subscription covers only what the caller may read: any other is refused before it opens.
      for (const uri of uris) {
        const refused = await readResource(api, uri).then(
          () => null,
          (error: Error & { code?: number }) => error,
        );
        if (refused)
          return Response.json({
            jsonrpc: "2.0",
            id: seen.id,
            error: { code: refused.code ?? -32602, message: `${uri}: ${refused.message}` },
          });
      }
      const response = await handler.fetch(forwarded, {
        authInfo: { token: credentials["x-api-key"], clientId: `key-${auth.keyId}`, scopes: [], extra: { credentials, session } },
      });
      if (uris.length === 0 || !(response.headers.get("content-type") ?? "").includes("text/event-stream")) return response;
      const fingerprint: Fingerprint = (uri) => deps.fingerprint(auth, uri);
      const releases = await Promise.all(
        uris.map((uri) => deps.watcher.watch(`key-${auth.keyId}`, uri, fingerprint, (changed) => handler.notify.resourceUpdated(changed))),
      );
      return onEnd(response, () => {
        for (const release of releases) release();
      });
    },
    async close(): Promise<void> {
      deps.watcher.stop();
      await Promise.all([...handlers.values()].map((h) => h.close()));
      handlers.clear();
    },
  };
}

export type McpEndpoint = ReturnType<typeof createMcpEndpoint>;
