// The workspace credit ledger. The balance is kept on the workspace row and moved in the same
// unit of work as the ledger row that explains it, so the two never disagree.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { AppError } from "../../core/errors";
import { monthStart } from "../../lib/time";
import { createCreditRepository } from "./repository";

export function createCreditService(storage: Storage, clock: Clock) {
  const repo = createCreditRepository(storage);

  async function insufficient(workspaceId: number, amount: number): Promise<AppError> {
    return insufficientFor(amount, (await repo.balanceOf(workspaceId)) ?? 0);
  }

  function insufficientFor(amount: number, balance: number): AppError {
    return new AppError(
      "insufficient_credits",
      `Insufficient credits: this message costs ${amount}, the balance is ${balance}. Top up credits.`,
      {
        balance,
        required: amount,
      },
    );
  }

  /**
   * Takes each notification's cost in one update of the balance, and writes their ledger rows.
   * Throws insufficient_credits (402) when the balance does not cover them all; nothing is written
   * then.
   */
  async function debitMany(workspaceId: number, debits: { amount: number; notificationId: number | null }[]): Promise<void> {
    const paid = debits.filter((d) => d.amount > 0);
    const total = paid.reduce((sum, d) => sum + d.amount, 0);
    if (total <= 0) return;
    if ((await repo.debitIfCovered(workspaceId, total)) === null) throw await insufficient(workspaceId, total);
    const at = clock.now();
    await repo.insertLedgers(
      paid.map((d) => ({
        workspaceId,
        delta: -d.amount,
        reason: "debit" as const,
        notificationId: d.notificationId,
        note: null,
        createdAt: at,
      })),
    );
  }

  return {
    /**
     * Takes `amount` credits for a notification, inside the caller's transaction. Throws
     * insufficient_credits (402) when the balance does not cover it; nothing is written then.
     */
    debit: (workspaceId: number, amount: number, notificationId: number | null): Promise<void> =>
      debitMany(workspaceId, [{ amount, notificationId }]),

    /**
     * The balance for a batch of debits (a bulk request's) decided in memory: its row is held
     * until the unit of work ends where the dialect has row locks, so no other server spends it
     * in between. Call debitMany with what was decided.
     */
    holdBalance: async (workspaceId: number): Promise<number> => (await repo.balanceHeld(workspaceId)) ?? 0,

    /** The 402 for a send of `amount` that `balance` does not cover. */
    insufficientFor,

    /**
     * Takes each notification's cost, as decided from holdBalance, in one update of the balance and
     * its ledger rows. Throws insufficient_credits when the balance no longer covers them all.
     */
    debitMany,

    /** Gives a notification's cost back once, inside the caller's transaction. */
    async refund(workspaceId: number, amount: number, notificationId: number, note: string): Promise<boolean> {
      if (amount <= 0 || (await repo.hasRefund(notificationId))) return false;
      await repo.addToBalance(workspaceId, amount);
      await repo.insertLedger({ workspaceId, delta: amount, reason: "refund", notificationId, note, createdAt: clock.now() });
      return true;
    },

    topUp(workspaceId: number, amount: number, note: string | null): Promise<number> {
      if (!Number.isInteger(amount) || amount === 0) throw new AppError("validation_error", "amount must be a non-zero whole number");
      return storage.transaction(async () => {
        const balance = await repo.addToBalance(workspaceId, amount);
        if (balance === null) throw new AppError("not_found", `workspace ${workspaceId} not found`);
        if (balance < 0) throw new AppError("validation_error", `the balance cannot go below zero (it would be ${balance})`);
        await repo.insertLedger({
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
    async shortfall(workspaceId: number, amount: number): Promise<AppError | null> {
      return amount > 0 && ((await repo.balanceOf(workspaceId)) ?? 0) < amount ? insufficient(workspaceId, amount) : null;
    },

    balance: async (workspaceId: number): Promise<number> => (await repo.balanceOf(workspaceId)) ?? 0,

    /** One page of the ledger, newest first, with how many rows there are in all. */
    async ledger(workspaceId: number, page = 1, limit = 20) {
      return { entries: await repo.ledger(workspaceId, limit, (page - 1) * limit), total: await repo.countLedger(workspaceId) };
    },

    /** Credits spent this calendar month (UTC), net of refunds. */
    usedThisMonth: (workspaceId: number): Promise<number> => repo.usedSince(workspaceId, monthStart(clock.now())),
  };
}

export type CreditService = ReturnType<typeof createCreditService>;
