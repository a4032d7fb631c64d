// The workspace credit ledger. The balance is kept on the workspace row and moved in the same
// synchronous transaction as the ledger row that explains it, so the two never disagree.
import type { Database } from "bun:sqlite";
import type { Clock } from "../../clock";
import { AppError } from "../../http/errors";
import { monthStart } from "../../lib/time";
import { createCreditRepository } from "./repository";

export function createCreditService(sqlite: Database, clock: Clock) {
  const repo = createCreditRepository(sqlite);

  function insufficient(workspaceId: number, amount: number): AppError {
    const balance = repo.balanceOf(workspaceId) ?? 0;
    return new AppError(
      "insufficient_credits",
      `Insufficient credits: this message costs ${amount}, the balance is ${balance}. Top up credits.`,
      {
        balance,
        required: amount,
      },
    );
  }

  return {
    /**
     * Takes `amount` credits for a notification, inside the caller's transaction. Throws
     * insufficient_credits (402) when the balance does not cover it; nothing is written then.
     */
    debit(workspaceId: number, amount: number, notificationId: number | null): void {
      if (amount <= 0) return;
      if (repo.debitIfCovered(workspaceId, amount) === null) throw insufficient(workspaceId, amount);
      repo.insertLedger({ workspaceId, delta: -amount, reason: "debit", notificationId, note: null, createdAt: clock.now() });
    },

    /** Gives a notification's cost back once, inside the caller's transaction. */
    refund(workspaceId: number, amount: number, notificationId: number, note: string): boolean {
      if (amount <= 0 || repo.hasRefund(notificationId)) return false;
      repo.addToBalance(workspaceId, amount);
      repo.insertLedger({ workspaceId, delta: amount, reason: "refund", notificationId, note, createdAt: clock.now() });
      return true;
    },

    topUp(workspaceId: number, amount: number, note: string | null): number {
      if (!Number.isInteger(amount) || amount === 0) throw new AppError("validation_error", "amount must be a non-zero whole number");
      return repo.transaction(() => {
        const balance = repo.addToBalance(workspaceId, amount);
        if (balance === null) throw new AppError("not_found", `workspace ${workspaceId} not found`);
        if (balance < 0) throw new AppError("validation_error", `the balance cannot go below zero (it would be ${balance})`);
        repo.insertLedger({
          workspaceId,
          delta: amount,
          reason: amount > 0 ? "topup" : "adjustment",
          notificationId: null,
          note,
          createdAt: clock.now(),
        });
        return balance;
      });
    },

    /** The 402 a cost the balance does not cover would get, or null when it is covered (nothing is written). */
    shortfall(workspaceId: number, amount: number): AppError | null {
      return amount > 0 && (repo.balanceOf(workspaceId) ?? 0) < amount ? insufficient(workspaceId, amount) : null;
    },

    balance(workspaceId: number): number {
      return repo.balanceOf(workspaceId) ?? 0;
    },

    /** One page of the ledger, newest first, with how many rows there are in all. */
    ledger(workspaceId: number, page = 1, limit = 20) {
      return { entries: repo.ledger(workspaceId, limit, (page - 1) * limit), total: repo.countLedger(workspaceId) };
    },

    /** Credits spent this calendar month (UTC), net of refunds. */
    usedThisMonth(workspaceId: number): number {
      return repo.usedSince(workspaceId, monthStart(clock.now()));
    },
  };
}

export type CreditService = ReturnType<typeof createCreditService>;
