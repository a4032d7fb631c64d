// Every statement of the SMSGate-compatible API: its message ids and their recipients' notifications,
// and the tokens POST /auth/token issues. Rows of one workspace only, as everywhere.
import { jsonField, type Dialect, type Executor, type SqlParam } from "../../db/storage";

/** One recipient of an SMSGate message with what its notification has reached. */
export interface RecipientRow {
  position: number;
  phoneNumber: string;
  notificationId: number;
  status: "awaiting_approval" | "pending" | "sent" | "delivered" | "failed" | "cancelled";
  stage: "queued" | "dispatching" | "handed" | "done";
  errorReason: string | null;
  createdAt: number;
  dispatchedAt: number | null;
  sentAt: number | null;
  deliveredAt: number | null;
  failedAt: number | null;
  cancelledAt: number | null;
  /** 1 while a cancel asked of the phone holding it waits for its answer. */
  cancelPending: number;
}

export interface SmsGateMessageRow {
  rowId: number;
  id: string;
  deviceId: number | null;
  isEncrypted: boolean;
  createdAt: number;
}

export interface TokenRow {
  jti: string;
  workspaceId: number;
  apiKeyId: number;
  kind: "access" | "refresh";
  accessJti: string;
  scopes: string[];
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
  usedAt: number | null;
}

/** A webhook registered through the SMSGate API (a row of webhook_subscription in its format). */
export interface SmsGateWebhookRow {
  subscriptionId: number;
  externalId: string;
  url: string;
  event: string;
  deviceId: number | null;
}

export interface MessageFilter {
  from?: number;
  to?: number;
  deviceId?: number;
  /** The message's combined state (service.ts messageStateOf), computed in SQL. */
  state?: string;
}

/**
 * A message's state from its recipients' notifications, in SQL, as messageStateOf computes it:
 * the least advanced of the recipients still going or done well (queued = Pending, with the phone
 * = Processed, Sent, Delivered); when none is, Failed if any failed, else Cancelled.
 */
const MESSAGE_STATE_SQL = `(
  SELECT CASE
           WHEN min(p.rank) = 0 THEN 'Pending'
           WHEN max(p.cancelling) = 1 THEN 'Cancelling'
           WHEN min(p.rank) IS NOT NULL THEN CASE min(p.rank) WHEN 1 THEN 'Processed' WHEN 2 THEN 'Sent' ELSE 'Delivered' END
           WHEN max(p.failed) = 1 THEN 'Failed'
           ELSE 'Cancelled'
         END
    FROM (SELECT CASE
                   WHEN n.status = 'pending' AND n.cancel_pending = 1 THEN NULL
                   WHEN n.status = 'awaiting_approval' THEN 0
                   WHEN n.status = 'pending' AND n.stage = 'queued' THEN 0
                   WHEN n.status = 'pending' THEN 1
                   WHEN n.status = 'sent' THEN 2
                   WHEN n.status = 'delivered' THEN 3
                 END AS rank,
                 CASE WHEN n.status = 'failed' THEN 1 ELSE 0 END AS failed,
                 CASE WHEN n.status = 'pending' AND n.cancel_pending = 1 THEN 1 ELSE 0 END AS cancelling
            FROM smsgate_recipient r JOIN notification n ON n.id = r.notification_id
           WHERE r.message_row_id = smsgate_message.row_id) p
)`;

/** SMSGate's kinds of received message; Pigeon's threads hold SMS and MMS (headers, then content). */
export type IncomingType = "SMS" | "DATA_SMS" | "MMS" | "MMS_DOWNLOADED";

export interface IncomingFilter {
  from?: number;
  to?: number;
  deviceId?: number;
  type?: IncomingType;
}

/** A received SMS or MMS as its thread holds it. */
export interface IncomingRow {
  id: number;
  sender: string;
  body: string;
  at: number;
  type: IncomingType;
}

/**
 * The SMSGate kind of an inbound thread message: an MMS whose content was downloaded (its meta has
 * a download id) is MMS_DOWNLOADED, one with only its headers MMS, a data SMS DATA_SMS, anything
 * else SMS.
 */
const incomingTypeSql = (dialect: Dialect) => {
  const field = (key: string) => jsonField(dialect, "tm.meta", key);
  return `CASE
  WHEN ${field("type")} = 'mms' AND ${field("downloadId")} IS NOT NULL THEN 'MMS_DOWNLOADED'
  WHEN ${field("type")} = 'mms' THEN 'MMS'
  WHEN ${field("type")} = 'data' THEN 'DATA_SMS'
  ELSE 'SMS'
END`;
};

