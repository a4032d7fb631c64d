// The credit queries: the balance on the workspace row and the ledger that explains it. Raw
// prepared statements because debit runs on every accepted send; the columns are aliased to the
// schema's names so the row types come from the drizzle tables.
import type { Database, Statement } from "bun:sqlite";
import type { creditLedger, workspace } from "../../db/schema";

type Balance = Pick<typeof workspace.$inferSelect, "creditBalance">;
type LedgerEntry = Omit<typeof creditLedger.$inferInsert, "id">;
export type LedgerRow = typeof creditLedger.$inferSelect;

export function createCreditRepository(sqlite: Database) {
  const debitBalance: Statement<Balance, [number, number, number]> = sqlite.prepare(
    "UPDATE workspace SET credit_balance = credit_balance - ? WHERE id = ? AND credit_balance >= ? RETURNING credit_balance AS creditBalance",
  );
  const creditBalance: Statement<Balance, [number, number]> = sqlite.prepare(
    "UPDATE workspace SET credit_balance = credit_balance + ? WHERE id = ? RETURNING credit_balance AS creditBalance",
  );
  const insertLedger = sqlite.prepare<never, [number, number, string, number | null, string | null, number]>(
    "INSERT INTO credit_ledger (workspace_id, delta, reason, notification_id, note, created_at) VALUES (?, ?, ?, ?, ?, ?)",
  );
  const refunded = sqlite.prepare<{ one: number }, [number]>(
    "SELECT 1 AS one FROM credit_ledger WHERE notification_id = ? AND reason = 'refund' LIMIT 1",
  );
  const balanceOf: Statement<Balance, [number]> = sqlite.prepare("SELECT credit_balance AS creditBalance FROM workspace WHERE id = ?");
  const usedSince: Statement<{ used: number }, [number, number]> = sqlite.prepare(
    "SELECT coalesce(-sum(delta), 0) AS used FROM credit_ledger WHERE workspace_id = ? AND reason IN ('debit', 'refund') AND created_at >= ?",
  );
  const ledgerPage: Statement<LedgerRow, [number, number, number]> = sqlite.prepare(`
    SELECT id, workspace_id AS workspaceId, delta, reason, notification_id AS notificationId, note, created_at AS createdAt
    FROM credit_ledger WHERE workspace_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`);
  const ledgerCount: Statement<{ n: number }, [number]> = sqlite.prepare("SELECT count(*) AS n FROM credit_ledger WHERE workspace_id = ?");

  return {
    /** Takes `amount` off the balance if it covers it; the new balance, or null when it does not (or no such workspace). */
    debitIfCovered(workspaceId: number, amount: number): number | null {
      return debitBalance.get(amount, workspaceId, amount)?.creditBalance ?? null;
    },
    /** Adds `amount` (may be negative) to the balance; the new balance, or null for no such workspace. */
    addToBalance(workspaceId: number, amount: number): number | null {
      return creditBalance.get(amount, workspaceId)?.creditBalance ?? null;
    },
    /** The balance, or null for no such workspace. */
    balanceOf(workspaceId: number): number | null {
      return balanceOf.get(workspaceId)?.creditBalance ?? null;
    },
    insertLedger(entry: LedgerEntry): void {
      insertLedger.run(entry.workspaceId, entry.delta, entry.reason, entry.notificationId ?? null, entry.note ?? null, entry.createdAt);
    },
    hasRefund(notificationId: number): boolean {
      return refunded.get(notificationId) != null;
    },
    /** Net credits debited since `since` (debits minus refunds). */
    usedSince(workspaceId: number, since: number): number {
      return usedSince.get(workspaceId, since)!.used;
    },
    /** Ledger rows of a workspace, newest first. */
    ledger(workspaceId: number, limit: number, offset: number): LedgerRow[] {
      return ledgerPage.all(workspaceId, limit, offset);
    },
    countLedger(workspaceId: number): number {
      return ledgerCount.get(workspaceId)!.n;
    },
    /** Runs `fn` in one synchronous transaction (no await inside). */
    transaction<T>(fn: () => T): T {
      return sqlite.transaction(fn)();
    },
  };
}

export type CreditRepository = ReturnType<typeof createCreditRepository>;
