// The credit queries: the balance on the workspace row and the ledger that explains it (debit runs
// on every accepted send to a cloud number).
import { forUpdate, insertRows, type Executor } from "../../db/storage";
import type { LedgerRow } from "./model";

type LedgerEntry = Omit<LedgerRow, "id">;

const SQL = {
  debit: "UPDATE workspace SET credit_balance = credit_balance - ? WHERE id = ? AND credit_balance >= ? RETURNING credit_balance",
  credit: "UPDATE workspace SET credit_balance = credit_balance + ? WHERE id = ? RETURNING credit_balance",
  insertLedger: "INSERT INTO credit_ledger (workspace_id, delta, reason, notification_id, note, created_at) VALUES",
  refunded: "SELECT 1 AS one FROM credit_ledger WHERE notification_id = ? AND reason = 'refund' LIMIT 1",
  balanceOf: "SELECT credit_balance FROM workspace WHERE id = ?",
  usedSince:
    "SELECT coalesce(-sum(delta), 0) AS used FROM credit_ledger WHERE workspace_id = ? AND reason IN ('debit', 'refund') AND created_at >= ?",
  ledgerPage:
    "SELECT id, workspace_id, delta, reason, notification_id, note, created_at FROM credit_ledger WHERE workspace_id = ? " +
    "ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
  ledgerCount: "SELECT count(*) AS n FROM credit_ledger WHERE workspace_id = ?",
};

interface LedgerDbRow {
  id: number;
  workspace_id: number;
  delta: number;
  reason: LedgerRow["reason"];
  notification_id: number | null;
  note: string | null;
  created_at: number;
}

export function createCreditRepository(db: Executor) {
  /** Ledger rows (a bulk request's debits in one statement on PostgreSQL). */
  async function insertLedgers(entries: readonly LedgerEntry[]) {
    await insertRows(db, SQL.insertLedger, entries, (e) => [e.workspaceId, e.delta, e.reason, e.notificationId, e.note, e.createdAt]);
  }

  return {
    /** Takes `amount` off the balance if it covers it; the new balance, or null when it does not (or no such workspace). */
    debitIfCovered: async (workspaceId: number, amount: number): Promise<number | null> =>
      (await db.get<{ credit_balance: number }>(SQL.debit, [amount, workspaceId, amount]))?.credit_balance ?? null,
    /** Adds `amount` (may be negative) to the balance; the new balance, or null for no such workspace. */
    addToBalance: async (workspaceId: number, amount: number): Promise<number | null> =>
      (await db.get<{ credit_balance: number }>(SQL.credit, [amount, workspaceId]))?.credit_balance ?? null,
    /** The balance, or null for no such workspace. */
    balanceOf: async (workspaceId: number): Promise<number | null> =>
      (await db.get<{ credit_balance: number }>(SQL.balanceOf, [workspaceId]))?.credit_balance ?? null,
    /**
     * The balance, its row held for the rest of the unit of work where the dialect has row locks
     * (PostgreSQL): what the unit decides from it holds until it commits. Null for no such workspace.
     */
    balanceHeld: async (workspaceId: number): Promise<number | null> =>
      (await db.get<{ credit_balance: number }>(`${SQL.balanceOf} ${forUpdate(db.dialect)}`, [workspaceId]))?.credit_balance ?? null,
    insertLedger: (e: LedgerEntry) => insertLedgers([e]),
    insertLedgers,
    hasRefund: async (notificationId: number): Promise<boolean> => (await db.get(SQL.refunded, [notificationId])) !== null,
    /** Net credits debited since `since` (debits minus refunds). */
    usedSince: async (workspaceId: number, since: number): Promise<number> =>
      (await db.get<{ used: number }>(SQL.usedSince, [workspaceId, since]))!.used,
    /** Ledger rows of a workspace, newest first. */
    ledger: async (workspaceId: number, limit: number, offset: number): Promise<LedgerRow[]> =>
      (await db.all<LedgerDbRow>(SQL.ledgerPage, [workspaceId, limit, offset])).map((r) => ({
        id: r.id,
        workspaceId: r.workspace_id,
        delta: r.delta,
        reason: r.reason,
        notificationId: r.notification_id,
        note: r.note,
        createdAt: r.created_at,
      })),
    countLedger: async (workspaceId: number): Promise<number> => (await db.get<{ n: number }>(SQL.ledgerCount, [workspaceId]))!.n,
  };
}

export type CreditRepository = ReturnType<typeof createCreditRepository>;
