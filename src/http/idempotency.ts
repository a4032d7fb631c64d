// Idempotency-Key on send routes: a repeat with the same key and the same body within 24 hours
// gets the first reply back and creates nothing; the same key with another body is a 409.
// Only successful replies are kept, so a request that failed can be corrected and retried.
import type { Database, Statement } from "bun:sqlite";
import type { Clock } from "../clock";
import { DAY } from "../lib/time";
import { sha256Hex } from "../lib/tokens";
import { AppError } from "./errors";

export interface IdempotencyContext {
  workspaceId: number;
  key: string;
  route: string;
  hash: string;
}

interface StoredReply {
  route: string;
  request_hash: string;
  response_status: number;
  response_body: string;
  created_at: number;
}

/** JSON with object keys sorted, so {"a":1,"b":2} and {"b":2,"a":1} are the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export const IDEMPOTENCY_WINDOW_MS = DAY;

export function createIdempotencyStore(sqlite: Database, clock: Clock) {
  const find: Statement<StoredReply, [number, string]> = sqlite.prepare(
    "SELECT route, request_hash, response_status, response_body, created_at FROM idempotency_record WHERE workspace_id = ? AND key = ?",
  );
  const insert = sqlite.prepare(
    `INSERT INTO idempotency_record (workspace_id, key, route, request_hash, response_status, response_body, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (workspace_id, key) DO UPDATE SET route = excluded.route, request_hash = excluded.request_hash,
       response_status = excluded.response_status, response_body = excluded.response_body, created_at = excluded.created_at`,
  );
  const prune = sqlite.prepare("DELETE FROM idempotency_record WHERE created_at < ?");

  return {
    /** The idempotency context of a request, from its Idempotency-Key header; null without one. */
    contextOf(request: Request, workspaceId: number, route: string, body: unknown): IdempotencyContext | null {
      const key = request.headers.get("idempotency-key")?.trim();
      if (!key) return null;
      if (key.length > 255) {
        throw new AppError("validation_error", "Idempotency-Key must be at most 255 characters", { field: "Idempotency-Key", location: "headers" });
      }
      return { workspaceId, key, route, hash: sha256Hex(`${route}\n${canonical(body)}`) };
    },

    /**
     * The first reply for a repeat, or null when the key is new (or older than the window).
     * Throws 409 idempotency_key_reuse for a key used with another request.
     */
    replay(ctx: IdempotencyContext): Response | null {
      const stored = find.get(ctx.workspaceId, ctx.key);
      if (!stored || stored.created_at <= clock.now() - IDEMPOTENCY_WINDOW_MS) return null;
      if (stored.request_hash !== ctx.hash || stored.route !== ctx.route) {
        throw new AppError("idempotency_key_reuse", "This Idempotency-Key was already used with a different request", { idempotency_key: ctx.key });
      }
      return new Response(stored.response_body, {
        status: stored.response_status,
        headers: { "content-type": "application/json; charset=utf-8", "idempotent-replayed": "true" },
      });
    },

    /** Saves a reply; call inside the transaction that created what the reply describes. */
    save(ctx: IdempotencyContext, status: number, body: unknown): void {
      insert.run(ctx.workspaceId, ctx.key, ctx.route, ctx.hash, status, JSON.stringify(body), clock.now());
    },

    /** idempotency:prune — forget keys older than the window. */
    prune(): number {
      return prune.run(clock.now() - IDEMPOTENCY_WINDOW_MS).changes;
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
