// The workspace credit ledger. The balance is kept on the workspace row and moved in the same
// synchronous transaction as the ledger row that explains it, so the two never disagree.
import type { Database, Statement } from "bun:sqlite";
import type { Clock } from "../../clock";
import { AppError } from "../../http/errors";
import { monthStart } from "../../lib/time";

export function createCreditService(sqlite: Database, clock: Clock) {
  const debitBalance: Statement<{ credit_balance: number }, [number, number, number]> = sqlite.prepare(
    "UPDATE workspace SET credit_balance = credit_balance - ? WHERE id = ? AND credit_balance >= ? RETURNING credit_balance",
  );
  const creditBalance = sqlite.prepare("UPDATE workspace SET credit_balance = credit_balance + ? WHERE id = ? RETURNING credit_balance");
  const insertLedger = sqlite.prepare(
    "INSERT INTO credit_ledger (workspace_id, delta, reason, notification_id, note, created_at) VALUES (?, ?, ?, ?, ?, ?)",
  );
  const refunded = sqlite.prepare("SELECT 1 FROM credit_ledger WHERE notification_id = ? AND reason = 'refund' LIMIT 1");
  const balanceOf = sqlite.prepare("SELECT credit_balance AS balance FROM workspace WHERE id = ?");
  const usedSince: Statement<{ used: number }, [number, number]> = sqlite.prepare(
    "SELECT coalesce(-sum(delta), 0) AS used FROM credit_ledger WHERE workspace_id = ? AND reason IN ('debit', 'refund') AND created_at >= ?",
  );

  return {
    /**
     * Takes `amount` credits for a notification, inside the caller's transaction. Throws
     * insufficient_credits (402) when the balance does not cover it; nothing is written then.
     */
    debit(workspaceId: number, amount: number, notificationId: number | null): void {
      if (amount <= 0) return;
      const row = debitBalance.get(amount, workspaceId, amount);
      if (!row) {
        const balance = (balanceOf.get(workspaceId) as { balance: number } | null)?.balance ?? 0;
        throw new AppError("insufficient_credits", `Insufficient credits: this message costs ${amount}, the balance is ${balance}. Top up credits.`, {
          balance,
          required: amount,
        });
      }
      insertLedger.run(workspaceId, -amount, "debit", notificationId, null, clock.now());
    },

    /** Gives a notification's cost back once, inside the caller's transaction. */
    refund(workspaceId: number, amount: number, notificationId: number, note: string): boolean {
      if (amount <= 0 || refunded.get(notificationId)) return false;
      creditBalance.run(amount, workspaceId);
      insertLedger.run(workspaceId, amount, "refund", notificationId, note, clock.now());
      return true;
    },

    topUp(workspaceId: number, amount: number, note: string | null): number {
      if (!Number.isInteger(amount) || amount === 0) throw new AppError("validation_error", "amount must be a non-zero whole number");
      return sqlite.transaction(() => {
        const row = creditBalance.get(amount, workspaceId) as { credit_balance: number } | null;
        if (!row) throw new AppError("not_found", `workspace ${workspaceId} not found`);
        if (row.credit_balance < 0) throw new AppError("validation_error", `the balance cannot go below zero (it would be ${row.credit_balance})`);
        insertLedger.run(workspaceId, amount, amount > 0 ? "topup" : "adjustment", null, note, clock.now());
        return row.credit_balance;
      })();
    },

    balance(workspaceId: number): number {
      return (balanceOf.get(workspaceId) as { balance: number } | null)?.balance ?? 0;
    },

    /** Credits spent this calendar month (UTC), net of refunds. */
    usedThisMonth(workspaceId: number): number {
      return usedSince.get(workspaceId, monthStart(clock.now()))!.used;
    },
  };
}

export type CreditService = ReturnType<typeof createCreditService>;
