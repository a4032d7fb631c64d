// The idempotency_record queries. The table belongs to the HTTP layer (it stores replies), so its
// repository sits beside idempotency.ts rather than in a module. Every send with an
// Idempotency-Key reads and writes it, so the statements are prepared once, columns aliased to the
// schema's names so the row type comes from the drizzle table.
import type { Database, Statement } from "bun:sqlite";
import type { idempotencyRecord } from "../db/schema";

export type IdempotencyRow = typeof idempotencyRecord.$inferSelect;
export type StoredReply = Pick<IdempotencyRow, "route" | "requestHash" | "responseStatus" | "responseBody" | "createdAt">;

export function createIdempotencyRepository(sqlite: Database) {
  const find: Statement<StoredReply, [number, string]> = sqlite.prepare(
    `SELECT route, request_hash AS requestHash, response_status AS responseStatus, response_body AS responseBody, created_at AS createdAt
     FROM idempotency_record WHERE workspace_id = ? AND key = ?`,
  );
  const upsert = sqlite.prepare<never, [number, string, string, string, number, string, number]>(
    `INSERT INTO idempotency_record (workspace_id, key, route, request_hash, response_status, response_body, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (workspace_id, key) DO UPDATE SET route = excluded.route, request_hash = excluded.request_hash,
       response_status = excluded.response_status, response_body = excluded.response_body, created_at = excluded.created_at`,
  );
  const prune = sqlite.prepare<never, [number]>("DELETE FROM idempotency_record WHERE created_at < ?");

  return {
    reply: (workspaceId: number, key: string): StoredReply | null => find.get(workspaceId, key) ?? null,
    /** Saves the reply for a key, replacing an expired one under the same key. */
    saveReply(row: IdempotencyRow): void {
      upsert.run(row.workspaceId, row.key, row.route, row.requestHash, row.responseStatus, row.responseBody, row.createdAt);
    },
    /** Deletes the replies saved before `before`; how many. */
    deleteOlderThan: (before: number): number => prune.run(before).changes,
  };
}

export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>;
