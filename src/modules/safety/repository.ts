// Safe-sending storage: a workspace's rules (quiet hours, keywords, replies, default routes), the
// numbers it must not text now, the audit of every opt-out and opt-in, and the pending messages an
// opt-out stops, on the storage seam; every query is scoped by workspace.
import type { DeliveryType, DeviceKind } from "../../core/kinds";
import type { OptOutSource } from "./schema";
import type { Executor } from "../../db/storage";

/** The row as stored: JSON lists as text. */
interface SettingsRow {
  quiet_start: string | null;
  quiet_end: string | null;
  opt_out_keywords: string | null;
  opt_in_keywords: string | null;
  help_keywords: string | null;
  opt_out_reply: string | null;
  opt_in_reply: string | null;
  help_reply: string | null;
  default_routes: string | null;
  time_zone: string | null;
  default_country: string | null;
  encrypted_sends: number | boolean | null;
}

/** A workspace's stored rules, as read and written: lists parsed, null where the default applies. */
export interface SettingsValues {
  quietStart: string | null;
  quietEnd: string | null;
  optOutKeywords: string[] | null;
  optInKeywords: string[] | null;
  helpKeywords: string[] | null;
  optOutReply: string | null;
  optInReply: string | null;
  helpReply: string | null;
  defaultRoutes: DeviceKind[] | null;
  timeZone: string | null;
  /** ISO 3166 alpha-2: the country national numbers are read in; null: none. */
  defaultCountry: string | null;
  /** Whether end-to-end encrypted sends are allowed; null: the default (off). */
  encryptedSends: boolean | null;
}

export interface SuppressionRecord {
  phone: string;
  optedOutAt: number;
  source: OptOutSource;
  reason: string | null;
}

export interface OptOutEventRecord {
  id: number;
  phone: string;
  action: "opted_out" | "opted_in";
  source: OptOutSource;
  reason: string | null;
  threadMessageId: number | null;
  channel: DeliveryType | null;
  deviceId: number | null;
  at: number;
}

export interface NewOptOutEvent {
  workspaceId: number;
  phone: string;
  action: OptOutEventRecord["action"];
  source: OptOutSource;
  reason: string | null;
  threadMessageId: number | null;
  channel: DeliveryType | null;
  deviceId: number | null;
  at: number;
}

