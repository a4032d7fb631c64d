// The paired phone's queries: its devices (looked up by token or app id, presence, settings), the
// messages it downloads and reports on, the workspace's app login and one-time codes, and the
// webhook events it has delivered, through the storage seam's executor. What it hands out is in the
// domain's shape (camelCase fields, the schema's types): notifications as NotificationRecord.
import { type Executor, jsonWithout } from "../../db/storage";
import type { workspace } from "../../modules/accounts/schema";
import type { mobileCode } from "./schema";
import { type NotificationRecord, notificationRows } from "../../modules/notifications/model";
import type { NotificationStore } from "../../modules/notifications/ports";

/** The most items one download hands a phone. */
export const MAX_MESSAGES = 100;

type DeviceIdRow = { id: number };
type Workspace = typeof workspace.$inferSelect;
/** A workspace as pairing sees it: its id and the app login. */
export type WorkspaceAuthRow = Pick<Workspace, "id" | "mobileLogin" | "mobilePasswordHash">;
type CodeRow = Pick<typeof mobileCode.$inferSelect, "workspaceId" | "expiresAt">;
const WORKSPACE_AUTH = 'id, mobile_login AS "mobileLogin", mobile_password_hash AS "mobilePasswordHash"';

export interface NewPhoneDevice {
  workspaceId: number;
  name: string;
  externalId: string;
  tokenHash: string;
  pushToken: string | null;
  simCards: string | null;
  appVersion: string | null;
  at: number;
}

const QUEUE = "device_id = ? AND route = 'sms' AND status = 'pending' AND stage = 'queued'";
const DUE = "next_attempt_at <= ? AND (valid_until IS NULL OR valid_until > ?)";
const ORDER = "ORDER BY priority DESC, next_attempt_at, id";

/**
 * A phone's queue, read through its own index (notification_phone_queue_idx) in the order it is
 * handed out: first what it was handed and never confirmed (it must see those again, in the order
 * they were handed), then what it was not handed yet, by the app's priority and due time. Nothing past its valid_until. Each
 * reads only the rows it returns, however long the backlog behind them (test/channels/phone/api.test.ts
 * checks the plans).
 */
export const PHONE_QUEUE_SQL = {
  // Few rows, and all of them were due when handed: whether they still are is checked on the rows
  // (a due-time term here would draw the planner to the worker's due-time index instead).
  // A message being cancelled is handed as Cancelling instead (cancellingFor), never as Pending again.
  handedAgain: `SELECT ${notificationRows.columns()} FROM notification WHERE ${QUEUE} AND dispatched_at IS NOT NULL AND cancel_pending = 0 ORDER BY dispatched_at, priority DESC, next_attempt_at, id LIMIT ${MAX_MESSAGES}`,
  waitingExpedited: `SELECT ${notificationRows.columns()} FROM notification WHERE ${QUEUE} AND dispatched_at IS NULL AND priority >= ? AND ${DUE} ${ORDER} LIMIT ?`,
  waitingPaced: `SELECT ${notificationRows.columns()} FROM notification WHERE ${QUEUE} AND dispatched_at IS NULL AND priority < ? AND ${DUE} ${ORDER} LIMIT ?`,
};

type Row = Record<string, unknown>;
const records = (rows: Row[]): NotificationRecord[] => rows.map(notificationRows.record);

