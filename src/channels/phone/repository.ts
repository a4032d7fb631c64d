// The paired phone's queries: its devices (looked up by token or app id, presence, settings), the
// messages it downloads and reports on, the workspace's app login and one-time codes, and the
// webhook events it has delivered. All prepared once: a phone polls and reports all day, and the
// rows come back as bun:sqlite returns them (types derived from the schema through RawRow).
import type { Database, Statement } from "bun:sqlite";
import type { RawRow } from "../../db/raw-row";
import type { device, mobileCode, workspace } from "../../db/schema";
import type { NotificationRecord } from "../../modules/notifications/state";

/** The most items one download hands a phone. */
export const MAX_MESSAGES = 100;

type DeviceIdRow = Pick<RawRow<typeof device>, "id">;
/** A workspace as pairing sees it: its id and the app login. */
export type WorkspaceAuthRow = Pick<RawRow<typeof workspace>, "id" | "mobile_login" | "mobile_password_hash">;
type CodeRow = Pick<RawRow<typeof mobileCode>, "workspace_id" | "expires_at">;

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
 * reads only the rows it returns, however long the backlog behind them (test/phone-api.test.ts
 * checks the plans).
 */
export const PHONE_QUEUE_SQL = {
  // Few rows, and all of them were due when handed: whether they still are is checked on the rows
  // (a due-time term here would draw the planner to the worker's due-time index instead).
  handedAgain: `SELECT * FROM notification WHERE ${QUEUE} AND dispatched_at IS NOT NULL ORDER BY dispatched_at, priority DESC, next_attempt_at, id LIMIT ${MAX_MESSAGES}`,
  waitingExpedited: `SELECT * FROM notification WHERE ${QUEUE} AND dispatched_at IS NULL AND priority >= ? AND ${DUE} ${ORDER} LIMIT ?`,
  waitingPaced: `SELECT * FROM notification WHERE ${QUEUE} AND dispatched_at IS NULL AND priority < ? AND ${DUE} ${ORDER} LIMIT ?`,
};

