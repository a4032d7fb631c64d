// The idempotency_record queries. The table belongs to the HTTP layer (it stores replies), so its
// repository sits beside idempotency.ts rather than in a module. Every send with an
// Idempotency-Key reads and writes it, through the storage seam's executor.
import type { Executor } from "../db/storage";
import type { idempotencyRecord } from "./schema";

export type IdempotencyRow = typeof idempotencyRecord.$inferSelect;
export type StoredReply = Pick<IdempotencyRow, "route" | "requestHash" | "responseStatus" | "responseBody" | "createdAt">;

const FIND = `SELECT route, request_hash AS "requestHash", response_status AS "responseStatus", response_body AS "responseBody",
    created_at AS "createdAt"
  FROM idempotency_record WHERE workspace_id = ? AND key = ?`;
const UPSERT = `INSERT INTO idempotency_record (workspace_id, key, route, request_hash, response_status, response_body, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (workspace_id, key) DO UPDATE SET route = excluded.route, request_hash = excluded.request_hash,
    response_status = excluded.response_status, response_body = excluded.response_body, created_at = excluded.created_at`;

/** A key taken before its request runs: a row with no reply yet (status 0), replaced or removed in the same unit. */
const CLAIM = `INSERT INTO idempotency_record (workspace_id, key, route, request_hash, response_status, response_body, created_at)
  VALUES (?, ?, ?, ?, 0, '', ?) ON CONFLICT (workspace_id, key) DO NOTHING`;

export function createIdempotencyRepository(db: Executor) {
  return {
    reply: (workspaceId: number, key: string): Promise<StoredReply | null> => db.get<StoredReply>(FIND, [workspaceId, key]),
    /**
     * Takes a key for a request about to run; false when the key has a row already. A concurrent
     * unit that took the same key and has not finished makes this wait for it (PostgreSQL holds the
     * row's index entry until that unit ends; SQLite has one writer), so a repeat sent while the
     * first is being written finds the first's reply, never a second run.
     */
    claim: async (workspaceId: number, key: string, route: string, requestHash: string, at: number): Promise<boolean> =>
      (await db.run(CLAIM, [workspaceId, key, route, requestHash, at])).changes === 1,
    /** Gives a claimed key back (its request answered with something not kept). */
    async release(workspaceId: number, key: string): Promise<void> {
      await db.run("DELETE FROM idempotency_record WHERE workspace_id = ? AND key = ? AND response_status = 0", [workspaceId, key]);
    },
    /** Saves the reply for a key, replacing an expired one under the same key. */
    async saveReply(row: IdempotencyRow): Promise<void> {
      await db.run(UPSERT, [row.workspaceId, row.key, row.route, row.requestHash, row.responseStatus, row.responseBody, row.createdAt]);
    },
    /** Deletes the replies saved before `before`; how many. */
    deleteOlderThan: async (before: number): Promise<number> =>
      (await db.run("DELETE FROM idempotency_record WHERE created_at < ?", [before])).changes,
  };
}

export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>;
