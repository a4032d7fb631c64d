// Notification queries, on the storage seam: the accept path and the worker's claim run these for
// every message, so each is one statement the executor prepares once. The worker's claim
// (claims-repository.ts) and the listing and counting (listing-repository.ts) are parts of their
// own, composed here.
import type { DeliveryType, DeviceKind } from "../../core/kinds";
import { indexHint, insertRows, type Executor, type SqlParam } from "../../db/storage";
import { createClaimQueries } from "./claims-repository";
import { createListingQueries } from "./listing-repository";
import { type MoveTo, notificationRows as N, one, type NotificationRecord, type NotificationStatus, type Row, type Stage } from "./rows";

import type { LogRecord, NewNotification, Reroute } from "./model";
import { NOTIFICATION_HOOKS } from "./model";

export type { DueCandidate } from "./claims-repository";

/**
 * A new notification's columns, as insertMany writes them: pending and queued, or awaiting_approval
 * and held for a key that needs approval.
 */
const INSERT_HEAD = `
    INSERT INTO notification (workspace_id, api_key_id, delivery_type, route, device_id, recipient, recipient_name,
      template_id, template_vars, message, status, stage, schedule_at, timezone, next_attempt_at, segments, cost,
      external_id, channel_payload, sim_number, priority, hooks, with_delivery_report, valid_until, routes, fallback, encrypted, created_at, updated_at, data_message,
      agent_session, approval_reason) VALUES`;
const INSERT_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

function insertParams(n: NewNotification): SqlParam[] {
  return [
    n.workspaceId,
    n.apiKeyId,
    n.deliveryType,
    n.route,
    n.deviceId,
    n.recipient,
    n.recipientName,
    n.templateId,
    n.templateVars ? JSON.stringify(n.templateVars) : null,
    n.message,
    n.awaitingApproval ? "awaiting_approval" : "pending",
    n.awaitingApproval ? "held" : "queued",
    n.scheduleAt,
    n.timezone,
    n.nextAttemptAt,
    n.segments,
    n.cost,
    n.externalId,
    n.channelPayload ? JSON.stringify(n.channelPayload) : null,
    n.simNumber,
    n.priority,
    n.hooks,
    n.withDeliveryReport ? 1 : 0,
    n.validUntil,
    n.routes ? JSON.stringify(n.routes) : null,
    n.fallback ? JSON.stringify(n.fallback) : null,
    n.encrypted ? 1 : 0,
    n.createdAt,
    n.createdAt,
    n.dataMessage ? JSON.stringify(n.dataMessage) : null,
    n.agentSession ?? null,
    n.approvalReason ?? null,
  ];
}

/** A log line of a notification, as insertLogs writes it. */
export interface LogEntry {
  notificationId: number;
  at: number;
  event: string;
  status: string | null;
  errorCode: string | null;
  detail: string | null;
}

const INSERT_LOG = "INSERT INTO notification_log (notification_id, at, event, status, error_code, detail) VALUES";

/** The events of a notification's first log line, the one that says it was stored. */
const FIRST_EVENTS = new Set(["accepted", "scheduled"]);

/** What a notification's first log line is made from. */
export type FirstLineOf = Pick<NotificationRecord, "id" | "createdAt" | "scheduleAt" | "timezone" | "deviceId" | "route">;

/**
 * A notification's first log line, "accepted" or "scheduled", made from its own columns rather
 * than stored: a send writes one row fewer. The columns it reads never change after the send,
 * but the device and route, which a failover or a phone's move change: before either changes
 * them, keepFirstLine stores the line as it reads then, and a stored line wins.
 */
export function firstLine(n: FirstLineOf): LogRecord {
  return {
    id: 0,
    at: n.createdAt,
    event: n.scheduleAt !== null ? "scheduled" : "accepted",
    status: "pending",
    errorCode: null,
    detail:
      n.scheduleAt !== null
        ? `scheduled for ${new Date(n.scheduleAt).toISOString()}${n.timezone ? ` (${n.timezone})` : ""} via device ${n.deviceId}`
        : `queued for device ${n.deviceId} (${n.route})`,
  };
}

const STORED_FIRST_LINE = `SELECT 1 FROM notification_log l WHERE l.notification_id = n.id AND l.event IN (${[...FIRST_EVENTS]
  .map((e) => `'${e}'`)
  .join(", ")})`;

