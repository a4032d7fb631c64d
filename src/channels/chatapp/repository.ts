// The chat-app channel's queries on its own tables and columns: numbers found by the platform's
// phone-number id, templates by business account, the status backlog (statuses that arrive before
// the send that caused them is recorded) and a number's block, on the storage seam.
import type { template } from "../../modules/templates/schema";
import { jsonField, type Executor, type SqlParam } from "../../db/storage";
import { type NotificationRecord, notificationRows } from "../../modules/notifications/model";

type IdRow = { id: number };
/** A chat-app template belongs to a workspace (only system templates have none). */
type TemplateRef = { id: number; workspaceId: NonNullable<(typeof template.$inferSelect)["workspaceId"]> };
/** A business account linked in a workspace. */
export interface AccountRef {
  workspaceId: number;
  businessAccountId: string;
}

export function createChatappRepository(db: Executor) {
  const ids = async (sql: string, params: (string | number)[]) => (await db.all<IdRow>(sql, params)).map((r) => r.id);
  return {
    /** The live numbers (usually one) the platform's phone-number id names. */
    deviceIdsByPhoneNumberId: (phoneNumberId: string): Promise<number[]> =>
      ids(
        `SELECT id FROM device WHERE kind = 'chatapp' AND deleted_at IS NULL AND ${jsonField(db.dialect, "config", "phoneNumberId")} = ?`,
        [phoneNumberId],
      ),
    templateIdsOfAccount: (workspaceId: number, businessAccountId: string): Promise<number[]> =>
      ids("SELECT id FROM template WHERE workspace_id = ? AND channel = 'chatapp' AND business_account_id = ? AND deleted_at IS NULL", [
        workspaceId,
        businessAccountId,
      ]),
    templateByExternal: (externalId: string, businessAccountId: string): Promise<TemplateRef | null> =>
      db.get<TemplateRef>(
        'SELECT id, workspace_id AS "workspaceId" FROM template WHERE external_id = ? AND business_account_id = ? AND deleted_at IS NULL',
        [externalId, businessAccountId],
      ),
    /** Accounts with a paused template whose re-check is due. */
    accountsDueRecheck: (now: number): Promise<AccountRef[]> =>
      db.all<AccountRef>(
        `SELECT DISTINCT workspace_id AS "workspaceId", business_account_id AS "businessAccountId" FROM template
        WHERE channel = 'chatapp' AND status = 'paused' AND recheck_at <= ? AND deleted_at IS NULL`,
        [now],
      ),
    linkedAccounts: (): Promise<AccountRef[]> =>
      db.all<AccountRef>(
        `SELECT DISTINCT workspace_id AS "workspaceId", ${jsonField(db.dialect, "config", "businessAccountId")} AS "businessAccountId" FROM device
        WHERE kind = 'chatapp' AND deleted_at IS NULL`,
      ),
    notificationByWamid: async (wamid: string, deviceId: number): Promise<NotificationRecord | null> => {
      const row = await db.get<Record<string, unknown>>(
        `SELECT ${notificationRows.columns()} FROM notification WHERE external_id = ? AND device_id = ? AND route = 'chatapp'`,
        [wamid, deviceId],
      );
      return row ? notificationRows.record(row) : null;
    },
    /** A template by its platform name, the active one and en_US first. */
    templateIdByName: async (workspaceId: number, name: string): Promise<number | null> =>
      (
        await db.get<IdRow>(
          `SELECT id FROM template WHERE workspace_id = ? AND channel = 'chatapp' AND name = ? AND deleted_at IS NULL
          ORDER BY CASE WHEN status = 'active' THEN 0 ELSE 1 END, CASE WHEN language = 'en_US' THEN 0 ELSE 1 END, id LIMIT 1`,
          [workspaceId, name],
        )
      )?.id ?? null,
    /** Keeps a status (the platform's object, stored as JSON) until its message is recorded. */
    async backlogAdd(deviceId: number, externalId: string, payload: object, at: number): Promise<void> {
      await db.run("INSERT INTO status_backlog (device_id, external_id, payload, received_at) VALUES (?, ?, ?, ?)", [
        deviceId,
        externalId,
        JSON.stringify(payload),
        at,
      ]);
    },
    /** Removes and returns the statuses kept for a message. */
    backlogTake: async (externalId: string, deviceId: number): Promise<unknown[]> =>
      (
        await db.all<{ payload: string }>("DELETE FROM status_backlog WHERE external_id = ? AND device_id = ? RETURNING payload", [
          externalId,
          deviceId,
        ])
      ).map((r) => JSON.parse(r.payload) as unknown),
    /**
     * The statuses kept for these messages, taken (deleted) at once, each message's in the order
     * they came: one statement on PostgreSQL, one a message on SQLite.
     */
    async backlogTakeMany(
      messages: readonly { externalId: string; deviceId: number }[],
    ): Promise<{ deviceId: number; payload: unknown }[]> {
      const out: { deviceId: number; payload: unknown; receivedAt: number; id: number }[] = [];
      const rows = async (sql: string, params: SqlParam[]) =>
        (await db.all<{ id: number; device_id: number; payload: string; received_at: number }>(sql, params)).map((r) => ({
          id: Number(r.id),
          deviceId: Number(r.device_id),
          payload: JSON.parse(r.payload) as unknown,
          receivedAt: Number(r.received_at),
        }));
      if (db.dialect === "sqlite") {
        for (const m of messages)
          out.push(
            ...(await rows(
              "DELETE FROM status_backlog WHERE external_id = ? AND device_id = ? RETURNING id, device_id, payload, received_at",
              [m.externalId, m.deviceId],
            )),
          );
      } else {
        for (let i = 0; i < messages.length; i += 1000) {
          const part = messages.slice(i, i + 1000);
          out.push(
            ...(await rows(
              `DELETE FROM status_backlog WHERE (external_id, device_id) IN (${part.map(() => "(?::text, ?::bigint)").join(", ")})
               RETURNING id, device_id, payload, received_at`,
              part.flatMap((m) => [m.externalId, m.deviceId]),
            )),
          );
        }
      }
      return out.sort((a, b) => a.receivedAt - b.receivedAt || a.id - b.id);
    },
    /**
     * Messages with statuses kept for them that have been recorded since: a status and its
     * message's outcome can each be read by the other's unit before it commits (on PostgreSQL),
     * and both miss. At most `limit`.
     */
    backlogRecorded: async (limit: number): Promise<{ externalId: string; deviceId: number }[]> =>
      (
        await db.all<{ external_id: string; device_id: number }>(
          `SELECT DISTINCT b.external_id, b.device_id FROM status_backlog b
           JOIN notification n ON n.external_id = b.external_id AND n.device_id = b.device_id AND n.route = 'chatapp'
           LIMIT ?`,
          [limit],
        )
      ).map((r) => ({ externalId: r.external_id, deviceId: Number(r.device_id) })),
    /** Drops statuses kept since before `before`; how many. */
    backlogPrune: async (before: number): Promise<number> =>
      (await db.run("DELETE FROM status_backlog WHERE received_at < ?", [before])).changes,
    async setBlocked(deviceId: number, code: string, reason: string | null, at: number): Promise<void> {
      await db.run("UPDATE device SET blocked_code = ?, blocked_reason = ?, blocked_at = ?, updated_at = ? WHERE id = ?", [
        code,
        reason,
        at,
        at,
        deviceId,
      ]);
    },
    async clearBlocked(deviceId: number, at: number): Promise<void> {
      await db.run("UPDATE device SET blocked_code = NULL, blocked_reason = NULL, blocked_at = NULL, updated_at = ? WHERE id = ?", [
        at,
        deviceId,
      ]);
    },
  };
}

export type ChatappRepository = ReturnType<typeof createChatappRepository>;
