// The worker's claim of due notifications, on the storage seam: what is due on the dispatched
// routes, the pacing counts, the claim itself, and putting back what an attempt did not finish.
// Part of the notification repository (repository.ts), which composes it.
import type { DeviceKind } from "../../core/kinds";
import { isUniqueViolation, type Executor } from "../../db/storage";
import { many, notificationRows as N, type NotificationRecord, type Row } from "./rows";

/** The advisory lock dispatch claims take on PostgreSQL (any number no other lock of ours uses). */
const CLAIM_LOCK = 0x70_69_67_63_6c_6d; // "pigclm"

/** A queued notification the claim may choose: what choosing needs of it. */
export interface DueCandidate {
  id: number;
  deviceId: number | null;
  nextAttemptAt: number;
}

export function createClaimQueries(db: Executor, dispatchedRoutes: readonly DeviceKind[]) {
  const SQL = {
    // One route at a time, so the (stage, route, next_attempt_at) index hands rows over in order
    // (no sort of the whole backlog per claim); the routes' heads are merged in dueCandidates.
    dueOnRoute: `
    SELECT id, device_id, next_attempt_at FROM notification
    WHERE stage = 'queued' AND route = ? AND next_attempt_at <= ?
      AND (valid_until IS NULL OR valid_until > ? OR needs_reconcile = 1)
    ORDER BY next_attempt_at, id LIMIT ?`,
    requeue: `
    UPDATE notification SET stage = 'queued', next_attempt_at = ?, attempts = attempts - ?, needs_reconcile = ?, updated_at = ?
    WHERE id = ? AND stage = 'dispatching'`,
    interrupted: "SELECT id FROM notification WHERE stage = 'dispatching'",
    markUncertain:
      "UPDATE notification SET stage = 'queued', needs_reconcile = 1, next_attempt_at = ?, updated_at = ? WHERE id = ? AND stage = 'dispatching'",
    setExternal: "UPDATE notification SET external_id = ?, updated_at = ? WHERE id = ? AND stage = 'dispatching'",
  };

  return {
    /** Of these notifications, those whose channel message id another notification owns (one statement). */
    async externalIdsTaken(pairs: readonly { id: number; externalId: string }[]): Promise<Set<number>> {
      const taken = new Set<number>();
      for (let i = 0; i < pairs.length; i += 500) {
        const part = pairs.slice(i, i + 500);
        const rows = await db.all<{ id: number; externalId: string }>(
          `SELECT id, external_id AS "externalId" FROM notification WHERE external_id IN (${part.map(() => "?").join(", ")})`,
          part.map((p) => p.externalId),
        );
        for (const p of part) if (rows.some((r) => r.externalId === p.externalId && Number(r.id) !== p.id)) taken.add(p.id);
      }
      return taken;
    },

    /**
     * Claims a channel's message id for a notification mid-attempt; false when another notification
     * already owns it (the unique index decides, so two claims of one id cannot both win).
     */
    async claimExternalId(id: number, externalId: string, now: number): Promise<boolean> {
      try {
        return (await db.run(SQL.setExternal, [externalId, now, id])).changes === 1;
      } catch (error) {
        if (isUniqueViolation(error)) return false;
        throw error;
      }
    },

    /**
     * Inside a claim's unit of work: the claims of servers sharing a PostgreSQL database take
     * turns, so each reads the pacing counts the others committed (a phone's or a number's pace
     * holds for the cluster). On SQLite the one writer already takes them in turn.
     */
    async lockClaims(): Promise<void> {
      if (db.dialect === "postgres") await db.get("SELECT pg_advisory_xact_lock(?)", [CLAIM_LOCK]);
    },

    /**
     * Queued work on the dispatched routes that is due, oldest first: only what choosing among it
     * needs (the claim returns the rows it takes whole).
     */
    async dueCandidates(now: number, limit: number): Promise<DueCandidate[]> {
      const rows: DueCandidate[] = [];
      for (const route of dispatchedRoutes) {
        const found = await db.all<{ id: number; device_id: number | null; next_attempt_at: number }>(SQL.dueOnRoute, [
          route,
          now,
          now,
          limit,
        ]);
        for (const r of found)
          rows.push({
            id: Number(r.id),
            deviceId: r.device_id === null ? null : Number(r.device_id),
            nextAttemptAt: Number(r.next_attempt_at),
          });
      }
      if (dispatchedRoutes.length < 2) return rows;
      return rows.sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.id - b.id).slice(0, limit);
    },
    /**
     * What counts against each device's pacing window that began at `since` (one statement): the
     * notifications handed over since then, and those claimed earlier whose calls are not yet
     * recorded (they go out in this window, if not already gone; see the dispatcher's restamp).
     */
    async dispatchedSinceMany(deviceIds: readonly number[], since: number): Promise<Map<number, number>> {
      const counts = new Map<number, number>(deviceIds.map((id) => [id, 0]));
      if (deviceIds.length === 0) return counts;
      const list = deviceIds.map(() => "?").join(", ");
      const rows = await db.all<{ device_id: number; n: number }>(
        `SELECT device_id, count(*) AS n FROM (
           SELECT device_id FROM notification WHERE device_id IN (${list}) AND dispatched_at >= ?
           UNION ALL
           SELECT device_id FROM notification WHERE device_id IN (${list}) AND stage = 'dispatching' AND dispatched_at < ?
         ) AS counted GROUP BY device_id`,
        [...deviceIds, since, ...deviceIds, since],
      );
      for (const r of rows) counts.set(Number(r.device_id), Number(r.n));
      return counts;
    },

    /**
     * Marks the queued ones of `ids` `dispatching` for server `owner`, in one statement; the rows it
     * took, as they are now (attempt counted, dispatched at `now`).
     */
    async claimMany(ids: number[], now: number, owner: string): Promise<NotificationRecord[]> {
      if (ids.length === 0) return [];
      return many(
        await db.all<Row>(
          `UPDATE notification SET stage = 'dispatching', attempts = attempts + 1, dispatched_at = ?, updated_at = ?, claimed_by = ?
           WHERE id IN (${ids.map(() => "?").join(", ")}) AND stage = 'queued' RETURNING ${N.columns()}`,
          [now, now, owner, ...ids],
        ),
      );
    },

    /** Claimed calls that went out in a later pacing window than their claim's: counted in that one. */
    async restampMany(list: readonly { id: number; at: number }[]): Promise<void> {
      for (let i = 0; i < list.length; i += 500) {
        const part = list.slice(i, i + 500);
        await db.run(
          `UPDATE notification SET dispatched_at = CASE id ${part.map(() => "WHEN ? THEN CAST(? AS bigint)").join(" ")} END
           WHERE id IN (${part.map(() => "?").join(", ")}) AND stage = 'dispatching'`,
          [...part.flatMap((r) => [r.id, r.at]), ...part.map((r) => r.id)],
        );
      }
    },

    /** Puts a dispatching notification back in the queue, to try again at `at`. */
    async requeue(id: number, at: number, now: number, opts: { countAttempt: boolean; reconcile: boolean }): Promise<void> {
      await db.run(SQL.requeue, [at, opts.countAttempt ? 0 : 1, opts.reconcile ? 1 : 0, now, id]);
    },

    /** After a crash: what was mid-call goes back to the queue, flagged to ask the channel first. */
    /**
     * Attempts cut off by a stop: `dispatching` rows for which `abandoned` (SQL over claimed_by,
     * taking `now`) holds, back in the queue to be checked with the channel first.
     */
    async recoverInterrupted(now: number, abandoned: (column: string) => string): Promise<number[]> {
      const ids = (await db.all<{ id: number }>(`${SQL.interrupted} AND ${abandoned("claimed_by")}`, [now])).map((r) => r.id);
      for (const id of ids) await db.run(SQL.markUncertain, [now, now, id]);
      return ids;
    },
  };
}