/**
 * Stores notification `id`'s first line (see firstLine) unless it is stored already: called in the
 * unit of work that is about to change its device or route.
 */
async function keepFirstLine(db: Executor, id: number): Promise<void> {
  const n = one(await db.get<Row>(`SELECT ${N.columns()} FROM notification n WHERE n.id = ? AND NOT EXISTS (${STORED_FIRST_LINE})`, [id]));
  if (!n) return;
  const line = firstLine(n);
  await db.run(`${INSERT_LOG} (?, ?, ?, ?, ?, ?)`, [id, line.at, line.event, line.status, line.errorCode, line.detail]);
}

/**
 * `dispatchedRoutes`: the routes (device kinds) the worker hands over itself; the others (a paired
 * phone) fetch their messages, so their queue is never claimed here.
 */
export function createNotificationRepository(db: Executor, dispatchedRoutes: readonly DeviceKind[]) {
  const routeList = dispatchedRoutes.length > 0 ? dispatchedRoutes.map(() => "?").join(", ") : "NULL";
  const SQL = {
    byWorkspace: `SELECT ${N.columns()} FROM notification WHERE workspace_id = ? AND id = ?`,
    logsOf: 'SELECT id, at, event, status, error_code AS "errorCode", detail FROM notification_log WHERE notification_id = ? ORDER BY id',
    // Past their valid_until and not in a channel call: queued ones at once; ones a device holds
    // unconfirmed (a phone that took it up) after `heldGrace`, leaving the device time to report its
    // own "TTL expired". Devices marked offline are left to their channel (it may move or fail them),
    // and an interrupted attempt to the dispatcher, which asks the provider whether it went out first.
    // (The first bound, the later of the two, lets the partial valid_until index take the range.)
    expiredWaiting: `
    SELECT n.id FROM notification n ${indexHint(db.dialect, "notification_valid_until_idx")} LEFT JOIN device d ON d.id = n.device_id
    WHERE n.status = 'pending' AND n.valid_until IS NOT NULL AND n.valid_until <= ?
      AND ((n.stage = 'queued' AND n.valid_until <= ?) OR (n.stage = 'handed' AND n.valid_until <= ?))
      AND (d.presence IS NULL OR d.presence <> 'offline') AND n.needs_reconcile = 0
    ORDER BY n.valid_until LIMIT ?`,
    byExternal: `SELECT ${N.columns()} FROM notification WHERE external_id = ? AND device_id = ?`,
    pendingOn: (count: number) =>
      `SELECT id FROM notification WHERE device_id IN (${Array(count).fill("?").join(",")}) AND status = 'pending'`,
    // Back to the queue on the next route: a fresh message as far as any channel can tell (no
    // provider id, no attempts), keeping its id, history and due time.
    reroute: `
    UPDATE notification SET route = ?, delivery_type = ?, device_id = ?, template_id = ?, template_vars = ?, message = ?, segments = ?, cost = ?,
      external_id = ?, sim_number = ?, channel_payload = NULL, status = 'pending', stage = 'queued', next_attempt_at = ?, attempts = 0,
      needs_reconcile = 0, dispatched_at = NULL, sent_at = NULL, delivered_at = NULL, error_code = NULL, error_reason = NULL, cancel_pending = 0, updated_at = ?
    WHERE id = ? AND status IN ('pending', 'sent')`,
    stranded: `
    SELECT n.id FROM notification n ${indexHint(db.dialect, "notification_failover_idx")} JOIN device d ON d.id = n.device_id
    WHERE n.routes IS NOT NULL AND n.status = 'pending' AND n.stage = 'queued' AND n.dispatched_at IS NULL
      AND n.route NOT IN (${routeList}) AND n.next_attempt_at <= ?
      AND (d.last_seen_at IS NULL OR (d.push_token IS NULL AND d.last_seen_at < ?) OR (d.push_token IS NOT NULL AND d.last_seen_at < ?))
    ORDER BY n.id LIMIT ?`,
  };

  /** Stores notifications; their ids, in the order given (a bulk request's in one statement on PostgreSQL). */
  async function insertMany(rows: readonly NewNotification[]): Promise<number[]> {
    return (
      await insertRows<NewNotification, { id: number }>(db, INSERT_HEAD, rows, insertParams, { row: INSERT_ROW, returning: "RETURNING id" })
    ).map((r) => r.id);
  }

  return {
    ...createListingQueries(db),
    ...createClaimQueries(db, dispatchedRoutes),
    /** Stores the notification's first line before a change of its device or route (see firstLine). */
    keepFirstLine: (id: number) => keepFirstLine(db, id),
    /**
     * A cancel asked of the channel that holds the notification: it stays pending, marked, until
     * the channel answers. Whether it was still waiting for its channel (and so is now marked).
     */
    requestCancel: async (id: number, at: number): Promise<boolean> =>
      (
        await db.run(
          "UPDATE notification SET cancel_pending = 1, updated_at = ? WHERE id = ? AND status = 'pending' AND stage = 'queued' AND cancel_pending = 0",
          [at, id],
        )
      ).changes > 0,
    /** A cancelled notification that the device had downloaded: unconfirmed until the device says it dropped it. */
    markCancelUnconfirmed: async (id: number): Promise<void> => {
      await db.run("UPDATE notification SET cancel_pending = 1 WHERE id = ? AND status = 'cancelled'", [id]);
    },

    async insert(n: NewNotification): Promise<number> {
      return (await insertMany([n]))[0];
    },

    insertMany,

    get: async (workspaceId: number, id: number): Promise<NotificationRecord | null> =>
      one(await db.get<Row>(SQL.byWorkspace, [workspaceId, id])),
    /**
     * Due messages on a failover order that their device has not taken up, on the routes whose
     * devices fetch their own messages (paired phones), whose device has been silent since before
     * its cut-off: `streamCut` for a phone that keeps an event stream, `pollCut` for one that polls.
     */
    async stranded(now: number, streamCut: number, pollCut: number, limit: number): Promise<number[]> {
      return (await db.all<{ id: number }>(SQL.stranded, [...dispatchedRoutes, now, streamCut, pollCut, limit])).map((r) => r.id);
    },
    /** Moves a notification to another route (failover); false when it is no longer pending or sent. */
    async reroute(id: number, r: Reroute, now: number): Promise<boolean> {
      await keepFirstLine(db, id);
      const result = await db.run(SQL.reroute, [
        r.route,
        r.deliveryType,
        r.deviceId,
        r.templateId,
        r.templateVars ? JSON.stringify(r.templateVars) : null,
        r.message,
        r.segments,
        r.cost,
        r.externalId,
        r.simNumber,
        now,
        now,
        id,
      ]);
      return result.changes > 0;
    },
    /** A notification's log, oldest first, its first line made from its columns unless stored (firstLine). */
    async logs(n: FirstLineOf): Promise<LogRecord[]> {
      const stored = await db.all<LogRecord>(SQL.logsOf, [n.id]);
      const at = stored.findIndex((l) => FIRST_EVENTS.has(l.event));
      // Stored before its device changed (keepFirstLine), after the lines written meanwhile: it goes first.
      if (at >= 0) return [stored[at], ...stored.slice(0, at), ...stored.slice(at + 1)];
      return [firstLine(n), ...stored];
    },
    byExternalId: async (externalId: string, deviceId: number): Promise<NotificationRecord | null> =>
      one(await db.get<Row>(SQL.byExternal, [externalId, deviceId])),
    /** The notifications still waiting on these devices. */
    pendingOnDevices: async (deviceIds: number[]): Promise<number[]> =>
      deviceIds.length === 0 ? [] : (await db.all<{ id: number }>(SQL.pendingOn(deviceIds.length), deviceIds)).map((r) => r.id),
    /** Whether a notification's log has a line of this event. */
    hasLogEvent: async (notificationId: number, event: string): Promise<boolean> =>
      (await db.get("SELECT 1 AS one FROM notification_log WHERE notification_id = ? AND event = ? LIMIT 1", [notificationId, event])) !==
      null,
    /** Pending notifications whose valid_until passed (see the statement), soonest first. */
    expiredWaiting: async (now: number, heldGrace: number, limit: number): Promise<number[]> =>
      (await db.all<{ id: number }>(SQL.expiredWaiting, [now, now, now - heldGrace, limit])).map((r) => r.id),
  };
}

