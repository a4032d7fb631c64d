// Idempotency-Key on send routes: a repeat with the same key and the same body within 24 hours
// gets the first reply back and creates nothing; the same key with another body is a 409.
// Only successful replies are kept, so a request that failed can be corrected and retried.
import type { Database } from "bun:sqlite";
import type { Clock } from "../clock";
import { DAY } from "../lib/time";
import { sha256Hex } from "../lib/tokens";
import { AppError } from "./errors";
import { createIdempotencyRepository } from "./idempotency-repository";

export interface IdempotencyContext {
  workspaceId: number;
  key: string;
  route: string;
  hash: string;
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
  const repo = createIdempotencyRepository(sqlite);

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
      const stored = repo.reply(ctx.workspaceId, ctx.key);
      if (!stored || stored.createdAt <= clock.now() - IDEMPOTENCY_WINDOW_MS) return null;
      if (stored.requestHash !== ctx.hash || stored.route !== ctx.route) {
        throw new AppError("idempotency_key_reuse", "This Idempotency-Key was already used with a different request", { idempotency_key: ctx.key });
      }
      return new Response(stored.responseBody, {
        status: stored.responseStatus,
        headers: { "content-type": "application/json; charset=utf-8", "idempotent-replayed": "true" },
      });
    },

    /** Saves a reply; call inside the transaction that created what the reply describes. */
    save(ctx: IdempotencyContext, status: number, body: unknown): void {
      repo.saveReply({
        workspaceId: ctx.workspaceId,
        key: ctx.key,
        route: ctx.route,
        requestHash: ctx.hash,
        responseStatus: status,
        responseBody: JSON.stringify(body),
        createdAt: clock.now(),
      });
    },

    /** idempotency:prune — forget keys older than the window. */
    prune(): number {
      return repo.deleteOlderThan(clock.now() - IDEMPOTENCY_WINDOW_MS);
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
