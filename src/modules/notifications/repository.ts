// Notification queries, on the storage seam: the accept path and the worker's claim run these for
// every message, so each is one statement the executor prepares once.
import type { DeliveryType, DeviceKind } from "../../core/kinds";
import { indexHint, insertRows, isUniqueViolation, likeAnyCase, type Executor, type SqlParam } from "../../db/storage";
import { tableRecords } from "../../db/records";
import { notification } from "./schema";

/** A notification as the domain sees it: the schema's record (camelCase, JSON parsed, real booleans). */
export type NotificationRecord = typeof notification.$inferSelect;
export type NotificationStatus = NotificationRecord["status"];
export type Stage = NotificationRecord["stage"];

/**
 * The notification table's select list and row mapping, for every repository that reads whole
 * notifications (this one, the phone's queue, the chat-app's webhooks): they select
 * `notificationRows.columns()` and hand out `notificationRows.record(row)`, never the stored row.
 */
export const notificationRows = tableRecords(notification);
const N = notificationRows;
type Row = Record<string, unknown>;
const one = (row: Row | null): NotificationRecord | null => (row ? N.record(row) : null);
const many = (rows: Row[]): NotificationRecord[] => rows.map(N.record);

export interface NewNotification {
  workspaceId: number;
  apiKeyId: number | null;
  deliveryType: DeliveryType;
  route: DeviceKind;
  deviceId: number;
  recipient: string;
  recipientName: string | null;
  templateId: number | null;
  templateVars: Record<string, string> | null;
  message: string;
  scheduleAt: number | null;
  timezone: string | null;
  nextAttemptAt: number;
  segments: number;
  cost: number;
  /** The id the channel knows it by, when we choose it (a paired phone's message id). */
  externalId: string | null;
  channelPayload: Record<string, unknown> | null;
  simNumber: number | null;
  priority: number;
  /** Bits of NOTIFICATION_HOOKS. */
  hooks: number;
  withDeliveryReport: boolean;
  validUntil: number | null;
  /** The failover order (device kinds), and what later routes need. */
  routes: DeviceKind[] | null;
  fallback: object | null;
  createdAt: number;
}

/** Where a failover moves a notification: the next route's device and its form of the message. */
export interface Reroute {
  route: DeviceKind;
  deliveryType: DeliveryType;
  deviceId: number;
  templateId: number | null;
  templateVars: Record<string, string> | null;
  message: string;
  segments: number;
  cost: number;
  externalId: string | null;
  simNumber: number | null;
}

export interface LogRecord {
  id: number;
  at: number;
  event: string;
  status: string | null;
  errorCode: string | null;
  detail: string | null;
}

export interface ListFilters {
  status?: NotificationStatus;
  deliveryType?: DeliveryType;
  recipient?: string;
  from?: number;
  to?: number;
  /** Sent through this device (the dashboard's filter). */
  deviceId?: number;
  /** Text the message contains, case-insensitively for ASCII (the dashboard's search). */
  text?: string;
}

/**
 * `dispatchedRoutes`: the routes (device kinds) the worker hands over itself; the others (a paired
 * phone) fetch their messages, so their queue is never claimed here.
 */
/** The hourly counts' bucket: created_at / HOUR_MS, as the triggers of migration 0012 compute it. */
const HOUR_MS = 3_600_000;

/**
 * What must hear of a notification's changes beyond the events: each a bit of its `hooks`, set when
 * it is sent, so a transition of the others looks nothing up.
 */
export const NOTIFICATION_HOOKS = {
  /** A Twilio-style StatusCallback is posted at each change (src/modules/twilio/posts.ts). */
  statusCallback: 1,
  /** It carries a one-time code, masked once its channel has taken it (src/modules/verify). */
  oneTimeCode: 2,
} as const;

/** The advisory lock dispatch claims take on PostgreSQL (any number no other lock of ours uses). */
const CLAIM_LOCK = 0x70_69_67_63_6c_6d; // "pigclm"

/** A new notification's columns, as insertMany writes them: status and stage are fixed. */
const INSERT_HEAD = `
    INSERT INTO notification (workspace_id, api_key_id, delivery_type, route, device_id, recipient, recipient_name,
      template_id, template_vars, message, status, stage, schedule_at, timezone, next_attempt_at, segments, cost,
      external_id, channel_payload, sim_number, priority, hooks, with_delivery_report, valid_until, routes, fallback, created_at, updated_at) VALUES`;