/** `dispatchedRoutes`: the routes (device kinds) the worker hands over itself (see the notification repository). */
export function createSafetyRepository(db: Executor, dispatchedRoutes: readonly DeviceKind[]) {
  const count = async (sql: string, params: (string | number)[]) => Number((await db.get<{ n: number }>(sql, params))?.n ?? 0);
  const eventColumns = 'id, phone, action, source, reason, thread_message_id AS "threadMessageId", channel, device_id AS "deviceId", at';
  const suppressionColumns = 'phone, opted_out_at AS "optedOutAt", source, reason';
  const list = (json: string | null) => (json === null ? null : JSON.parse(json));
  // Messages to the number that no channel has taken up yet: queued, whether due now, scheduled
  // or waiting to be retried. A phone marks what it downloaded (dispatched_at) while it stays
  // queued, so on routes the worker does not dispatch, a download means the phone holds it; one a
  // channel call or a phone holds is left to finish.
  const routeList = dispatchedRoutes.length > 0 ? dispatchedRoutes.map(() => "?").join(", ") : "NULL";
  const WAITING_TO = `SELECT id FROM notification WHERE workspace_id = ? AND recipient = ? AND status = 'pending' AND stage = 'queued'
      AND (dispatched_at IS NULL OR route IN (${routeList}))`;

  return {
    async settings(workspaceId: number): Promise<SettingsValues | null> {
      const row = await db.get<SettingsRow>(
        `SELECT quiet_start, quiet_end, opt_out_keywords, opt_in_keywords, help_keywords, opt_out_reply, opt_in_reply, help_reply,
          default_routes, time_zone, default_country, encrypted_sends FROM workspace_setting WHERE workspace_id = ?`,
        [workspaceId],
      );
      if (!row) return null;
      return {
        quietStart: row.quiet_start,
        quietEnd: row.quiet_end,
        optOutKeywords: list(row.opt_out_keywords),
        optInKeywords: list(row.opt_in_keywords),
        helpKeywords: list(row.help_keywords),
        optOutReply: row.opt_out_reply,
        optInReply: row.opt_in_reply,
        helpReply: row.help_reply,
        defaultRoutes: list(row.default_routes),
        timeZone: row.time_zone,
        defaultCountry: row.default_country,
        encryptedSends: row.encrypted_sends === null ? null : Boolean(row.encrypted_sends),
      };
    },

    async saveSettings(workspaceId: number, v: SettingsValues, now: number): Promise<void> {
      const json = (list: unknown[] | null) => (list === null ? null : JSON.stringify(list));
      await db.run(
        `INSERT INTO workspace_setting (workspace_id, quiet_start, quiet_end, opt_out_keywords, opt_in_keywords, help_keywords,
          opt_out_reply, opt_in_reply, help_reply, default_routes, time_zone, default_country, encrypted_sends, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (workspace_id) DO UPDATE SET quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end,
          opt_out_keywords = excluded.opt_out_keywords, opt_in_keywords = excluded.opt_in_keywords, help_keywords = excluded.help_keywords,
          opt_out_reply = excluded.opt_out_reply, opt_in_reply = excluded.opt_in_reply, help_reply = excluded.help_reply,
          default_routes = excluded.default_routes, time_zone = excluded.time_zone, default_country = excluded.default_country,
          encrypted_sends = excluded.encrypted_sends, updated_at = excluded.updated_at`,
        [
          workspaceId,
          v.quietStart,
          v.quietEnd,
          json(v.optOutKeywords),
          json(v.optInKeywords),
          json(v.helpKeywords),
          v.optOutReply,
          v.optInReply,
          v.helpReply,
          json(v.defaultRoutes),
          v.timeZone,
          v.defaultCountry,
          v.encryptedSends === null ? null : v.encryptedSends ? 1 : 0,
          now,
        ],
      );
    },

    /** The opt-outs among `phones` (a few hundred at a time). */
    suppressionsAmong: (workspaceId: number, phones: string[]): Promise<SuppressionRecord[]> =>
      db.all<SuppressionRecord>(
        `SELECT ${suppressionColumns} FROM suppression WHERE workspace_id = ? AND phone IN (${phones.map(() => "?").join(", ")})`,
        [workspaceId, ...phones],
      ),
    suppression: (workspaceId: number, phone: string): Promise<SuppressionRecord | null> =>
      db.get<SuppressionRecord>(`SELECT ${suppressionColumns} FROM suppression WHERE workspace_id = ? AND phone = ?`, [workspaceId, phone]),

    /** Every number the workspace suppresses now. */
    /** The workspace's suppressed numbers; at most `limit` of them when it is given. */
    suppressedPhones: async (workspaceId: number, limit?: number): Promise<string[]> =>
      (
        await db.all<{ phone: string }>(
          `SELECT phone FROM suppression WHERE workspace_id = ?${limit === undefined ? "" : " LIMIT ?"}`,
          limit === undefined ? [workspaceId] : [workspaceId, limit],
        )
      ).map((r) => r.phone),

    /** True when the number was not suppressed before. */
    suppress: async (workspaceId: number, phone: string, at: number, source: OptOutSource, reason: string | null): Promise<boolean> =>
      (
        await db.run(
          "INSERT INTO suppression (workspace_id, phone, opted_out_at, source, reason) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
          [workspaceId, phone, at, source, reason],
        )
      ).changes > 0,

    /** True when the number was suppressed before. */
    unsuppress: async (workspaceId: number, phone: string): Promise<boolean> =>
      (await db.run("DELETE FROM suppression WHERE workspace_id = ? AND phone = ?", [workspaceId, phone])).changes > 0,

    async addEvent(e: NewOptOutEvent): Promise<number> {
      const row = await db.get<{ id: number }>(
        `INSERT INTO opt_out_event (workspace_id, phone, action, source, reason, thread_message_id, channel, device_id, at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
        [e.workspaceId, e.phone, e.action, e.source, e.reason, e.threadMessageId, e.channel, e.deviceId, e.at],
      );
      return row!.id;
    },

    /** The audit, newest first, for one number or all. */
    async events(
      workspaceId: number,
      phone: string | null,
      offset: number,
      limit: number,
    ): Promise<{ rows: OptOutEventRecord[]; total: number }> {
      if (phone !== null) {
        return {
          rows: await db.all<OptOutEventRecord>(
            `SELECT ${eventColumns} FROM opt_out_event WHERE workspace_id = ? AND phone = ? ORDER BY id DESC LIMIT ? OFFSET ?`,
            [workspaceId, phone, limit, offset],
          ),
          total: await count("SELECT count(*) AS n FROM opt_out_event WHERE workspace_id = ? AND phone = ?", [workspaceId, phone]),
        };
      }
      return {
        rows: await db.all<OptOutEventRecord>(
          `SELECT ${eventColumns} FROM opt_out_event WHERE workspace_id = ? ORDER BY id DESC LIMIT ? OFFSET ?`,
          [workspaceId, limit, offset],
        ),
        total: await count("SELECT count(*) AS n FROM opt_out_event WHERE workspace_id = ?", [workspaceId]),
      };
    },

    /** The audit entry that suppressed a number (for the message that caused it). */
    lastOptOut: (workspaceId: number, phone: string): Promise<OptOutEventRecord | null> =>
      db.get<OptOutEventRecord>(
        `SELECT ${eventColumns} FROM opt_out_event WHERE workspace_id = ? AND phone = ? AND action = 'opted_out' ORDER BY id DESC LIMIT 1`,
        [workspaceId, phone],
      ),

    /** The numbers suppressed now, most recent first. */
    async active(workspaceId: number, offset: number, limit: number): Promise<{ rows: SuppressionRecord[]; total: number }> {
      return {
        rows: await db.all<SuppressionRecord>(
          `SELECT ${suppressionColumns} FROM suppression WHERE workspace_id = ? ORDER BY opted_out_at DESC, phone LIMIT ? OFFSET ?`,
          [workspaceId, limit, offset],
        ),
        total: await count("SELECT count(*) AS n FROM suppression WHERE workspace_id = ?", [workspaceId]),
      };
    },

    /** Pending messages to the number that no channel holds: an opt-out stops them. */
    waitingTo: async (workspaceId: number, phone: string): Promise<number[]> =>
      (await db.all<{ id: number }>(WAITING_TO, [workspaceId, phone, ...dispatchedRoutes])).map((r) => r.id),
  };
}

export type SafetyRepository = ReturnType<typeof createSafetyRepository>;
