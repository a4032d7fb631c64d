// What a scrape of /metrics reads from the database: a few aggregate statements, each on an index,
// a small table or a narrow column, so a scrape stays cheap on a large database.
import type { DeviceKind } from "../../core/kinds";
import type { Executor } from "../../db/storage";

export type DeviceState = "online" | "offline" | "blocked" | "inactive";

export interface Backlog {
  /** Notifications waiting in the queue (stage `queued`) per route: how many, and how many are due. */
  queue: { route: DeviceKind; waiting: number; due: number }[];
  /** Webhook deliveries not done yet (pending or being delivered). */
  outbox: number;
}

const SQL = {
  // The queue reads only the queued rows of (stage, route, next_attempt_at), in route order, and
  // the outbox only the pending and delivering rows of (status, next_attempt_at).
  backlog: `
    SELECT 'queue' AS what, route, count(*) AS n, sum(CASE WHEN next_attempt_at <= ? THEN 1 ELSE 0 END) AS due
      FROM notification WHERE stage = 'queued' GROUP BY route
    UNION ALL
    SELECT 'outbox', '', count(*), 0 FROM webhook_delivery WHERE status IN ('pending', 'delivering')`,
  // Devices are few: the table is read through. The states exclude each other, in this order.
  devices: `
    SELECT kind, CASE
        WHEN status = 'inactive' THEN 'inactive'
        WHEN blocked_code IS NOT NULL THEN 'blocked'
        WHEN push_token IS NULL AND last_seen_at >= ? THEN 'online'
        WHEN push_token IS NOT NULL AND last_seen_at >= ? THEN 'online'
        ELSE 'offline' END AS state,
      count(*) AS n
    FROM device WHERE deleted_at IS NULL GROUP BY kind, 2`,
  // Only the size column is read: the bytes themselves lie past it (SQLite's overflow pages,
  // PostgreSQL's TOAST) and stay unread.
  attachmentBytes: "SELECT coalesce(sum(size), 0) AS n FROM thread_attachment",
};

export function createMetricsRepository(db: Executor) {
  return {
    async backlog(now: number): Promise<Backlog> {
      const rows = await db.all<{ what: string; route: string; n: number; due: number | null }>(SQL.backlog, [now]);
      const out: Backlog = { queue: [], outbox: 0 };
      for (const r of rows) {
        const n = Number(r.n);
        if (r.what === "outbox") out.outbox = n;
        else {
          const due = Number(r.due ?? 0);
          out.queue.push({ route: r.route as DeviceKind, waiting: n - due, due });
        }
      }
      return out;
    },

    /**
     * Devices not deleted, by kind and state. Online as the API's `online` says: heard from since
     * `seenSince.stream` (a phone holding the event stream, and every other kind), or since
     * `seenSince.polling` for a phone that only polls.
     */
    async devices(seenSince: { stream: number; polling: number }): Promise<{ kind: DeviceKind; state: DeviceState; n: number }[]> {
      const rows = await db.all<{ kind: DeviceKind; state: DeviceState; n: number }>(SQL.devices, [seenSince.stream, seenSince.polling]);
      return rows.map((r) => ({ kind: r.kind, state: r.state, n: Number(r.n) }));
    },

    /** The bytes of received MMS attachments stored now, every workspace's. */
    attachmentBytes: async (): Promise<number> => Number((await db.get<{ n: number | null }>(SQL.attachmentBytes))?.n ?? 0),
  };
}

export type MetricsRepository = ReturnType<typeof createMetricsRepository>;
