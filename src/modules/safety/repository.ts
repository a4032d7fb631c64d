// Safe-sending storage: a workspace's rules (quiet hours, keywords, replies, default routes), the
// numbers it must not text now, the audit of every opt-out and opt-in, and the pending messages an
// opt-out stops. Statements are prepared once; every query is scoped by workspace.
import type { Database, Statement } from "bun:sqlite";
import type { DeliveryType, DeviceKind } from "../../channels/kinds";
import type { OptOutSource } from "../../db/schema";

export interface SettingsRecord {
  workspace_id: number;
  quiet_start: string | null;
  quiet_end: string | null;
  opt_out_keywords: string | null;
  opt_in_keywords: string | null;
  help_keywords: string | null;
  opt_out_reply: string | null;
  opt_in_reply: string | null;
  help_reply: string | null;
  default_routes: string | null;
  updated_at: number;
}

/** What a settings write stores; a JSON list is passed parsed. */
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
}

export interface SuppressionRecord {
  phone: string;
  opted_out_at: number;
  source: OptOutSource;
  reason: string | null;
}

export interface OptOutEventRecord {
  id: number;
  phone: string;
  action: "opted_out" | "opted_in";
  source: OptOutSource;
  reason: string | null;
  thread_message_id: number | null;
  channel: DeliveryType | null;
  device_id: number | null;
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
export function createSafetyRepository(sqlite: Database, dispatchedRoutes: readonly DeviceKind[]) {
  const settingsOf: Statement<SettingsRecord, [number]> = sqlite.prepare("SELECT * FROM workspace_setting WHERE workspace_id = ?");
  const upsertSettings = sqlite.prepare(`
    INSERT INTO workspace_setting (workspace_id, quiet_start, quiet_end, opt_out_keywords, opt_in_keywords, help_keywords,
      opt_out_reply, opt_in_reply, help_reply, default_routes, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (workspace_id) DO UPDATE SET quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end,
      opt_out_keywords = excluded.opt_out_keywords, opt_in_keywords = excluded.opt_in_keywords, help_keywords = excluded.help_keywords,
      opt_out_reply = excluded.opt_out_reply, opt_in_reply = excluded.opt_in_reply, help_reply = excluded.help_reply,
      default_routes = excluded.default_routes, updated_at = excluded.updated_at`);

  const suppressed: Statement<SuppressionRecord, [number, string]> = sqlite.prepare(
    "SELECT phone, opted_out_at, source, reason FROM suppression WHERE workspace_id = ? AND phone = ?",
  );
  const phonesOf: Statement<{ phone: string }, [number]> = sqlite.prepare("SELECT phone FROM suppression WHERE workspace_id = ?");
  const insertSuppression = sqlite.prepare(
    "INSERT OR IGNORE INTO suppression (workspace_id, phone, opted_out_at, source, reason) VALUES (?, ?, ?, ?, ?)",
  );
  const deleteSuppression = sqlite.prepare("DELETE FROM suppression WHERE workspace_id = ? AND phone = ?");
  const insertEvent: Statement<{ id: number }> = sqlite.prepare(`
    INSERT INTO opt_out_event (workspace_id, phone, action, source, reason, thread_message_id, channel, device_id, at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`);

  const eventColumns = "id, phone, action, source, reason, thread_message_id, channel, device_id, at";
  const eventsAll: Statement<OptOutEventRecord, [number, number, number]> = sqlite.prepare(
    `SELECT ${eventColumns} FROM opt_out_event WHERE workspace_id = ? ORDER BY id DESC LIMIT ? OFFSET ?`,
  );
  const eventsAllCount: Statement<{ n: number }, [number]> = sqlite.prepare(
    "SELECT count(*) AS n FROM opt_out_event WHERE workspace_id = ?",
  );
  const eventsOf: Statement<OptOutEventRecord, [number, string, number, number]> = sqlite.prepare(
    `SELECT ${eventColumns} FROM opt_out_event WHERE workspace_id = ? AND phone = ? ORDER BY id DESC LIMIT ? OFFSET ?`,
  );
  const eventsOfCount: Statement<{ n: number }, [number, string]> = sqlite.prepare(
    "SELECT count(*) AS n FROM opt_out_event WHERE workspace_id = ? AND phone = ?",
  );
  const lastEventOf: Statement<OptOutEventRecord, [number, string]> = sqlite.prepare(
    `SELECT ${eventColumns} FROM opt_out_event WHERE workspace_id = ? AND phone = ? AND action = 'opted_out' ORDER BY id DESC LIMIT 1`,
  );

  const activeAll: Statement<SuppressionRecord, [number, number, number]> = sqlite.prepare(
    "SELECT phone, opted_out_at, source, reason FROM suppression WHERE workspace_id = ? ORDER BY opted_out_at DESC, phone LIMIT ? OFFSET ?",
  );
  const activeCount: Statement<{ n: number }, [number]> = sqlite.prepare("SELECT count(*) AS n FROM suppression WHERE workspace_id = ?");

  // Messages to the number that no channel has taken up yet: queued, whether due now, scheduled
  // or waiting to be retried. A phone marks what it downloaded (dispatched_at) while it stays
  // queued, so on routes the worker does not dispatch, a download means the phone holds it; one a
  // channel call or a phone holds is left to finish.
  const routeList = dispatchedRoutes.length > 0 ? dispatchedRoutes.map(() => "?").join(", ") : "NULL";
  const waitingTo: Statement<{ id: number }, (string | number)[]> = sqlite.prepare(`
    SELECT id FROM notification WHERE workspace_id = ? AND recipient = ? AND status = 'pending' AND stage = 'queued'
      AND (dispatched_at IS NULL OR route IN (${routeList}))`);

  return {
    settings(workspaceId: number): SettingsRecord | null {
      return settingsOf.get(workspaceId) ?? null;
    },

    saveSettings(workspaceId: number, v: SettingsValues, now: number): void {
      const json = (list: unknown[] | null) => (list === null ? null : JSON.stringify(list));
      upsertSettings.run(
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
        now,
      );
    },

    suppression(workspaceId: number, phone: string): SuppressionRecord | null {
      return suppressed.get(workspaceId, phone) ?? null;
    },

    /** Every number the workspace suppresses now. */
    suppressedPhones(workspaceId: number): string[] {
      return phonesOf.all(workspaceId).map((r) => r.phone);
    },

    /** True when the number was not suppressed before. */
    suppress(workspaceId: number, phone: string, at: number, source: OptOutSource, reason: string | null): boolean {
      return insertSuppression.run(workspaceId, phone, at, source, reason).changes > 0;
    },

    /** True when the number was suppressed before. */
    unsuppress(workspaceId: number, phone: string): boolean {
      return deleteSuppression.run(workspaceId, phone).changes > 0;
    },

    addEvent(e: NewOptOutEvent): number {
      return insertEvent.get(e.workspaceId, e.phone, e.action, e.source, e.reason, e.threadMessageId, e.channel, e.deviceId, e.at)!.id;
    },

    /** The audit, newest first, for one number or all. */
    events(workspaceId: number, phone: string | null, offset: number, limit: number): { rows: OptOutEventRecord[]; total: number } {
      if (phone !== null) return { rows: eventsOf.all(workspaceId, phone, limit, offset), total: eventsOfCount.get(workspaceId, phone)!.n };
      return { rows: eventsAll.all(workspaceId, limit, offset), total: eventsAllCount.get(workspaceId)!.n };
    },

    /** The audit entry that suppressed a number (for the message that caused it). */
    lastOptOut(workspaceId: number, phone: string): OptOutEventRecord | null {
      return lastEventOf.get(workspaceId, phone) ?? null;
    },

    /** The numbers suppressed now, most recent first. */
    active(workspaceId: number, offset: number, limit: number): { rows: SuppressionRecord[]; total: number } {
      return { rows: activeAll.all(workspaceId, limit, offset), total: activeCount.get(workspaceId)!.n };
    },

    /** Pending messages to the number that no channel holds: an opt-out stops them. */
    waitingTo(workspaceId: number, phone: string): number[] {
      return waitingTo.all(workspaceId, phone, ...dispatchedRoutes).map((r) => r.id);
    },
  };
}

export type SafetyRepository = ReturnType<typeof createSafetyRepository>;