/** `notifications`: the log's first line is kept before a message moves to another phone. */
export function createPhoneRepository(db: Executor, notifications: Pick<NotificationStore, "keepFirstLine">) {
  const ids = async (sql: string, params: (string | number)[]) => (await db.all<DeviceIdRow>(sql, params)).map((r) => r.id);
  const changed = async (sql: string, params: (string | number | null)[]) => (await db.run(sql, params)).changes > 0;
  const run = async (sql: string, params: (string | number | null)[]) => {
    await db.run(sql, params);
  };

  return {
    // Devices
    deviceIdByTokenHash: async (tokenHash: string): Promise<number | null> =>
      (await db.get<DeviceIdRow>("SELECT id FROM device WHERE token_hash = ? AND deleted_at IS NULL AND kind = 'sms'", [tokenHash]))?.id ??
      null,
    deviceIdByAppId: async (externalId: string): Promise<number | null> =>
      (await db.get<DeviceIdRow>("SELECT id FROM device WHERE external_id = ? AND deleted_at IS NULL AND kind = 'sms'", [externalId]))
        ?.id ?? null,
    updateOwnDevice: (id: number, pushToken: string | null, simCardsJson: string | null, at: number) =>
      run("UPDATE device SET push_token = ?, sim_cards = coalesce(?, sim_cards), updated_at = ? WHERE id = ?", [
        pushToken,
        simCardsJson,
        at,
        id,
      ]),
    /** The SIM cards the app reported when it started (app:started). */
    setSimCards: (id: number, simCardsJson: string, at: number) =>
      run("UPDATE device SET sim_cards = ?, updated_at = ? WHERE id = ?", [simCardsJson, at, id]),
    markSeen: (id: number, at: number, appVersion: string | null) =>
      run("UPDATE device SET last_seen_at = ?, app_version = coalesce(?, app_version) WHERE id = ?", [at, appVersion, id]),
    /** The app version the phone last named in its own User-Agent (registration or API calls). */
    appVersion: async (id: number): Promise<string | null> =>
      (await db.get<{ app_version: string | null }>("SELECT app_version FROM device WHERE id = ?", [id]))?.app_version ?? null,
    setPresence: (id: number, value: "online" | "offline") => run("UPDATE device SET presence = ? WHERE id = ?", [value, id]),
    /**
     * With several servers: the phone's event stream is open on server `holder` until `until`
     * (renewed by its keepalives), in the lease table as `stream:<device>`.
     */
    streamOpen: async (deviceId: number, holder: string, until: number) =>
      void (await db.run(
        "INSERT INTO lease (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at",
        [`stream:${deviceId}`, holder, until],
      )),
    streamClosed: async (deviceId: number, holder: string) =>
      void (await db.run("DELETE FROM lease WHERE name = ? AND holder = ?", [`stream:${deviceId}`, holder])),
    /** Whether some server holds the phone's stream now. */
    streamOpenAnywhere: async (deviceId: number, now: number): Promise<boolean> =>
      (await db.get("SELECT 1 AS one FROM lease WHERE name = ? AND expires_at >= ?", [`stream:${deviceId}`, now])) !== null,
    /** Online → offline; false when it was not online (another server, or the phone itself, got there first). */
    markOffline: async (id: number): Promise<boolean> =>
      (await db.run("UPDATE device SET presence = 'offline' WHERE id = ? AND presence = 'online'", [id])).changes === 1,
    /** Online phones not heard from since `before`, or since `pollingBefore` for those with a push token (they only poll). */
    quietSince: (before: number, pollingBefore: number): Promise<number[]> =>
      ids(
        `SELECT id FROM device WHERE kind = 'sms' AND presence = 'online' AND deleted_at IS NULL
           AND (last_seen_at IS NULL OR (push_token IS NULL AND last_seen_at < ?) OR (push_token IS NOT NULL AND last_seen_at < ?))`,
        [before, pollingBefore],
      ),
    /** Forgets a push token the phone no longer uses. */
    clearPushToken: (id: number) => run("UPDATE device SET push_token = NULL WHERE id = ?", [id]),
    /** Stores the sealed signing key unless the device has one already. */
    setWebhookKeyOnce: (id: number, sealedKey: string) =>
      run("UPDATE device SET webhook_key = ? WHERE id = ? AND webhook_key IS NULL", [sealedKey, id]),
    async insertDevice(d: NewPhoneDevice): Promise<number> {
      const row = await db.get<DeviceIdRow>(
        `INSERT INTO device (workspace_id, name, kind, status, external_id, token_hash, push_token, sim_cards, app_version,
           send_limit_per_minute, last_seen_at, created_at, updated_at)
         VALUES (?, ?, 'sms', 'active', ?, ?, ?, ?, ?, 20, ?, ?, ?) RETURNING id`,
        [d.workspaceId, d.name, d.externalId, d.tokenHash, d.pushToken, d.simCards, d.appVersion, d.at, d.at, d.at],
      );
      return row!.id;
    },

    /** The live phone of the workspace with this name and SIM list (JSON as stored), if any. */
    async returningPhone(workspaceId: number, name: string, simCardsJson: string): Promise<{ id: number; externalId: string } | null> {
      const row = await db.get<{ id: number; externalId: string }>(
        `SELECT id, external_id AS "externalId" FROM device
         WHERE workspace_id = ? AND kind = 'sms' AND deleted_at IS NULL AND name = ? AND sim_cards = ?
         ORDER BY last_seen_at DESC, id DESC LIMIT 1`,
        [workspaceId, name, simCardsJson],
      );
      return row ? { id: row.id, externalId: row.externalId } : null;
    },
    /**
     * A returning phone's new token: the old one stops working. It starts over as far as its
     * webhooks and settings go: it has not read them under the new token, so the address it was
     * served is forgotten (its next stream is told to read both again).
     */
    reissueToken: (id: number, tokenHash: string, pushToken: string | null, appVersion: string | null, at: number) =>
      run(
        `UPDATE device SET token_hash = ?, push_token = ?, app_version = coalesce(?, app_version),
           config = ${jsonWithout(db.dialect, "config", "webhookBase")}, last_seen_at = ?, updated_at = ? WHERE id = ?`,
        [tokenHash, pushToken, appVersion, at, at, id],
      ),

    // Messages
    /** Due messages the phone was handed and has not confirmed (at most 100). */
    handedAgain: async (deviceId: number, now: number): Promise<NotificationRecord[]> =>
      records(await db.all<Row>(PHONE_QUEUE_SQL.handedAgain, [deviceId])).filter(
        (n) => n.nextAttemptAt <= now && (n.validUntil === null || n.validUntil > now),
      ),
    /**
     * Due messages never handed to the phone, at most `limit`: the expedited ones (priority
     * `expedited` and above, which skip the phone's pacing) or the paced rest.
     */
    waitingFor: async (
      deviceId: number,
      now: number,
      expedited: number,
      which: "expedited" | "paced",
      limit: number,
    ): Promise<NotificationRecord[]> =>
      records(
        await db.all<Row>(which === "expedited" ? PHONE_QUEUE_SQL.waitingExpedited : PHONE_QUEUE_SQL.waitingPaced, [
          deviceId,
          expedited,
          now,
          now,
          limit,
        ]),
      ),
    /**
     * What the phone is to drop: messages whose cancel waits for its answer (pending), and those
     * cancelled while it held them that it has not confirmed (cancelled).
     */
    cancellingFor: async (deviceId: number): Promise<NotificationRecord[]> =>
      records(
        await db.all<Row>(
          `SELECT ${notificationRows.columns()} FROM notification WHERE device_id = ? AND route = 'sms' AND status IN ('pending', 'cancelled') AND cancel_pending = 1 ORDER BY id LIMIT ${MAX_MESSAGES}`,
          [deviceId],
        ),
      ),
    /**
     * Messages below `expedited` priority handed to the phone since `since`: what its budget has
     * spent (expedited messages skip the budget, so they do not use it up either).
     */
    handedSince: async (deviceId: number, since: number, expedited: number): Promise<number> =>
      Number(
        (
          await db.get<{ n: number }>(
            "SELECT count(*) AS n FROM notification WHERE device_id = ? AND dispatched_at >= ? AND priority < ?",
            [deviceId, since, expedited],
          )
        )?.n ?? 0,
      ),
    markHanded: (id: number, at: number) =>
      run("UPDATE notification SET dispatched_at = ?, attempts = attempts + 1, updated_at = ? WHERE id = ? AND dispatched_at IS NULL", [
        at,
        at,
        id,
      ]),
    /**
     * The phone took it up (handed it to the radio): pending and queued becomes handed, and a
     * cancel it was asked meanwhile is over. Whether anything changed.
     */
    markProcessed: (id: number, at: number): Promise<boolean> =>
      changed(
        "UPDATE notification SET stage = 'handed', cancel_pending = 0, updated_at = ? WHERE id = ? AND status = 'pending' AND stage = 'queued'",
        [at, id],
      ),
    /** The phone confirmed a cancellation. Whether anything changed. */
    clearCancelPending: (id: number, at: number): Promise<boolean> =>
      changed("UPDATE notification SET cancel_pending = 0, updated_at = ? WHERE id = ? AND cancel_pending = 1", [at, id]),
    byPhoneId: async (phoneId: string, deviceId: number): Promise<NotificationRecord | null> => {
      const row = await db.get<Row>(
        `SELECT ${notificationRows.columns()} FROM notification WHERE external_id = ? AND device_id = ? AND route = 'sms'`,
        [phoneId, deviceId],
      );
      return row ? notificationRows.record(row) : null;
    },
    /** Phones with scheduled messages that fell due in (after, until]. */
    devicesDueBetween: async (after: number, until: number): Promise<number[]> =>
      (
        await db.all<{ device_id: number }>(
          `SELECT DISTINCT device_id FROM notification
           WHERE route = 'sms' AND status = 'pending' AND stage = 'queued' AND dispatched_at IS NULL AND next_attempt_at > ? AND next_attempt_at <= ?`,
          [after, until],
        )
      ).map((r) => r.device_id),
    /** Every paired phone that is not deleted. */
    livePhones: (): Promise<number[]> => ids("SELECT id FROM device WHERE kind = 'sms' AND deleted_at IS NULL ORDER BY id", []),

    // Re-homing
    /**
     * Offline phones with messages still waiting on them: from the (few) offline phones to their
     * messages, on the (device_id, status) index, never a read through every pending message of
     * the phones that are online.
     */
    offlineWithWaiting: async (): Promise<number[]> =>
      (
        await db.all<{ device_id: number }>(
          `SELECT d.id AS device_id FROM device d
           WHERE d.presence = 'offline' AND d.kind = 'sms'
             AND EXISTS (SELECT 1 FROM notification n WHERE n.device_id = d.id AND n.status = 'pending' AND n.route = 'sms' AND n.stage IN ('queued', 'handed'))`,
        )
      ).map((r) => r.device_id),
    /** Another usable phone of the workspace heard from since `seenSince`, most recently seen first. */
    onlinePhoneBesides: async (workspaceId: number, deviceId: number, seenSince: number): Promise<number | null> =>
      (
        await db.get<DeviceIdRow>(
          `SELECT id FROM device
           WHERE workspace_id = ? AND id <> ? AND kind = 'sms' AND status = 'active' AND deleted_at IS NULL AND blocked_code IS NULL
             AND presence = 'online' AND last_seen_at >= ?
           ORDER BY last_seen_at DESC, id LIMIT 1`,
          [workspaceId, deviceId, seenSince],
        )
      )?.id ?? null,
    /**
     * Messages on a phone it has not taken up yet (never reported Processed), and whether it
     * downloaded each; not those whose cancel waits for the phone's answer (they stay with it).
     */
    waitingOn: async (deviceId: number): Promise<{ id: number; pulled: boolean }[]> =>
      (
        await db.all<{ id: number; dispatched_at: number | null }>(
          "SELECT id, dispatched_at FROM notification WHERE device_id = ? AND route = 'sms' AND status = 'pending' AND stage = 'queued' AND cancel_pending = 0 ORDER BY id",
          [deviceId],
        )
      ).map((r) => ({ id: r.id, pulled: r.dispatched_at !== null })),
    /** Moves one waiting message to another phone under a new phone id; whether it moved. */
    /** Moves a waiting message to another phone; `simNumber` (when given) is the SIM it goes out on there. */
    moveTo: (
      id: number,
      fromDeviceId: number,
      toDeviceId: number,
      phoneId: string,
      at: number,
      simNumber?: number | null,
    ): Promise<boolean> =>
      // Its log's first line names the device it was stored for: kept before the device changes.
      notifications.keepFirstLine(id).then(() =>
        changed(
          `UPDATE notification SET device_id = ?, external_id = ?, dispatched_at = NULL, updated_at = ?,
           sim_number = CASE WHEN ? = 1 THEN ? ELSE sim_number END
         WHERE id = ? AND device_id = ? AND status = 'pending' AND stage = 'queued' AND cancel_pending = 0`,
          [toDeviceId, phoneId, at, simNumber === undefined ? 0 : 1, simNumber ?? null, id, fromDeviceId],
        ),
      ),
    /** Messages on a phone whose valid_until, or due time plus `defaultTtl`, is not after `now`. */
    outOfTime: (deviceId: number, defaultTtl: number, now: number): Promise<number[]> =>
      ids(
        `SELECT id FROM notification
         WHERE device_id = ? AND route = 'sms' AND status = 'pending' AND stage IN ('queued', 'handed')
           AND coalesce(valid_until, next_attempt_at + ?) <= ?
         ORDER BY id`,
        [deviceId, defaultTtl, now],
      ),

    // Pairing
    workspacesWithPairingToken: () =>
      db.all<WorkspaceAuthRow & Pick<Workspace, "pairingToken">>(
        `SELECT ${WORKSPACE_AUTH}, pairing_token AS "pairingToken" FROM workspace`,
      ),
    workspaceByLogin: (login: string): Promise<WorkspaceAuthRow | null> =>
      db.get<WorkspaceAuthRow>(`SELECT ${WORKSPACE_AUTH} FROM workspace WHERE mobile_login = ?`, [login]),
    workspaceById: (id: number): Promise<WorkspaceAuthRow | null> =>
      db.get<WorkspaceAuthRow>(`SELECT ${WORKSPACE_AUTH} FROM workspace WHERE id = ?`, [id]),
    /**
     * Sets the workspace's app login and password hash unless it has both already; whether it did.
     * A registration that waited on another's (PostgreSQL re-reads the row once that one commits)
     * finds them set and changes nothing.
     */
    setCredentialsIfUnset: async (workspaceId: number, login: string, passwordHash: string): Promise<boolean> =>
      (
        await db.run(
          "UPDATE workspace SET mobile_login = ?, mobile_password_hash = ? WHERE id = ? AND (mobile_login IS NULL OR mobile_password_hash IS NULL)",
          [login, passwordHash, workspaceId],
        )
      ).changes === 1,
    setPassword: (workspaceId: number, passwordHash: string) =>
      run("UPDATE workspace SET mobile_password_hash = ? WHERE id = ?", [passwordHash, workspaceId]),
    /** Stores a one-time code; false when a code with that digest is already stored. */
    insertCode: async (digest: string, workspaceId: number, expiresAt: number): Promise<boolean> =>
      (
        await db.run("INSERT INTO mobile_code (code, workspace_id, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [
          digest,
          workspaceId,
          expiresAt,
        ])
      ).changes === 1,
    /** Consumes a code: it works once. */
    takeCode: (digest: string): Promise<CodeRow | null> =>
      db.get<CodeRow>('DELETE FROM mobile_code WHERE code = ? RETURNING workspace_id AS "workspaceId", expires_at AS "expiresAt"', [
        digest,
      ]),
    pruneCodes: (before: number) => run("DELETE FROM mobile_code WHERE expires_at < ?", [before]),
    codeExpiry: async (digest: string): Promise<number | null> =>
      (await db.get<Pick<CodeRow, "expiresAt">>('SELECT expires_at AS "expiresAt" FROM mobile_code WHERE code = ?', [digest]))?.expiresAt ??
      null,

    // Webhooks
    /** Records a webhook event id; false when it was seen before. */
    firstDelivery: (eventId: string, deviceId: number, event: string, at: number): Promise<boolean> =>
      changed("INSERT INTO phone_event (id, device_id, event, received_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING", [
        eventId,
        deviceId,
        event,
        at,
      ]),
  };
}

export type PhoneRepository = ReturnType<typeof createPhoneRepository>;