export function createPhoneRepository(sqlite: Database) {
  const byToken: Statement<DeviceIdRow, [string]> = sqlite.prepare(
    "SELECT id FROM device WHERE token_hash = ? AND deleted_at IS NULL AND kind = 'sms'",
  );
  const byExternal: Statement<DeviceIdRow, [string]> = sqlite.prepare(
    "SELECT id FROM device WHERE external_id = ? AND deleted_at IS NULL AND kind = 'sms'",
  );
  const updateDevice = sqlite.prepare("UPDATE device SET push_token = ?, sim_cards = coalesce(?, sim_cards), updated_at = ? WHERE id = ?");
  const presence = sqlite.prepare("UPDATE device SET last_seen_at = ?, app_version = coalesce(?, app_version) WHERE id = ?");
  const appVersion = sqlite.prepare<{ app_version: string | null }, [number]>("SELECT app_version FROM device WHERE id = ?");
  const setPresence = sqlite.prepare("UPDATE device SET presence = ? WHERE id = ?");
  const wentQuiet: Statement<DeviceIdRow, [number, number]> = sqlite.prepare(
    "SELECT id FROM device WHERE kind = 'sms' AND presence = 'online' AND deleted_at IS NULL AND (last_seen_at IS NULL OR last_seen_at < CASE WHEN push_token IS NULL THEN ? ELSE ? END)",
  );
  const dropPushToken = sqlite.prepare("UPDATE device SET push_token = NULL WHERE id = ?");
  const setKey = sqlite.prepare("UPDATE device SET webhook_key = ? WHERE id = ? AND webhook_key IS NULL");
  const insertDevice: Statement<DeviceIdRow> = sqlite.prepare(`
    INSERT INTO device (workspace_id, name, kind, status, external_id, token_hash, push_token, sim_cards, app_version,
      send_limit_per_minute, last_seen_at, created_at, updated_at)
    VALUES (?, ?, 'sms', 'active', ?, ?, ?, ?, ?, 20, ?, ?, ?) RETURNING id`);

  // Already handed out first (the phone must see them again), then by the app's priority, then due
  // time; nothing past its valid_until is handed out.
  // A returning phone: same workspace, name and SIM cards (as the app sends them), not deleted.
  const returning: Statement<DeviceIdRow & Pick<RawRow<typeof device>, "external_id">, [number, string, string]> = sqlite.prepare(`
    SELECT id, external_id FROM device
    WHERE workspace_id = ? AND kind = 'sms' AND deleted_at IS NULL AND name = ? AND sim_cards = ?
    ORDER BY last_seen_at DESC, id DESC LIMIT 1`);
  // A phone paired again starts over as far as its webhooks and settings go: it has not read them
  // under the new token, so the address it was served is forgotten (its next stream is told to
  // read both again).
  const reissue = sqlite.prepare(
    "UPDATE device SET token_hash = ?, push_token = ?, app_version = coalesce(?, app_version), config = json_remove(config, '$.webhookBase'), last_seen_at = ?, updated_at = ? WHERE id = ?",
  );

  const handedAgain: Statement<NotificationRecord, [number]> = sqlite.prepare(PHONE_QUEUE_SQL.handedAgain);
  // Expedited messages (priority 100 and above) apart from the rest: they skip the phone's pacing.
  const waitingExpedited: Statement<NotificationRecord, [number, number, number, number, number]> = sqlite.prepare(
    PHONE_QUEUE_SQL.waitingExpedited,
  );
  const waitingPaced: Statement<NotificationRecord, [number, number, number, number, number]> = sqlite.prepare(
    PHONE_QUEUE_SQL.waitingPaced,
  );
  const livePhones: Statement<DeviceIdRow, []> = sqlite.prepare(
    "SELECT id FROM device WHERE kind = 'sms' AND deleted_at IS NULL ORDER BY id",
  );
  const cancelling: Statement<NotificationRecord, [number]> = sqlite.prepare(
    `SELECT * FROM notification WHERE device_id = ? AND route = 'sms' AND status = 'cancelled' AND cancel_pending = 1 ORDER BY id LIMIT ${MAX_MESSAGES}`,
  );
  // Expedited messages skip the budget, so they do not use it up either.
  const handedSince: Statement<{ n: number }, [number, number, number]> = sqlite.prepare(
    "SELECT count(*) AS n FROM notification WHERE device_id = ? AND dispatched_at >= ? AND priority < ?",
  );
  const markHanded = sqlite.prepare(
    "UPDATE notification SET dispatched_at = ?, attempts = attempts + 1, updated_at = ? WHERE id = ? AND dispatched_at IS NULL",
  );
  const markProcessed = sqlite.prepare(
    "UPDATE notification SET stage = 'handed', updated_at = ? WHERE id = ? AND status = 'pending' AND stage = 'queued'",
  );
  const clearCancel = sqlite.prepare("UPDATE notification SET cancel_pending = 0, updated_at = ? WHERE id = ? AND cancel_pending = 1");
  const markCancelPending = sqlite.prepare("UPDATE notification SET cancel_pending = 1 WHERE id = ?");
  const byPhoneId: Statement<NotificationRecord, [string, number]> = sqlite.prepare(
    "SELECT * FROM notification WHERE external_id = ? AND device_id = ? AND route = 'sms'",
  );
  const becameDue: Statement<{ device_id: number }, [number, number]> = sqlite.prepare(`
    SELECT DISTINCT device_id FROM notification
    WHERE route = 'sms' AND status = 'pending' AND stage = 'queued' AND dispatched_at IS NULL AND next_attempt_at > ? AND next_attempt_at <= ?`);
  // Re-homing: waiting messages of offline phones, the online phones that can take them.
  // From the (few) offline phones to their messages, on the (device_id, status) index: never a
  // read through every pending message of the phones that are online.
  const offlineWithWaiting: Statement<{ device_id: number }, []> = sqlite.prepare(`
    SELECT d.id AS device_id FROM device d
    WHERE d.presence = 'offline' AND d.kind = 'sms'
      AND EXISTS (SELECT 1 FROM notification n WHERE n.device_id = d.id AND n.status = 'pending' AND n.route = 'sms' AND n.stage IN ('queued', 'handed'))`);
  const onlinePhone: Statement<DeviceIdRow, [number, number, number]> = sqlite.prepare(`
    SELECT id FROM device
    WHERE workspace_id = ? AND id <> ? AND kind = 'sms' AND status = 'active' AND deleted_at IS NULL AND blocked_code IS NULL
      AND presence = 'online' AND last_seen_at >= ?
    ORDER BY last_seen_at DESC, id LIMIT 1`);
  const waitingOn: Statement<{ id: number; dispatched_at: number | null }, [number]> = sqlite.prepare(
    "SELECT id, dispatched_at FROM notification WHERE device_id = ? AND route = 'sms' AND status = 'pending' AND stage = 'queued' ORDER BY id",
  );
  const moveTo = sqlite.prepare(`
    UPDATE notification SET device_id = ?, external_id = ?, dispatched_at = NULL, updated_at = ?
    WHERE id = ? AND device_id = ? AND status = 'pending' AND stage = 'queued'`);
  const outOfTime: Statement<{ id: number }, [number, number, number]> = sqlite.prepare(`
    SELECT id FROM notification
    WHERE device_id = ? AND route = 'sms' AND status = 'pending' AND stage IN ('queued', 'handed')
      AND coalesce(valid_until, next_attempt_at + ?) <= ?
    ORDER BY id`);

  const allPairing: Statement<WorkspaceAuthRow & Pick<RawRow<typeof workspace>, "pairing_token">, []> = sqlite.prepare(
    "SELECT id, mobile_login, mobile_password_hash, pairing_token FROM workspace",
  );
  const wsByLogin: Statement<WorkspaceAuthRow, [string]> = sqlite.prepare(
    "SELECT id, mobile_login, mobile_password_hash FROM workspace WHERE mobile_login = ?",
  );
  const wsById: Statement<WorkspaceAuthRow, [number]> = sqlite.prepare(
    "SELECT id, mobile_login, mobile_password_hash FROM workspace WHERE id = ?",
  );
  const setCredentials = sqlite.prepare("UPDATE workspace SET mobile_login = ?, mobile_password_hash = ? WHERE id = ?");
  const setPassword = sqlite.prepare("UPDATE workspace SET mobile_password_hash = ? WHERE id = ?");
  const insertCode = sqlite.prepare("INSERT INTO mobile_code (code, workspace_id, expires_at) VALUES (?, ?, ?)");
  const takeCode: Statement<CodeRow, [string]> = sqlite.prepare(
    "DELETE FROM mobile_code WHERE code = ? RETURNING workspace_id, expires_at",
  );
  const pruneCodes = sqlite.prepare("DELETE FROM mobile_code WHERE expires_at < ?");
  const peekCode: Statement<Pick<CodeRow, "expires_at">, [string]> = sqlite.prepare("SELECT expires_at FROM mobile_code WHERE code = ?");

  const seenEvent = sqlite.prepare(
    "INSERT INTO phone_event (id, device_id, event, received_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
  );

  return {
    // Devices
    deviceIdByTokenHash: (tokenHash: string): number | null => byToken.get(tokenHash)?.id ?? null,
    deviceIdByAppId: (externalId: string): number | null => byExternal.get(externalId)?.id ?? null,
    updateOwnDevice(id: number, pushToken: string | null, simCardsJson: string | null, at: number) {
      updateDevice.run(pushToken, simCardsJson, at, id);
    },
    markSeen(id: number, at: number, appVersion: string | null) {
      presence.run(at, appVersion, id);
    },
    /** The app version the phone last named in its own User-Agent (registration or API calls). */
    appVersion: (id: number): string | null => appVersion.get(id)?.app_version ?? null,
    setPresence(id: number, value: "online" | "offline") {
      setPresence.run(value, id);
    },
    /** Online phones not heard from since `before`, or since `pollingBefore` for those with a push token (they only poll). */
    quietSince: (before: number, pollingBefore: number): number[] => wentQuiet.all(before, pollingBefore).map((r) => r.id),
    /** Forgets a push token the phone no longer uses. */
    clearPushToken(id: number) {
      dropPushToken.run(id);
    },
    /** Stores the sealed signing key unless the device has one already. */
    setWebhookKeyOnce(id: number, sealedKey: string) {
      setKey.run(sealedKey, id);
    },
    insertDevice(d: NewPhoneDevice): number {
      return insertDevice.get(d.workspaceId, d.name, d.externalId, d.tokenHash, d.pushToken, d.simCards, d.appVersion, d.at, d.at, d.at)!
        .id;
    },

    /** The live phone of the workspace with this name and SIM list (JSON as stored), if any. */
    returningPhone: (workspaceId: number, name: string, simCardsJson: string): { id: number; externalId: string } | null => {
      const row = returning.get(workspaceId, name, simCardsJson);
      return row ? { id: row.id, externalId: row.external_id } : null;
    },
    /** A returning phone's new token: the old one stops working. */
    reissueToken(id: number, tokenHash: string, pushToken: string | null, appVersion: string | null, at: number) {
      reissue.run(tokenHash, pushToken, appVersion, at, at, id);
    },

    // Messages
    /** Due messages the phone was handed and has not confirmed (at most 100). */
    handedAgain: (deviceId: number, now: number): NotificationRecord[] =>
      handedAgain.all(deviceId).filter((n) => n.next_attempt_at <= now && (n.valid_until === null || n.valid_until > now)),
    /**
     * Due messages never handed to the phone, at most `limit`: the expedited ones (priority
     * `expedited` and above) or the paced rest.
     */
    waitingFor: (deviceId: number, now: number, expedited: number, which: "expedited" | "paced", limit: number): NotificationRecord[] =>
      (which === "expedited" ? waitingExpedited : waitingPaced).all(deviceId, expedited, now, now, limit),
    cancellingFor: (deviceId: number): NotificationRecord[] => cancelling.all(deviceId),
    /** Messages below `expedited` priority handed to the phone since `since`: what its budget has spent. */
    handedSince: (deviceId: number, since: number, expedited: number): number => handedSince.get(deviceId, since, expedited)!.n,
    markHanded(id: number, at: number) {
      markHanded.run(at, at, id);
    },
    /** The phone has it: pending and queued becomes handed. Whether anything changed. */
    markProcessed: (id: number, at: number): boolean => markProcessed.run(at, id).changes > 0,
    /** The phone confirmed a cancellation. Whether anything changed. */
    clearCancelPending: (id: number, at: number): boolean => clearCancel.run(at, id).changes > 0,
    markCancelPending(id: number) {
      markCancelPending.run(id);
    },
    byPhoneId: (phoneId: string, deviceId: number): NotificationRecord | null => byPhoneId.get(phoneId, deviceId),
    /** Phones with scheduled messages that fell due in (after, until]. */
    devicesDueBetween: (after: number, until: number): number[] => becameDue.all(after, until).map((r) => r.device_id),
    /** Every paired phone that is not deleted. */
    livePhones: (): number[] => livePhones.all().map((r) => r.id),

    // Re-homing
    /** Offline phones with messages still waiting on them. */
    offlineWithWaiting: (): number[] => offlineWithWaiting.all().map((r) => r.device_id),
    /** Another usable phone of the workspace heard from since `seenSince`, most recently seen first. */
    onlinePhoneBesides: (workspaceId: number, deviceId: number, seenSince: number): number | null =>
      onlinePhone.get(workspaceId, deviceId, seenSince)?.id ?? null,
    /** Messages on a phone it has not taken up yet (never reported Processed), and whether it downloaded each. */
    waitingOn: (deviceId: number): { id: number; pulled: boolean }[] =>
      waitingOn.all(deviceId).map((r) => ({ id: r.id, pulled: r.dispatched_at !== null })),
    /** Moves one waiting message to another phone under a new phone id; whether it moved. */
    moveTo: (id: number, fromDeviceId: number, toDeviceId: number, phoneId: string, at: number): boolean =>
      moveTo.run(toDeviceId, phoneId, at, id, fromDeviceId).changes > 0,
    /** Messages on a phone whose valid_until, or due time plus `defaultTtl`, is not after `now`. */
    outOfTime: (deviceId: number, defaultTtl: number, now: number): number[] => outOfTime.all(deviceId, defaultTtl, now).map((r) => r.id),

    // Pairing
    workspacesWithPairingToken: () => allPairing.all(),
    workspaceByLogin: (login: string): WorkspaceAuthRow | null => wsByLogin.get(login),
    workspaceById: (id: number): WorkspaceAuthRow | null => wsById.get(id),
    setCredentials(workspaceId: number, login: string, passwordHash: string) {
      setCredentials.run(login, passwordHash, workspaceId);
    },
    setPassword(workspaceId: number, passwordHash: string) {
      setPassword.run(passwordHash, workspaceId);
    },
    insertCode(digest: string, workspaceId: number, expiresAt: number) {
      insertCode.run(digest, workspaceId, expiresAt);
    },
    /** Consumes a code: it works once. */
    takeCode: (digest: string): CodeRow | null => takeCode.get(digest),
    pruneCodes(before: number) {
      pruneCodes.run(before);
    },
    codeExpiry: (digest: string): number | null => peekCode.get(digest)?.expires_at ?? null,

    // Webhooks
    /** Records a webhook event id; false when it was seen before. */
    firstDelivery: (eventId: string, deviceId: number, event: string, at: number): boolean =>
      seenEvent.run(eventId, deviceId, event, at).changes > 0,
  };
}

export type PhoneRepository = ReturnType<typeof createPhoneRepository>;