const MESSAGE_COLUMNS = 'row_id AS "rowId", id, device_id AS "deviceId", is_encrypted AS "isEncrypted", created_at AS "createdAt"';
const asMessage = (r: SmsGateMessageRow) => ({ ...r, isEncrypted: Boolean(r.isEncrypted) });
const WEBHOOK_COLUMNS = 'id AS "subscriptionId", external_id AS "externalId", url, smsgate_event AS event, smsgate_device_id AS "deviceId"';
const RECIPIENTS = `SELECT r.position, r.phone_number AS "phoneNumber", r.notification_id AS "notificationId", n.status, n.stage,
    n.error_reason AS "errorReason", n.created_at AS "createdAt", n.dispatched_at AS "dispatchedAt", n.sent_at AS "sentAt",
    n.delivered_at AS "deliveredAt", n.failed_at AS "failedAt", n.cancelled_at AS "cancelledAt",
    CASE WHEN n.cancel_pending = 1 THEN 1 ELSE 0 END AS "cancelPending"
  FROM smsgate_recipient r JOIN notification n ON n.id = r.notification_id
  WHERE r.message_row_id = ? ORDER BY r.position`;
const TOKEN = `SELECT jti, workspace_id AS "workspaceId", api_key_id AS "apiKeyId", kind, access_jti AS "accessJti", scopes,
    created_at AS "createdAt", expires_at AS "expiresAt", revoked_at AS "revokedAt", used_at AS "usedAt"
  FROM smsgate_token WHERE jti = ?`;

