// The dashboard's own read queries: what the overview page summarises. Writes always go through
// the services the API uses.
import type { Database, Statement } from "bun:sqlite";

export interface DayCounts {
  day: string;
  sent: number;
  delivered: number;
  failed: number;
  pending: number;
}

export function createDashboardRepository(sqlite: Database) {
  // Messages by the UTC day they were created and their status now.
  // Per status (so the workspace/status/created_at index serves each range), per day number.
  const perDay: Statement<{ day: number; n: number }, [number, string, number]> = sqlite.prepare(`
    SELECT created_at / 86400000 AS day, count(*) AS n
    FROM notification WHERE workspace_id = ? AND status = ? AND created_at >= ? GROUP BY day`);
  const balance: Statement<{ credit_balance: number }, [number]> = sqlite.prepare("SELECT credit_balance FROM workspace WHERE id = ?");
  const deviceCounts: Statement<{ total: number; online: number }, [number]> = sqlite.prepare(`
    SELECT count(*) AS total,
           sum(CASE WHEN kind <> 'sms' OR presence = 'online' THEN 1 ELSE 0 END) AS online
    FROM device WHERE workspace_id = ? AND deleted_at IS NULL AND status = 'active'`);
  const failures: Statement<
    { id: number; recipient: string; route: string; error_code: string | null; error_reason: string | null; failed_at: number | null },
    [number]
  > = sqlite.prepare(`
    SELECT id, recipient, route, error_code, error_reason, failed_at FROM notification
    WHERE workspace_id = ? AND status = 'failed' ORDER BY failed_at DESC, id DESC LIMIT 5`);

  // Live badges: the committed status of notifications that just changed.
  const statuses: Statement<{ id: number; workspace_id: number; status: string }, [string]> = sqlite.prepare(
    "SELECT id, workspace_id, status FROM notification WHERE id IN (SELECT value FROM json_each(?))",
  );

  return {
    /** The current status of these notifications (by id), with their workspace. */
    statusesOf: (ids: number[]) => statuses.all(JSON.stringify(ids)),
    /** One entry per day from `since` (UTC midnight) to today, zeros included. */
    countsPerDay(workspaceId: number, since: number, days: number): DayCounts[] {
      const byDay = new Map<string, DayCounts>();
      for (let i = 0; i < days; i++) {
        const day = new Date(since + i * 86_400_000).toISOString().slice(0, 10);
        byDay.set(day, { day, sent: 0, delivered: 0, failed: 0, pending: 0 });
      }
      for (const status of ["sent", "delivered", "failed", "pending"] as const) {
        for (const row of perDay.all(workspaceId, status, since)) {
          const entry = byDay.get(new Date(row.day * 86_400_000).toISOString().slice(0, 10));
          if (entry) entry[status] += row.n;
        }
      }
      return [...byDay.values()];
    },
    balance: (workspaceId: number): number => balance.get(workspaceId)?.credit_balance ?? 0,
    devices: (workspaceId: number) => {
      const row = deviceCounts.get(workspaceId);
      return { total: row?.total ?? 0, online: row?.online ?? 0 };
    },
    recentFailures: (workspaceId: number) => failures.all(workspaceId),
  };
}

export type DashboardRepository = ReturnType<typeof createDashboardRepository>;
