// What a dashboard session keeps from one request to the next: the message for the next page and
// bulk-send drafts. A server alone on its database keeps them in memory; servers sharing
// one keep them in it (sealed with the key: a message may carry a new API secret), since the
// next request may reach another server. A value is read by its own session only, and taken once.
import type { Clock } from "../clock";
import type { Storage } from "../db/storage";
import type { SecretBox } from "../lib/secrets";
import { createScratchRepository } from "./scratch-repository";

export interface Scratch {
  put(id: string, sessionId: number, value: unknown, ttlMs: number): Promise<void>;
  get<T>(id: string, sessionId: number): Promise<T | null>;
  /** The value, removed: a second take finds nothing. */
  take<T>(id: string, sessionId: number): Promise<T | null>;
}

/** Values kept at most, in memory: the oldest give way beyond it. */
const MAX_IN_MEMORY = 10_000;

/** `shared`: other servers share the database (cluster.shared), so the next request may reach one of them. */
export function createScratch(storage: Storage, secrets: SecretBox, clock: Clock, shared: boolean): Scratch {
  if (shared) {
    const repo = createScratchRepository(storage);
    let pruned = 0;
    return {
      async put(id, sessionId, value, ttlMs) {
        const now = clock.now();
        // Expired values go once a minute, whoever writes.
        if (now - pruned > 60_000) {
          pruned = now;
          await repo.prune(now);
        }
        await repo.put(id, sessionId, now + ttlMs, secrets.seal(JSON.stringify(value)));
      },
      async get<T>(id: string, sessionId: number) {
        const body = await repo.get(id, sessionId, clock.now());
        return body === null ? null : (JSON.parse(secrets.open(body)) as T);
      },
      async take<T>(id: string, sessionId: number) {
        const body = await repo.take(id, sessionId, clock.now());
        return body === null ? null : (JSON.parse(secrets.open(body)) as T);
      },
    };
  }
  const values = new Map<string, { sessionId: number; expiresAt: number; value: unknown }>();
  const live = (id: string, sessionId: number) => {
    const entry = values.get(id);
    if (!entry) return null;
    if (entry.expiresAt <= clock.now()) {
      values.delete(id);
      return null;
    }
    return entry.sessionId === sessionId ? entry : null;
  };
  return {
    async put(id, sessionId, value, ttlMs) {
      values.delete(id);
      values.set(id, { sessionId, expiresAt: clock.now() + ttlMs, value });
      if (values.size > MAX_IN_MEMORY) values.delete(values.keys().next().value!);
    },
    async get<T>(id: string, sessionId: number) {
      return (live(id, sessionId)?.value as T) ?? null;
    },
    async take<T>(id: string, sessionId: number) {
      const entry = live(id, sessionId);
      if (entry) values.delete(id);
      return (entry?.value as T) ?? null;
    },
  };
}