export function createSmsGateRepository(db: Executor) {
  const INCOMING_TYPE_SQL = incomingTypeSql(db.dialect);
  const count = async (sql: string, params: SqlParam[]) => Number((await db.get<{ n: number }>(sql, params))?.n ?? 0);

  function where(workspaceId: number, f: MessageFilter): { sql: string; args: (number | string)[] } {
    const parts = ["workspace_id = ?"];
    const args: (number | string)[] = [workspaceId];
    const and = (clause: string, value: number | string) => {
      parts.push(clause);
      args.push(value);
    };
    if (f.from !== undefined) and("created_at >= ?", f.from);
    if (f.to !== undefined) and("created_at < ?", f.to);
    if (f.deviceId !== undefined) and("device_id = ?", f.deviceId);
    if (f.state !== undefined) and(`${MESSAGE_STATE_SQL} = ?`, f.state);
    return { sql: parts.join(" AND "), args };
  }

  return {
    webhooks: (workspaceId: number): Promise<SmsGateWebhookRow[]> =>
      db.all<SmsGateWebhookRow>(
        `SELECT ${WEBHOOK_COLUMNS} FROM webhook_subscription WHERE workspace_id = ? AND format = 'smsgate' AND deleted_at IS NULL ORDER BY id`,
        [workspaceId],
      ),
    webhook: (workspaceId: number, externalId: string): Promise<SmsGateWebhookRow | null> =>
      db.get<SmsGateWebhookRow>(
        `SELECT ${WEBHOOK_COLUMNS} FROM webhook_subscription WHERE workspace_id = ? AND format = 'smsgate' AND external_id = ? AND deleted_at IS NULL`,
        [workspaceId, externalId],
      ),

    async renameWebhook(subscriptionId: number, externalId: string): Promise<void> {
      await db.run("UPDATE webhook_subscription SET external_id = ? WHERE id = ?", [externalId, subscriptionId]);
    },

    /** The SMSGate id of the message a notification carries, if it was sent through that API. */
    messageIdOf: async (notificationId: number): Promise<string | null> =>
      (
        await db.get<{ id: string }>(
          "SELECT m.id FROM smsgate_recipient r JOIN smsgate_message m ON m.row_id = r.message_row_id WHERE r.notification_id = ?",
          [notificationId],
        )
      )?.id ?? null,

    /** The workspace's sealed signing key, or null before one was made or set. */
    signingKey: async (workspaceId: number): Promise<string | null> =>
      (
        await db.get<{ signingKey: string }>('SELECT signing_key AS "signingKey" FROM smsgate_setting WHERE workspace_id = ?', [
          workspaceId,
        ])
      )?.signingKey ?? null,
    async setSigningKey(workspaceId: number, sealed: string, now: number): Promise<void> {
      await db.run(
        `INSERT INTO smsgate_setting (workspace_id, signing_key, updated_at) VALUES (?, ?, ?)
        ON CONFLICT (workspace_id) DO UPDATE SET signing_key = excluded.signing_key, updated_at = excluded.updated_at`,
        [workspaceId, sealed, now],
      );
    },

    async message(workspaceId: number, id: string): Promise<SmsGateMessageRow | null> {
      const row = await db.get<SmsGateMessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM smsgate_message WHERE workspace_id = ? AND id = ?`, [
        workspaceId,
        id,
      ]);
      return row ? asMessage(row) : null;
    },

    /** Records a message and its recipients' notifications; runs inside the send's unit of work. */
    async insert(
      workspaceId: number,
      m: { id: string; deviceId: number | null; isEncrypted: boolean; createdAt: number },
      items: { phoneNumber: string; notificationId: number }[],
    ): Promise<number> {
      const { rowId } = (await db.get<{ rowId: number }>(
        'INSERT INTO smsgate_message (workspace_id, id, device_id, is_encrypted, created_at) VALUES (?, ?, ?, ?, ?) RETURNING row_id AS "rowId"',
        [workspaceId, m.id, m.deviceId, m.isEncrypted ? 1 : 0, m.createdAt],
      ))!;
      for (const [i, item] of items.entries()) {
        await db.run("INSERT INTO smsgate_recipient (message_row_id, position, phone_number, notification_id) VALUES (?, ?, ?, ?)", [
          rowId,
          i,
          item.phoneNumber,
          item.notificationId,
        ]);
      }
      return rowId;
    },

    recipients: (rowId: number): Promise<RecipientRow[]> => db.all<RecipientRow>(RECIPIENTS, [rowId]),

    /** A page of messages newest (or oldest) first, with the count of all that match; the state filter included. */
    async list(
      workspaceId: number,
      f: MessageFilter,
      order: "asc" | "desc",
      offset: number,
      limit: number,
    ): Promise<{ rows: SmsGateMessageRow[]; total: number }> {
      const w = where(workspaceId, f);
      const dir = order === "asc" ? "ASC" : "DESC";
      const rows = await db.all<SmsGateMessageRow>(
        `SELECT ${MESSAGE_COLUMNS} FROM smsgate_message WHERE ${w.sql} ORDER BY created_at ${dir}, row_id ${dir} LIMIT ? OFFSET ?`,
        [...w.args, limit, offset],
      );
      return { rows: rows.map(asMessage), total: await count(`SELECT count(*) AS n FROM smsgate_message WHERE ${w.sql}`, w.args) };
    },

    /** A page of the SMS and MMS the workspace's phones received (inbound SMS thread messages), newest first. */
    async incoming(workspaceId: number, f: IncomingFilter, offset: number, limit: number): Promise<{ rows: IncomingRow[]; total: number }> {
      const parts = ["t.workspace_id = ?", "t.channel = 'sms'", "tm.direction = 'inbound'"];
      const args: (number | string)[] = [workspaceId];
      const and = (clause: string, value: number | string) => {
        parts.push(clause);
        args.push(value);
      };
      if (f.from !== undefined) and("tm.at >= ?", f.from);
      if (f.to !== undefined) and("tm.at < ?", f.to);
      if (f.deviceId !== undefined) and("tm.device_id = ?", f.deviceId);
      if (f.type !== undefined) and(`${INCOMING_TYPE_SQL} = ?`, f.type);
      const from = `FROM thread_message tm JOIN thread t ON t.id = tm.thread_id WHERE ${parts.join(" AND ")}`;
      const rows = await db.all<IncomingRow>(
        // A data SMS's text is empty: its preview is its payload.
        `SELECT tm.id, t.peer AS sender, coalesce(${jsonField(db.dialect, "tm.meta", "data")}, tm.body) AS body, tm.at, ${INCOMING_TYPE_SQL} AS type
        ${from} ORDER BY tm.at DESC, tm.id DESC LIMIT ? OFFSET ?`,
        [...args, limit, offset],
      );
      return { rows, total: await count(`SELECT count(*) AS n ${from}`, args) };
    },

    async token(jti: string): Promise<TokenRow | null> {
      const row = await db.get<TokenRow & { scopes: string }>(TOKEN, [jti]);
      return row ? { ...row, scopes: JSON.parse(row.scopes) as string[] } : null;
    },

    async insertToken(t: Omit<TokenRow, "revokedAt" | "usedAt">): Promise<void> {
      await db.run(
        "INSERT INTO smsgate_token (jti, workspace_id, api_key_id, kind, access_jti, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [t.jti, t.workspaceId, t.apiKeyId, t.kind, t.accessJti, JSON.stringify(t.scopes), t.createdAt, t.expiresAt],
      );
    },

    /** Marks a refresh token used; false when it already was (a replay). */
    useRefresh: async (jti: string, now: number): Promise<boolean> =>
      (await db.run("UPDATE smsgate_token SET used_at = ? WHERE jti = ? AND used_at IS NULL", [now, jti])).changes === 1,

    /** Revokes an access token of the workspace and its refresh tokens; false when there is none. */
    async revoke(workspaceId: number, accessJti: string, now: number): Promise<boolean> {
      const found = await db.get("SELECT 1 AS one FROM smsgate_token WHERE jti = ? AND workspace_id = ? AND kind = 'access'", [
        accessJti,
        workspaceId,
      ]);
      if (!found) return false;
      await db.run("UPDATE smsgate_token SET revoked_at = coalesce(revoked_at, ?) WHERE access_jti = ? AND workspace_id = ?", [
        now,
        accessJti,
        workspaceId,
      ]);
      return true;
    },
  };
}

export type SmsGateRepository = ReturnType<typeof createSmsGateRepository>;
