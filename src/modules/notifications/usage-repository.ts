// How much of its plan an account has used. Shared by the device usage endpoint and, when
// sending, by the free-tier check.
import { type Executor, forUpdate } from "../../db/storage";

const SMS_SINCE = `SELECT count(*) AS n FROM notification n JOIN workspace w ON w.id = n.workspace_id
  WHERE w.account_id = ? AND n.delivery_type = 'sms' AND n.status IN ('pending', 'sent', 'delivered') AND n.created_at >= ?`;

export function createUsageRepository(db: Executor) {
  return {
    /**
     * Inside a unit of work: holds the account's allowance until the unit ends, so that concurrent
     * sends count it one after another (on PostgreSQL, the account row's lock; SQLite's single
     * writer already does so).
     */
    async holdAllowance(accountId: number): Promise<void> {
      const lock = forUpdate(db.dialect);
      if (lock) await db.get(`SELECT id FROM account WHERE id = ? ${lock}`, [accountId]);
    },
    /** SMS the account's workspaces accepted since `since`, not counting failed or cancelled ones. */
    async accountSmsSince(accountId: number, since: number): Promise<number> {
      return Number((await db.get<{ n: number }>(SMS_SINCE, [accountId, since]))?.n ?? 0);
    },
  };
}

export type UsageRepository = ReturnType<typeof createUsageRepository>;
