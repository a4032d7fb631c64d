// The email bridge's reads and writes of its settings (email_setting), through the storage seam's executor.
import type { Executor } from "../../db/storage";

export interface EmailSettingRow {
  workspaceId: number;
  content: string;
  defaultCountry: string | null;
  secretHash: string | null;
  secretHint: string | null;
  keyId: number | null;
  keySecret: string | null;
  /** JSON list of allowed senders. */
  senders: string;
  /** JSON list of addresses received messages are forwarded to. */
  forwardTo: string;
  replyDomain: string | null;
  /** 0/1 (a bigint or a number, by back end). */
  dsn: number;
  forwardFailures: number;
}

/** A forward waiting in the outbox (or done with). */
export interface OutboxRow {
  id: number;
  workspaceId: number;
  recipients: string;
  subject: string;
  body: string;
  replyTo: string | null;
  attempts: number;
}

const COLUMNS = `workspace_id AS "workspaceId", content, default_country AS "defaultCountry", secret_hash AS "secretHash",
  secret_hint AS "secretHint", key_id AS "keyId", key_secret AS "keySecret", senders, forward_to AS "forwardTo",
  reply_domain AS "replyDomain", dsn, forward_failures AS "forwardFailures"`;

export const NO_SETTINGS: Omit<EmailSettingRow, "workspaceId"> = {
  content: "body",
  defaultCountry: null,
  secretHash: null,
  secretHint: null,
  keyId: null,
  keySecret: null,
  senders: "[]",
  forwardTo: "[]",
  replyDomain: null,
  dsn: 0,
  forwardFailures: 0,
};

export function createEmailRepository(db: Executor) {
  return {
    get: (workspaceId: number) => db.get<EmailSettingRow>(`SELECT ${COLUMNS} FROM email_setting WHERE workspace_id = ?`, [workspaceId]),
    bySecretHash: (hash: string) => db.get<EmailSettingRow>(`SELECT ${COLUMNS} FROM email_setting WHERE secret_hash = ?`, [hash]),
    /**
     * The lists of senders that may write without signing in: the allowlists of workspaces with a
     * secret address or a Reply-To domain, and the forward addresses of those with a Reply-To domain.
     */
    unsignedSenders: async () =>
      (
        await db.all<{ senders: string; forwardTo: string; replies: number }>(
          `SELECT senders, forward_to AS "forwardTo", CASE WHEN reply_domain IS NULL THEN 0 ELSE 1 END AS replies
           FROM email_setting WHERE secret_hash IS NOT NULL OR reply_domain IS NOT NULL`,
        )
      ).flatMap((r) => (Number(r.replies) === 1 ? [r.senders, r.forwardTo] : [r.senders])),
    async put(row: EmailSettingRow, now: number): Promise<void> {
      await db.run(
        `INSERT INTO email_setting (workspace_id, content, default_country, secret_hash, secret_hint, key_id, key_secret, senders,
           forward_to, reply_domain, dsn, forward_failures, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (workspace_id) DO UPDATE SET content = excluded.content, default_country = excluded.default_country,
           secret_hash = excluded.secret_hash, secret_hint = excluded.secret_hint, key_id = excluded.key_id,
           key_secret = excluded.key_secret, senders = excluded.senders, forward_to = excluded.forward_to,
           reply_domain = excluded.reply_domain, dsn = excluded.dsn, forward_failures = excluded.forward_failures,
           updated_at = excluded.updated_at`,
        [
          row.workspaceId,
          row.content,
          row.defaultCountry,
          row.secretHash,
          row.secretHint,
          row.keyId,
          row.keySecret,
          row.senders,
          row.forwardTo,
          row.replyDomain,
          Number(row.dsn) ? 1 : 0,
          Number(row.forwardFailures) ? 1 : 0,
          now,
        ],
      );
    },

    /** Queues a forward; false when one with the same key is queued already (nothing is queued twice). */
    async enqueue(
      o: { workspaceId: number; dedupeKey: string; recipients: string[]; subject: string; body: string; replyTo: string | null },
      now: number,
    ) {
      const result = await db.run(
        `INSERT INTO email_outbox (workspace_id, dedupe_key, recipients, subject, body, reply_to, next_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING`,
        [o.workspaceId, o.dedupeKey, JSON.stringify(o.recipients), o.subject, o.body, o.replyTo, now, now],
      );
      return result.changes > 0;
    },
    due: (now: number, limit: number) =>
      db.all<OutboxRow>(
        `SELECT id, workspace_id AS "workspaceId", recipients, subject, body, reply_to AS "replyTo", attempts
         FROM email_outbox WHERE status = 'pending' AND next_at <= ? ORDER BY next_at, id LIMIT ?`,
        [now, limit],
      ),
    markSent: (id: number, now: number) =>
      db.run("UPDATE email_outbox SET status = 'sent', sent_at = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?", [now, id]),
    /** A failed attempt: tried again at `nextAt`, or failed for good when `nextAt` is null. */
    markFailed: (id: number, error: string, nextAt: number | null) =>
      nextAt === null
        ? db.run("UPDATE email_outbox SET attempts = attempts + 1, last_error = ?, status = 'failed' WHERE id = ?", [error, id])
        : db.run("UPDATE email_outbox SET attempts = attempts + 1, last_error = ?, next_at = ? WHERE id = ?", [error, nextAt, id]),
    /** Forgets forwards done with (sent or failed) before `before`. */
    prune: async (before: number) =>
      (await db.run("DELETE FROM email_outbox WHERE status <> 'pending' AND created_at < ?", [before])).changes,
    /** Notes which mail a send came from (see the email_origin table). */
    recordOrigin: (o: { notificationId: number; workspaceId: number; mailFrom: string; subject: string }, now: number) =>
      db.run(
        `INSERT INTO email_origin (notification_id, workspace_id, mail_from, subject, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (notification_id) DO NOTHING`,
        [o.notificationId, o.workspaceId, o.mailFrom, o.subject, now],
      ),
    origin: (notificationId: number) =>
      db.get<{ mailFrom: string; subject: string }>('SELECT mail_from AS "mailFrom", subject FROM email_origin WHERE notification_id = ?', [
        notificationId,
      ]),
    pruneOrigins: async (before: number) => (await db.run("DELETE FROM email_origin WHERE created_at < ?", [before])).changes,
    outbox: (workspaceId: number, limit: number) =>
      db.all<{
        id: number;
        recipients: string;
        subject: string;
        status: string;
        attempts: number;
        lastError: string | null;
        createdAt: number;
        sentAt: number | null;
      }>(
        `SELECT id, recipients, subject, status, attempts, last_error AS "lastError", created_at AS "createdAt", sent_at AS "sentAt"
         FROM email_outbox WHERE workspace_id = ? ORDER BY id DESC LIMIT ?`,
        [workspaceId, limit],
      ),
  };
}

export type EmailRepository = ReturnType<typeof createEmailRepository>;