export type NotificationRepository = ReturnType<typeof createNotificationRepository>;

const TIME_COLUMN: Record<MoveTo, string> = {
  sent: "sent_at",
  delivered: "delivered_at",
  failed: "failed_at",
  cancelled: "cancelled_at",
};

export interface StatusMove {
  to: MoveTo;
  /** The status the row must still have: the move is a compare-and-set. */
  from: NotificationStatus;
  stage: Stage;
  /** When it happened (kept if the row has a time for it already). */
  at: number;
  now: number;
  externalId: string | null;
  errorCode: string | null;
  reason: string | null;
}

/**
 * The state machine's statements (state.ts): every status change of every notification runs them,
 * inside its unit of work, one UPDATE per target status.
 */
const SQL_BY_ID = `SELECT ${N.columns()} FROM notification WHERE id = ?`;

export function createStatusRepository(db: Executor) {
  const updates = Object.fromEntries(
    (Object.keys(TIME_COLUMN) as (keyof typeof TIME_COLUMN)[]).map((to) => [
      to,
      `UPDATE notification SET status = ?, stage = ?, ${TIME_COLUMN[to]} = coalesce(${TIME_COLUMN[to]}, ?), updated_at = ?,
           external_id = coalesce(?, external_id), error_code = coalesce(?, error_code), error_reason = coalesce(?, error_reason),
           needs_reconcile = 0, cancel_pending = 0
         WHERE id = ? AND status = ?`,
    ]),
  ) as Record<keyof typeof TIME_COLUMN, string>;

  /** Log lines of several notifications (a bulk request's in one statement on PostgreSQL). */
  async function insertLogs(entries: readonly LogEntry[]) {
    await insertRows(db, INSERT_LOG, entries, (e) => [e.notificationId, e.at, e.event, e.status, e.errorCode, e.detail]);
  }

  /** Moves one notification's status; false when it no longer had `from`. */
  const move = async (id: number, m: StatusMove): Promise<boolean> =>
    (await db.run(updates[m.to], [m.to, m.stage, m.at, m.now, m.externalId, m.errorCode, m.reason, id, m.from])).changes > 0;

  return {
    byId: async (id: number): Promise<NotificationRecord | null> => one(await db.get<Row>(SQL_BY_ID, [id])),
    /** Several notifications by id (those that exist), in one statement. */
    async byIds(ids: readonly number[]): Promise<NotificationRecord[]> {
      const out: NotificationRecord[] = [];
      for (let i = 0; i < ids.length; i += 500) {
        const part = ids.slice(i, i + 500);
        const rows = await db.all<Row>(`SELECT ${N.columns()} FROM notification WHERE id IN (${part.map(() => "?").join(", ")})`, part);
        out.push(...rows.map((r) => N.record(r)));
      }
      return out;
    },
    insertLogs,
    move,
    /**
     * Several moves at once; the ids that moved (each a compare-and-set on its `from`). On
     * PostgreSQL one UPDATE a target status for all of them, on SQLite a statement a row.
     */
    async moveMany(moves: readonly { id: number; move: StatusMove }[]): Promise<Set<number>> {
      const moved = new Set<number>();
      if (db.dialect === "sqlite" || moves.length === 1) {
        for (const { id, move: m } of moves) if (await move(id, m)) moved.add(id);
        return moved;
      }
      for (const to of Object.keys(TIME_COLUMN) as (keyof typeof TIME_COLUMN)[]) {
        const own = moves.filter((m) => m.move.to === to);
        for (let i = 0; i < own.length; i += 1000) {
          const part = own.slice(i, i + 1000);
          const values = part.map(() => "(?::bigint, ?::text, ?::text, ?::bigint, ?::bigint, ?::text, ?::text, ?::text)").join(", ");
          const rows = await db.all<{ id: number }>(
            `UPDATE notification AS n SET status = '${to}', stage = v.stage, ${TIME_COLUMN[to]} = coalesce(n.${TIME_COLUMN[to]}, v.at),
               updated_at = v.now, external_id = coalesce(v.external_id, n.external_id), error_code = coalesce(v.error_code, n.error_code),
               error_reason = coalesce(v.reason, n.error_reason), needs_reconcile = 0, cancel_pending = 0
             FROM (VALUES ${values}) AS v (id, from_status, stage, at, now, external_id, error_code, reason)
             WHERE n.id = v.id AND n.status = v.from_status
             RETURNING n.id`,
            part.flatMap(({ id, move: m }) => [id, m.from, m.stage, m.at, m.now, m.externalId, m.errorCode, m.reason]),
          );
          for (const r of rows) moved.add(Number(r.id));
        }
      }
      return moved;
    },
  };
}

export type StatusRepository = ReturnType<typeof createStatusRepository>;
