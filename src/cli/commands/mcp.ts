// `pigeon mcp`: Pigeon's MCP server over stdio for desktop agents. It speaks MCP on stdin and
// stdout and nothing else there (every line of its own goes to stderr), and calls a running
// server's API at --url with PIGEON_API_KEY and PIGEON_API_SECRET, so the key's checks apply as
// on /mcp. Subscribed resources are read every --poll-seconds (each read is one API request) and a
// change becomes notifications/resources/updated, on either protocol era's subscriptions.
import { randomUUID } from "node:crypto";
import type { JSONRPCMessage, McpServer, Transport } from "@modelcontextprotocol/server";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { requestPort } from "../../modules/mcp/port";
import { fingerprintVia, parseResourceUri } from "../../modules/mcp/resources";
import { createPigeonMcpServer } from "../../modules/mcp/server";
import { createWatcher } from "../../modules/mcp/watch";
import type { Values } from "../args";
import { ownServerTls, runningServer } from "./devices";

/** How often a subscribed resource is read by default, in seconds. */
export const MCP_POLL_SECONDS = 5;

/** The stdio transport, with a look at each message on its way in: the subscriptions it opens and closes, and its end. */
class WatchedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport["onmessage"];
  constructor(
    private readonly inner: StdioServerTransport,
    private readonly seen: (message: JSONRPCMessage) => void,
    private readonly ended: () => void,
  ) {
    inner.onmessage = (message: JSONRPCMessage) => {
      this.seen(message);
      this.onmessage?.(message);
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      this.ended();
      this.onclose?.();
    };
  }
  start() {
    return this.inner.start();
  }
  send(message: JSONRPCMessage) {
    return this.inner.send(message);
  }
  close() {
    return this.inner.close();
  }
}

function fail(message: string): number {
  console.error(`pigeon mcp: ${message}`);
  return 2;
}

export async function mcp(values: Values): Promise<number> {
  const server = runningServer(values);
  if ("error" in server) return fail(server.error);
  const base = server.base;
  const key = process.env.PIGEON_API_KEY?.trim();
  const secret = process.env.PIGEON_API_SECRET?.trim();
  if (!key || !secret) return fail("set PIGEON_API_KEY and PIGEON_API_SECRET to the key and secret the agent acts with");
  const pollSeconds = values["poll-seconds"] === undefined ? MCP_POLL_SECONDS : Number(values["poll-seconds"]);
  if (!Number.isFinite(pollSeconds) || pollSeconds < 0.2 || pollSeconds > 3600)
    return fail("--poll-seconds takes a number from 0.2 to 3600");

  const tls = ownServerTls(base);
  const send = (request: Request) => fetch(request, tls);
  const api = requestPort(send, base, { "x-api-key": key, "x-api-secret": secret });
  const agent = { session: `mcp-stdio:${randomUUID()}` };
  const watcher = createWatcher(pollSeconds * 1000, (message, error) => console.error(`pigeon mcp: ${message}`, error ?? ""));
  // The instance the connection is pinned to is the last one made (a discarded probe comes first).
  let pinned: McpServer | null = null;
  const notify = (uri: string) => void pinned?.server.sendResourceUpdated({ uri }).catch(() => {});
  const fingerprint = (uri: string) => fingerprintVia(api, uri);
  const legacy = new Map<string, () => void>();
  const listens = new Map<string | number, (() => void)[]>();

  /** 2026-07-28 subscriptions: a listen's URIs are watched until it is cancelled. */
  const seen = (message: JSONRPCMessage) => {
    const m = message as { id?: string | number; method?: string; params?: Record<string, any> };
    if (m.method === "subscriptions/listen" && m.id !== undefined) {
      const uris = ((m.params?.notifications?.resourceSubscriptions ?? []) as unknown[]).filter(
        (u): u is string => typeof u === "string" && parseResourceUri(u) !== null,
      );
      const id = m.id;
      void Promise.all(uris.map((uri) => watcher.watch(`listen-${String(id)}`, uri, fingerprint, notify))).then((releases) =>
        listens.set(id, releases),
      );
    } else if (m.method === "notifications/cancelled" && m.params?.requestId !== undefined) {
      for (const release of listens.get(m.params.requestId) ?? []) release();
      listens.delete(m.params.requestId);
    }
  };

  let closed: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    closed = resolve;
  });
  const transport = new WatchedTransport(new StdioServerTransport(), seen, () => closed());
  serveStdio(
    () => {
      pinned = createPigeonMcpServer({
        api,
        agent,
        // The 2025 protocol's resources/subscribe: watched until unsubscribed.
        legacySubscriptions: {
          async subscribe(uri) {
            if (legacy.has(uri)) return;
            legacy.set(uri, await watcher.watch("legacy", uri, fingerprint, notify));
          },
          unsubscribe(uri) {
            legacy.get(uri)?.();
            legacy.delete(uri);
          },
        },
      });
      return pinned;
    },
    { transport, onerror: (error) => console.error(`pigeon mcp: ${error.message}`) },
  );
  console.error(`pigeon mcp: serving MCP on stdio for ${base} (subscriptions read every ${pollSeconds} s)`);
  await ended;
  watcher.stop();
  return 0;
}
