// The dashboard_scratch table (PostgreSQL): a session's values between requests, by id.
import type { Executor } from "../db/storage";

export function createScratchRepository(db: Executor) {
  return {
    /** Stores `body` under `id` for `sessionId` until `expiresAt`, replacing what was there. */
    put: async (id: string, sessionId: number, expiresAt: number, body: string) =>
      void (await db.run(
        `INSERT INTO dashboard_scratch (id, session_id, expires_at, body) VALUES (?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, expires_at = excluded.expires_at, body = excluded.body`,
        [id, sessionId, expiresAt, body],
      )),
    get: async (id: string, sessionId: number, now: number): Promise<string | null> =>
      (
        await db.get<{ body: string }>("SELECT body FROM dashboard_scratch WHERE id = ? AND session_id = ? AND expires_at > ?", [
          id,
          sessionId,
          now,
        ])
      )?.body ?? null,
    /** Removes and returns it: of two servers taking one value at once, one gets it. */
    take: async (id: string, sessionId: number, now: number): Promise<string | null> =>
      (
        await db.get<{ body: string }>("DELETE FROM dashboard_scratch WHERE id = ? AND session_id = ? AND expires_at > ? RETURNING body", [
          id,
          sessionId,
          now,
        ])
      )?.body ?? null,
    prune: async (now: number) => void (await db.run("DELETE FROM dashboard_scratch WHERE expires_at <= ?", [now])),
  };
}