const INSERT_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

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
    n.createdAt,
    n.createdAt,
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
export async function keepFirstLine(db: Executor, id: number): Promise<void> {
  const n = one(await db.get<Row>(`SELECT ${N.columns()} FROM notification n WHERE n.id = ? AND NOT EXISTS (${STORED_FIRST_LINE})`, [id]));
  if (!n) return;
  const line = firstLine(n);
  await db.run(`${INSERT_LOG} (?, ?, ?, ?, ?, ?)`, [id, line.at, line.event, line.status, line.errorCode, line.detail]);
}

/** A queued notification the claim may choose: what choosing needs of it. */
export interface DueCandidate {
  id: number;
  deviceId: number | null;
  nextAttemptAt: number;
}

export function createNotificationRepository(db: Executor, dispatchedRoutes: readonly DeviceKind[]) {
  const routeList = dispatchedRoutes.length > 0 ? dispatchedRoutes.map(() => "?").join(", ") : "NULL";
  const SQL = {
    byWorkspace: `SELECT ${N.columns()} FROM notification WHERE workspace_id = ? AND id = ?`,
    logsOf: 'SELECT id, at, event, status, error_code AS "errorCode", detail FROM notification_log WHERE notification_id = ? ORDER BY id',
    // One route at a time, so the (stage, route, next_attempt_at) index hands rows over in order
    // (no sort of the whole backlog per claim); the routes' heads are merged in dueCandidates.
    dueOnRoute: `
    SELECT id, device_id, next_attempt_at FROM notification
    WHERE stage = 'queued' AND route = ? AND next_attempt_at <= ?
      AND (valid_until IS NULL OR valid_until > ? OR needs_reconcile = 1)
    ORDER BY next_attempt_at, id LIMIT ?`,
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
    requeue: `
    UPDATE notification SET stage = 'queued', next_attempt_at = ?, attempts = attempts - ?, needs_reconcile = ?, updated_at = ?
    WHERE id = ? AND stage = 'dispatching'`,
    interrupted: "SELECT id FROM notification WHERE stage = 'dispatching'",
    markUncertain:
      "UPDATE notification SET stage = 'queued', needs_reconcile = 1, next_attempt_at = ?, updated_at = ? WHERE id = ? AND stage = 'dispatching'",
    byExternal: `SELECT ${N.columns()} FROM notification WHERE external_id = ? AND device_id = ?`,
    setExternal: "UPDATE notification SET external_id = ?, updated_at = ? WHERE id = ? AND stage = 'dispatching'",
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

  /** Stores notifications; their ids, in the order given (a bulk request's in one statement on PostgreSQL). */
  async function insertMany(rows: readonly NewNotification[]): Promise<number[]> {
    return (
      await insertRows<NewNotification, { id: number }>(db, INSERT_HEAD, rows, insertParams, { row: INSERT_ROW, returning: "RETURNING id" })
    ).map((r) => r.id);
  }

  return {
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
     * Inside a claim's unit of work: the claims of servers sharing a PostgreSQL database take
     * turns, so each reads the pacing counts the others committed (a phone's or a number's pace
     * holds for the cluster). On SQLite the one writer already takes them in turn.
     */
    async lockClaims(): Promise<void> {
      if (db.dialect === "postgres") await db.get("SELECT pg_advisory_xact_lock(?)", [CLAIM_LOCK]);
    },

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
    /** Pending notifications whose valid_until passed (see the statement), soonest first. */
    /** Whether a notification's log has a line of this event. */
    hasLogEvent: async (notificationId: number, event: string): Promise<boolean> =>
      (await db.get("SELECT 1 AS one FROM notification_log WHERE notification_id = ? AND event = ? LIMIT 1", [notificationId, event])) !==
      null,
    expiredWaiting: async (now: number, heldGrace: number, limit: number): Promise<number[]> =>
      (await db.all<{ id: number }>(SQL.expiredWaiting, [now, now, now - heldGrace, limit])).map((r) => r.id),

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

export type NotificationRepository = ReturnType<typeof createNotificationRepository>;

const TIME_COLUMN: Record<Exclude<NotificationStatus, "pending">, string> = {
  sent: "sent_at",
  delivered: "delivered_at",
  failed: "failed_at",
  cancelled: "cancelled_at",
};

export interface StatusMove {
  to: Exclude<NotificationStatus, "pending">;
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
