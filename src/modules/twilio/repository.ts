// The twilio_account queries, and the reads the Twilio-compatible Messages API makes of the
// notifications it sent: one by id, and a page of them newest first with Twilio's filters.
import type { Executor, SqlParam } from "../../db/storage";

export interface TwilioAccountRow {
  workspaceId: number;
  accountSid: string;
  /** Sealed. */
  authToken: string;
  apiKeyId: number;
  createdAt: number;
  updatedAt: number;
}

/** A notification as the Messages API shows it, with the number it went out from when known. */
export interface MessageRow {
  id: number;
  recipient: string;
  message: string;
  status: "pending" | "sent" | "delivered" | "failed" | "cancelled";
  stage: string;
  scheduleAt: number | null;
  segments: number;
  errorCode: string | null;
  errorReason: string | null;
  createdAt: number;
  updatedAt: number;
  sentAt: number | null;
  fromNumber: string | null;
}

const ACCOUNT = `workspace_id AS "workspaceId", account_sid AS "accountSid", auth_token AS "authToken", api_key_id AS "apiKeyId",
  created_at AS "createdAt", updated_at AS "updatedAt"`;
const account = (r: TwilioAccountRow | null): TwilioAccountRow | null =>
  r && {
    ...r,
    workspaceId: Number(r.workspaceId),
    apiKeyId: Number(r.apiKeyId),
    createdAt: Number(r.createdAt),
    updatedAt: Number(r.updatedAt),
  };

const MESSAGE = `n.id, n.recipient, n.message, n.status, n.stage, n.schedule_at AS "scheduleAt", n.segments, n.error_code AS "errorCode",
  n.error_reason AS "errorReason", n.created_at AS "createdAt", n.updated_at AS "updatedAt", n.sent_at AS "sentAt",
  d.phone_number AS "fromNumber"`;
const message = (r: MessageRow): MessageRow => ({
  ...r,
  id: Number(r.id),
  scheduleAt: r.scheduleAt === null ? null : Number(r.scheduleAt),
  segments: Number(r.segments),
  createdAt: Number(r.createdAt),
  updatedAt: Number(r.updatedAt),
  sentAt: r.sentAt === null ? null : Number(r.sentAt),
});

export interface MessageFilters {
  to?: string;
  from?: string;
  /** sent_at within [sentFrom, sentTo). */
  sentFrom?: number;
  sentTo?: number;
  /** Only ids below this one (the page token: the last id of the page before). */
  before?: number;
}

export function createTwilioRepository(db: Executor) {
  return {
    account: async (workspaceId: number) =>
      account(await db.get<TwilioAccountRow>(`SELECT ${ACCOUNT} FROM twilio_account WHERE workspace_id = ?`, [workspaceId])),
    bySid: async (sid: string) =>
      account(await db.get<TwilioAccountRow>(`SELECT ${ACCOUNT} FROM twilio_account WHERE account_sid = ?`, [sid])),
    async insert(row: TwilioAccountRow): Promise<void> {
      await db.run(
        "INSERT INTO twilio_account (workspace_id, account_sid, auth_token, api_key_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        [row.workspaceId, row.accountSid, row.authToken, row.apiKeyId, row.createdAt, row.updatedAt],
      );
    },
    setToken: async (workspaceId: number, sealed: string, now: number) =>
      void (await db.run("UPDATE twilio_account SET auth_token = ?, updated_at = ? WHERE workspace_id = ?", [sealed, now, workspaceId])),

    async message(workspaceId: number, id: number): Promise<MessageRow | null> {
      const row = await db.get<MessageRow>(
        `SELECT ${MESSAGE} FROM notification n LEFT JOIN device d ON d.id = n.device_id WHERE n.workspace_id = ? AND n.id = ?`,
        [workspaceId, id],
      );
      return row ? message(row) : null;
    },
    /** Newest first, at most `limit`. */
    async messages(workspaceId: number, f: MessageFilters, limit: number): Promise<MessageRow[]> {
      const where = ["n.workspace_id = ?"];
      const args: SqlParam[] = [workspaceId];
      const and = (clause: string, value: SqlParam) => {
        where.push(clause);
        args.push(value);
      };
      if (f.to !== undefined) and("n.recipient = ?", f.to);
      if (f.from !== undefined) and("d.phone_number = ?", f.from);
      if (f.sentFrom !== undefined) and("n.sent_at >= ?", f.sentFrom);
      if (f.sentTo !== undefined) and("n.sent_at < ?", f.sentTo);
      if (f.before !== undefined) and("n.id < ?", f.before);
      const rows = await db.all<MessageRow>(
        `SELECT ${MESSAGE} FROM notification n LEFT JOIN device d ON d.id = n.device_id WHERE ${where.join(" AND ")} ORDER BY n.id DESC LIMIT ?`,
        [...args, limit],
      );
      return rows.map(message);
    },
  };
}

export type TwilioRepository = ReturnType<typeof createTwilioRepository>;
