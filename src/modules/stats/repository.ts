// The counts behind the stats endpoints.
import type { Statement } from "bun:sqlite";
import type { Db } from "../../db/client";
import type { notification } from "../../db/schema";

type NotificationStatus = (typeof notification.$inferSelect)["status"];

/** One range count per status on the (workspace_id, status, created_at) index (a test checks the plan). */
export const STATS_QUERY = "SELECT count(*) AS n FROM notification WHERE workspace_id = ? AND status = ? AND created_at >= ? AND created_at <= ?";

export function createStatsRepository(db: Db) {
  // Raw and prepared so the statement is exactly the one whose query plan is tested: each count
  // reads only the index entries in range, never the table and never another workspace's rows.
  const countOf: Statement<{ n: number }, [number, string, number, number]> = db.$client.prepare(STATS_QUERY);

  return {
    /** Notifications of the workspace now in `status`, created within [from, to]. */
    countByStatus(workspaceId: number, status: NotificationStatus, from: number, to: number): number {
      return countOf.get(workspaceId, status, from, to)!.n;
    },
  };
}

export type StatsRepository = ReturnType<typeof createStatsRepository>;
