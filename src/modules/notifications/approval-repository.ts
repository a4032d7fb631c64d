// The approval decisions' statements (approval.ts): each a compare-and-set on `awaiting_approval`,
// so of two decisions on one message (approve and reject, or approve twice) only one changes it.
// Part of the notifications module, composed by its index.
import type { Executor } from "../../db/storage";

export function createApprovalRepository(db: Executor) {
  const SQL = {
    // Approved: into the normal queue, due at its schedule if that is still ahead, else now.
    approve: `
    UPDATE notification SET status = 'pending', stage = 'queued',
      next_attempt_at = CASE WHEN schedule_at IS NOT NULL AND schedule_at > ? THEN schedule_at ELSE ? END,
      approved_at = ?, decided_by = ?, updated_at = ?
    WHERE id = ? AND workspace_id = ? AND status = 'awaiting_approval'`,
    // Rejected or expired: the decision is written first, under the same condition; the state
    // machine's transition to failed follows in the same unit of work.
    markRejected: `
    UPDATE notification SET rejected_at = ?, decided_by = ?, updated_at = ?
    WHERE id = ? AND workspace_id = ? AND status = 'awaiting_approval' AND rejected_at IS NULL`,
    expired: `
    SELECT id, workspace_id AS "workspaceId" FROM notification
    WHERE status = 'awaiting_approval' AND created_at <= ? ORDER BY created_at LIMIT ?`,
  };
  return {
    /** Approves one message of the workspace; false when it no longer awaits approval. */
    approve: async (workspaceId: number, id: number, now: number, decidedBy: string): Promise<boolean> =>
      (await db.run(SQL.approve, [now, now, now, decidedBy, now, id, workspaceId])).changes > 0,
    /** Records a rejection (or expiry) of one message; false when it no longer awaits approval. */
    markRejected: async (workspaceId: number, id: number, now: number, decidedBy: string): Promise<boolean> =>
      (await db.run(SQL.markRejected, [now, decidedBy, now, id, workspaceId])).changes > 0,
    /** Messages awaiting approval created at or before `cutoff`, oldest first. */
    expired: async (cutoff: number, limit: number): Promise<{ id: number; workspaceId: number }[]> =>
      (await db.all<{ id: number; workspaceId: number }>(SQL.expired, [cutoff, limit])).map((r) => ({
        id: Number(r.id),
        workspaceId: Number(r.workspaceId),
      })),
  };
}

export type ApprovalRepository = ReturnType<typeof createApprovalRepository>;
