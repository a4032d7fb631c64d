// Listing and counting a workspace's notifications, on the storage seam: the API's and the
// dashboard's lists, and the counts the hourly rollups answer. Part of the notification
// repository (repository.ts), which composes it.
import type { DeliveryType } from "../../core/kinds";
import { likeAnyCase, type Executor, type SqlParam } from "../../db/storage";
import { many, notificationRows as N, type NotificationStatus, type Row } from "./rows";

import type { ListFilters } from "./model";

/** The hourly counts' bucket: created_at / HOUR_MS, as the triggers of migration 0012 compute it. */
const HOUR_MS = 3_600_000;

export function createListingQueries(db: Executor) {
  const SQL = {
    noneBetween: "SELECT 1 AS one FROM notification WHERE workspace_id = ? AND created_at >= ? AND created_at <= ? LIMIT 1",
  };

  /**
   * The workspace's notifications matching the filters, counted from the hourly counts the
   * triggers keep: whole hours of the range are summed there, and only the partial hours at its
   * ends (and a range shorter than two hours) count rows, on the (workspace, status, created_at)
   * or (workspace, created_at) index. Exact, and a handful of index reads however many rows.
   */
  async function count(
    workspaceId: number,
    f: { status?: NotificationStatus; deliveryType?: DeliveryType; from?: number; to?: number; history?: boolean },
  ): Promise<number> {
    const from = f.from ?? Number.MIN_SAFE_INTEGER;
    const to = f.to ?? Number.MAX_SAFE_INTEGER;
    if (to < from) return 0;
    const hourWhere = ["workspace_id = ?"];
    const rowWhere = ["workspace_id = ?"];
    const extra: (string | number)[] = [];
    const both = (clause: string, value: string) => {
      hourWhere.push(clause);
      rowWhere.push(clause);
      extra.push(value);
    };
    if (f.status) both("status = ?", f.status);
    if (f.deliveryType) both("delivery_type = ?", f.deliveryType);
    const rowsBetween = async (a: number, b: number) =>
      a > b
        ? 0
        : (await db.get<{ n: number }>(
            `SELECT count(*) AS n FROM notification WHERE ${rowWhere.join(" AND ")} AND created_at >= ? AND created_at <= ?`,
            [workspaceId, ...extra, a, b],
          ))!.n;
    // Hours [first, end) lie wholly inside [from, to].
    const first = f.from === undefined ? Number.MIN_SAFE_INTEGER : Math.ceil(from / HOUR_MS);
    const end = f.to === undefined ? Number.MAX_SAFE_INTEGER : Math.floor((to + 1) / HOUR_MS);
    if (end <= first) return rowsBetween(from, to);
    const inHours = `WHERE ${hourWhere.join(" AND ")} AND hour >= ? AND hour < ?`;
    // On PostgreSQL the counts not yet folded in wait in notification_hourly_delta.
    // With `history`, what retention removed counts too (its hours, in notification_pruned_hourly).
    const pruned = f.history ? ` + (SELECT coalesce(sum(n), 0) FROM notification_pruned_hourly ${inHours})` : "";
    const prunedArgs = f.history ? [workspaceId, ...extra] : [];
    const hours = async (a: number, b: number) =>
      Number(
        (db.dialect === "postgres"
          ? await db.get<{ n: number }>(
              `SELECT (SELECT coalesce(sum(n), 0) FROM notification_hourly ${inHours})
                 + (SELECT coalesce(sum(n), 0) FROM notification_hourly_delta ${inHours})${pruned} AS n`,
              [workspaceId, ...extra, a, b, workspaceId, ...extra, a, b, ...(f.history ? [...prunedArgs, a, b] : [])],
            )
          : await db.get<{ n: number }>(`SELECT (SELECT coalesce(sum(n), 0) FROM notification_hourly ${inHours})${pruned} AS n`, [
              workspaceId,
              ...extra,
              a,
              b,
              ...(f.history ? [...prunedArgs, a, b] : []),
            ]))!.n,
      );
    // A partial hour at an end is counted whole from the rollup when none of its rows lies outside
    // the range (the usual case for the hour under way: nothing is created after "now"); else row by row.
    const noneBetween = async (a: number, b: number) => a > b || !(await db.get(SQL.noneBetween, [workspaceId, a, b]));
    const head =
      f.from === undefined
        ? 0
        : (await noneBetween((first - 1) * HOUR_MS, from - 1))
          ? await hours(first - 1, first)
          : await rowsBetween(from, first * HOUR_MS - 1);
    const tail =
      f.to === undefined
        ? 0
        : (await noneBetween(to + 1, (end + 1) * HOUR_MS - 1))
          ? await hours(end, end + 1)
          : await rowsBetween(end * HOUR_MS, to);
    return (await hours(first, end)) + head + tail;
  }

  return {
    async list(workspaceId: number, f: ListFilters, offset: number, limit: number) {
      const where = ["workspace_id = ?"];
      const args: SqlParam[] = [workspaceId];
      const and = (clause: string, value: string | number) => {
        where.push(clause);
        args.push(value);
      };
      if (f.status) and("status = ?", f.status);
      if (f.deliveryType) and("delivery_type = ?", f.deliveryType);
      if (f.recipient) and("recipient = ?", f.recipient);
      if (f.from !== undefined) and("created_at >= ?", f.from);
      if (f.to !== undefined) and("created_at <= ?", f.to);
      if (f.deviceId !== undefined) and("device_id = ?", f.deviceId);
      if (f.text) and(`message ${likeAnyCase(db.dialect)} ? ESCAPE '\\'`, `%${f.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      const clause = where.join(" AND ");
      const rows = many(
        await db.all<Row>(`SELECT ${N.columns()} FROM notification WHERE ${clause} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, [
          ...args,
          limit,
          offset,
        ]),
      );
      // Filters the hourly counts know (status, channel, a time range) are counted from them; the
      // others (recipient, device, text) count the matching rows.
      const byHours = f.recipient === undefined && f.deviceId === undefined && !f.text;
      const total = byHours
        ? await count(workspaceId, { status: f.status, deliveryType: f.deliveryType, from: f.from, to: f.to })
        : (await db.get<{ n: number }>(`SELECT count(*) AS n FROM notification WHERE ${clause}`, args))!.n;
      return { rows, total };
    },

    count,

    /**
     * notifications:fold-hourly (PostgreSQL): the appended count changes folded into the hourly
     * rows, in one statement (readers see them before or after, never twice); returns how many.
     */
    async foldHourly(): Promise<number> {
      if (db.dialect !== "postgres") return 0;
      const row = await db.get<{ n: number }>(
        `WITH moved AS (DELETE FROM notification_hourly_delta RETURNING workspace_id, status, hour, delivery_type, n),
           folded AS (
             INSERT INTO notification_hourly (workspace_id, status, hour, delivery_type, n)
             SELECT workspace_id, status, hour, delivery_type, sum(n) FROM moved GROUP BY workspace_id, status, hour, delivery_type
             ON CONFLICT (workspace_id, status, hour, delivery_type) DO UPDATE SET n = notification_hourly.n + excluded.n
             RETURNING 1)
         SELECT count(*) AS n FROM moved`,
      );
      return Number(row?.n ?? 0);
    },
  };
}
