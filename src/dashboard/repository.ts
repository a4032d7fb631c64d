// The dashboard's own read queries: what the overview page summarises. Writes always go through
// the services the API uses.
import type { Executor } from "../db/storage";

export interface DayCounts {
  day: string;
  sent: number;
  delivered: number;
  failed: number;
  pending: number;
}

/** A recent failure as the overview lists it. */
export type Failure = {
  id: number;
  recipient: string;
  route: string;
  errorCode: string | null;
  errorReason: string | null;
  failedAt: number | null;
};

export function createDashboardRepository(db: Executor) {
  return {
    /** One entry per day from `since` (UTC midnight) to today, zeros included. */
    async countsPerDay(workspaceId: number, since: number, days: number): Promise<DayCounts[]> {
      const byDay = new Map<string, DayCounts>();
      for (let i = 0; i < days; i++) {
        const day = new Date(since + i * 86_400_000).toISOString().slice(0, 10);
        byDay.set(day, { day, sent: 0, delivered: 0, failed: 0, pending: 0 });
      }
      // Messages by the UTC day they were created and their status now; per status, so the
      // workspace/status/created_at index serves each range.
      for (const status of ["sent", "delivered", "failed", "pending"] as const) {
        const rows = await db.all<{ day: number; n: number }>(
          `SELECT created_at / 86400000 AS day, count(*) AS n
          FROM notification WHERE workspace_id = ? AND status = ? AND created_at >= ? GROUP BY created_at / 86400000`,
          [workspaceId, status, since],
        );
        for (const row of rows) {
          const entry = byDay.get(new Date(Number(row.day) * 86_400_000).toISOString().slice(0, 10));
          if (entry) entry[status] += Number(row.n);
        }
      }
      return [...byDay.values()];
    },
    balance: async (workspaceId: number): Promise<number> =>
      (await db.get<{ credit_balance: number }>("SELECT credit_balance FROM workspace WHERE id = ?", [workspaceId]))?.credit_balance ?? 0,
    devices: async (workspaceId: number) => {
      const row = await db.get<{ total: number; online: number | null }>(
        `SELECT count(*) AS total,
               sum(CASE WHEN kind <> 'sms' OR presence = 'online' THEN 1 ELSE 0 END) AS online
        FROM device WHERE workspace_id = ? AND deleted_at IS NULL AND status = 'active'`,
        [workspaceId],
      );
      return { total: Number(row?.total ?? 0), online: Number(row?.online ?? 0) };
    },
    recentFailures: (workspaceId: number): Promise<Failure[]> =>
      db.all<Failure>(
        `SELECT id, recipient, route, error_code AS "errorCode", error_reason AS "errorReason", failed_at AS "failedAt" FROM notification
        WHERE workspace_id = ? AND status = 'failed' ORDER BY failed_at DESC, id DESC LIMIT 5`,
        [workspaceId],
      ),
  };
}

export type DashboardRepository = ReturnType<typeof createDashboardRepository>;
