// Idempotency-Key on send routes: a repeat with the same key and the same body within 24 hours
// gets the first reply back and creates nothing; the same key with another body is a 409.
// Only successful replies are kept, so a request that failed can be corrected and retried.
// This is the one place those rules live: a send route hands `reply` its checks and its present
// step, and the reply is saved in the unit of work that writes what it describes.
import type { Clock } from "../clock";
import type { Storage } from "../db/storage";
import { DAY } from "../lib/time";
import { sha256Hex } from "../lib/tokens";
import { AppError } from "../core/errors";
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

/** A route's reply before Elysia sends it: only a 200 is kept for repeats. */
export interface Reply<B> {
  status: number;
  body: B;
}

/** The part of Elysia's `set` a reply writes: its status and headers. */
export interface ReplySet {
  status?: number | string;
  headers: Record<string, string | number>;
}

/**
 * The first reply again. It was saved from what `commit` answered on this route (the key's route
 * is part of its hash), so it parses back to that route's reply body.
 */
function replayed<B>(set: ReplySet, stored: Reply<string>): B {
  set.status = stored.status;
  set.headers["idempotent-replayed"] = "true";
  const body: B = JSON.parse(stored.body);
  return body;
}

export function createIdempotencyStore(storage: Storage, clock: Clock) {
  const repo = createIdempotencyRepository(storage);

  const store = {
    /**
     * Answers a request under its Idempotency-Key. A repeat within the window gets the first reply
     * back, marked `Idempotent-Replayed: true`, and runs nothing (not even the checks: the first
     * request passed them). Otherwise `prepare` runs (checks that write nothing), then `commit`
     * runs as a unit of work (batched with the others of its turn: one fsync for many), where the key is looked up once more (a
     * repeat sent while the first was being written) and a 200 reply is saved beside the rows it
     * describes. Without a key, both steps just run.
     */
    async reply<P, B>(
      request: Request,
      set: ReplySet,
      scope: { workspaceId: number; route: string; body: unknown },
      steps: { prepare: () => Promise<P>; commit: (prepared: P) => Promise<Reply<B>> },
    ): Promise<B> {
      const ctx = store.contextOf(request, scope.workspaceId, scope.route, scope.body);
      const early = ctx ? await store.replay(ctx) : null;
      if (early) return replayed(set, early);
      const prepared = await steps.prepare();
      const out = await storage.transaction(async (): Promise<{ fresh: Reply<B> } | { stored: Reply<string> }> => {
        // The key is claimed before anything is written: a repeat in flight waits for this unit, then replays it.
        if (ctx && !(await repo.claim(ctx.workspaceId, ctx.key, ctx.route, ctx.hash, clock.now()))) {
          const stored = await store.replay(ctx);
          if (stored) return { stored };
          // else the key's row is older than the window: it is used afresh (save replaces it)
        }
        const reply = await steps.commit(prepared);
        if (ctx && reply.status === 200) await store.save(ctx, reply.status, reply.body);
        else if (ctx) await repo.release(ctx.workspaceId, ctx.key);
        return { fresh: reply };
      });
      if ("stored" in out) return replayed(set, out.stored);
      set.status = out.fresh.status;
      return out.fresh.body;
    },

    /** The idempotency context of a request, from its Idempotency-Key header; null without one. */
    contextOf(request: Request, workspaceId: number, route: string, body: unknown): IdempotencyContext | null {
      const key = request.headers.get("idempotency-key")?.trim();
      if (!key) return null;
      if (key.length > 255) {
        throw new AppError("validation_error", "Idempotency-Key must be at most 255 characters", {
          field: "Idempotency-Key",
          location: "headers",
        });
      }
      return { workspaceId, key, route, hash: sha256Hex(`${route}\n${canonical(body)}`) };
    },

    /**
     * The first reply for a repeat, or null when the key is new (or older than the window).
     * Throws 409 idempotency_key_reuse for a key used with another request.
     */
    async replay(ctx: IdempotencyContext): Promise<Reply<string> | null> {
      const stored = await repo.reply(ctx.workspaceId, ctx.key);
      if (!stored || stored.createdAt <= clock.now() - IDEMPOTENCY_WINDOW_MS) return null;
      if (stored.requestHash !== ctx.hash || stored.route !== ctx.route) {
        throw new AppError("idempotency_key_reuse", "This Idempotency-Key was already used with a different request", {
          idempotency_key: ctx.key,
        });
      }
      return { status: stored.responseStatus, body: stored.responseBody };
    },

    /** Saves a reply; call inside the transaction that created what the reply describes. */
    save(ctx: IdempotencyContext, status: number, body: unknown): Promise<void> {
      return repo.saveReply({
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
    prune(): Promise<number> {
      return repo.deleteOlderThan(clock.now() - IDEMPOTENCY_WINDOW_MS);
    },
  };
  return store;
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
