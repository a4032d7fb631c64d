// What retention removes, in small pieces: finished notifications with what hangs off them, received
// MMS attachments' bytes (their messages stay), webhook deliveries and the events behind them, and expired sessions, tokens and codes. Each `remove…`
// takes ids found by the matching `find…`, so a caller decides how much one unit of work holds.
// SQLite's space is given back by its incremental vacuum, through the driver itself.
import type { Database } from "bun:sqlite";
import type { Executor } from "../../db/storage";
import type { DroppedPart, MmsMeta } from "../threads/schema";

/** What the vacuum needs of the SQLite driver: PRAGMAs that no unit of work may wrap. */
export type VacuumHandle = Pick<Database, "run" | "query">;

/** The states a notification ends in; `sent` is not among them (its delivery report may still come). */
export const FINISHED = ["delivered", "failed", "cancelled"] as const;

const inList = (n: number) => Array.from({ length: n }, () => "?").join(", ");
const FINISHED_SQL = FINISHED.map((s) => `'${s}'`).join(", ");

export interface NotificationsRemoved {
  notifications: number;
  notification_logs: number;
  thread_messages: number;
  threads: number;
  smsgate_messages: number;
}

export function createRetentionRepository(db: Executor, sqlite: VacuumHandle | null) {
  const ids = async (sql: string, params: (string | number)[]) => (await db.all<{ id: number | string }>(sql, params)).map((r) => r.id);

  return {
    workspaceIds: async (): Promise<number[]> => (await ids("SELECT id FROM workspace ORDER BY id", [])) as number[],
    subscriptionIds: async (): Promise<number[]> => (await ids("SELECT id FROM webhook_subscription ORDER BY id", [])) as number[],

    /** Up to `limit` finished notifications of a workspace created before `before` (the status index serves it). */
    findFinished: async (workspaceId: number, before: number, limit: number): Promise<number[]> =>
      (await ids(`SELECT id FROM notification WHERE workspace_id = ? AND status IN (${FINISHED_SQL}) AND created_at < ? LIMIT ?`, [
        workspaceId,
        before,
        limit,
      ])) as number[],

    /**
     * Removes these notifications with their logs, thread messages (and threads left empty) and
     * SMSGate-API records; ledger entries stay, no longer pointing at them. Their hourly counts move
     * to notification_pruned_hourly, which the statistics add, so they stay as they were.
     * Run inside a unit of work.
     */
    async removeNotifications(list: number[]): Promise<NotificationsRemoved> {
      const marks = inList(list.length);
      await db.run(
        `INSERT INTO notification_pruned_hourly (workspace_id, status, hour, delivery_type, n)
         SELECT workspace_id, status, created_at / 3600000, delivery_type, count(*) FROM notification
         WHERE id IN (${marks}) GROUP BY 1, 2, 3, 4
         ON CONFLICT (workspace_id, status, hour, delivery_type) DO UPDATE SET n = notification_pruned_hourly.n + excluded.n`,
        list,
      );
      const logs = (await db.run(`DELETE FROM notification_log WHERE notification_id IN (${marks})`, list)).changes;
      await db.run(`DELETE FROM twilio_callback WHERE notification_id IN (${marks})`, list);
      await db.run(`UPDATE credit_ledger SET notification_id = NULL WHERE notification_id IN (${marks})`, list);
      // A send's own message has no attachments today; should one have, they go first, with it.
      await db.run(
        `DELETE FROM thread_attachment WHERE thread_message_id IN (SELECT id FROM thread_message WHERE notification_id IN (${marks}))`,
        list,
      );
      const threadRows = await db.all<{ threadId: number }>(
        `DELETE FROM thread_message WHERE notification_id IN (${marks}) RETURNING thread_id AS "threadId"`,
        list,
      );
      const threads = [...new Set(threadRows.map((r) => r.threadId))];
      const emptied = threads.length
        ? (
            await db.run(
              `DELETE FROM thread WHERE id IN (${inList(threads.length)})
               AND NOT EXISTS (SELECT 1 FROM thread_message m WHERE m.thread_id = thread.id)`,
              threads,
            )
          ).changes
        : 0;
      const recipients = await db.all<{ rowId: number }>(
        `DELETE FROM smsgate_recipient WHERE notification_id IN (${marks}) RETURNING message_row_id AS "rowId"`,
        list,
      );
      const messages = [...new Set(recipients.map((r) => r.rowId))];
      const smsgate = messages.length
        ? (
            await db.run(
              `DELETE FROM smsgate_message WHERE row_id IN (${inList(messages.length)})
               AND NOT EXISTS (SELECT 1 FROM smsgate_recipient r WHERE r.message_row_id = smsgate_message.row_id)`,
              messages,
            )
          ).changes
        : 0;
      await db.run(`DELETE FROM thread_pending WHERE notification_id IN (${marks})`, list);
      // Counted by what the delete returns: SQLite's change count would add the rows its triggers change.
      const notifications = (await db.all(`DELETE FROM notification WHERE id IN (${marks}) RETURNING id`, list)).length;
      return { notifications, notification_logs: logs, thread_messages: threadRows.length, threads: emptied, smsgate_messages: smsgate };
    },

    /** Up to `limit` received MMS attachments of a workspace kept before `before` (its (workspace, created) index serves it). */
    findOldAttachments: async (workspaceId: number, before: number, limit: number): Promise<number[]> =>
      (await ids("SELECT id FROM thread_attachment WHERE workspace_id = ? AND created_at < ? LIMIT ?", [workspaceId, before, limit])).map(
        Number,
      ),

    /**
     * Removes these attachments' bytes; their messages stay, and each names the parts it lost
     * among its dropped parts (reason `retention`). How many went.
     */
    async removeAttachments(list: number[]): Promise<number> {
      const gone = await db.all<DroppedPart & { messageId: number }>(
        `DELETE FROM thread_attachment WHERE id IN (${inList(list.length)})
         RETURNING thread_message_id AS "messageId", part_id AS "partId", content_type AS "contentType", name, size`,
        list,
      );
      const byMessage = new Map<number, DroppedPart[]>();
      for (const { messageId, ...part } of gone) {
        const parts = byMessage.get(Number(messageId)) ?? [];
        parts.push({ ...part, size: part.size === null ? null : Number(part.size), reason: "retention" });
        byMessage.set(Number(messageId), parts);
      }
      for (const [messageId, parts] of byMessage) {
        const raw = (await db.get<{ meta: unknown }>("SELECT meta FROM thread_message WHERE id = ?", [messageId]))?.meta;
        const meta = (typeof raw === "string" ? JSON.parse(raw) : raw) as MmsMeta | null;
        if (!meta) continue;
        meta.dropped = [...(meta.dropped ?? []), ...parts];
        await db.run("UPDATE thread_message SET meta = ? WHERE id = ?", [JSON.stringify(meta), messageId]);
      }
      return gone.length;
    },

    /** Up to `limit` finished (delivered or given up) deliveries of a subscription created before `before`. */
    findFinishedDeliveries: async (subscriptionId: number, before: number, limit: number): Promise<string[]> =>
      (await ids(
        "SELECT id FROM webhook_delivery WHERE subscription_id = ? AND created_at < ? AND status IN ('delivered', 'failed') LIMIT ?",
        [subscriptionId, before, limit],
      )) as string[],

    /** Removes these deliveries and their attempts; how many of each. */
    async removeDeliveries(list: string[]): Promise<{ deliveries: number; attempts: number }> {
      const marks = inList(list.length);
      const attempts = (await db.run(`DELETE FROM webhook_attempt WHERE delivery_id IN (${marks})`, list)).changes;
      const deliveries = (await db.run(`DELETE FROM webhook_delivery WHERE id IN (${marks})`, list)).changes;
      return { deliveries, attempts };
    },

    /** Up to `limit` events of a workspace from before `before` that no delivery is left waiting on. */
    findSpentEvents: async (workspaceId: number, before: number, limit: number): Promise<string[]> =>
      (await ids(
        `SELECT id FROM event WHERE workspace_id = ? AND created_at < ?
         AND NOT EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.event_id = event.id) LIMIT ?`,
        [workspaceId, before, limit],
      )) as string[],

    removeEvents: async (list: string[]): Promise<number> =>
      (await db.run(`DELETE FROM event WHERE id IN (${inList(list.length)})`, list)).changes,

    /**
     * Removes up to `limit` rows of each kind that can no longer be used as of `now`: ended or idle
     * dashboard sessions, used or expired setup links, expired SMSGate-API tokens and sign-in codes,
     * and phone events (kept to ignore a re-delivery) from before `before`.
     */
    async removeExpired(now: number, idleSince: number, before: number, limit: number) {
      const sessions = (
        await db.run(
          `DELETE FROM dashboard_session WHERE id IN (SELECT id FROM dashboard_session
           WHERE ended_at IS NOT NULL OR last_seen_at < ? LIMIT ?)`,
          [idleSince, limit],
        )
      ).changes;
      const setups = (
        await db.run(
          "DELETE FROM dashboard_setup WHERE id IN (SELECT id FROM dashboard_setup WHERE used_at IS NOT NULL OR expires_at < ? LIMIT ?)",
          [now, limit],
        )
      ).changes;
      const tokens = (
        await db.run("DELETE FROM smsgate_token WHERE jti IN (SELECT jti FROM smsgate_token WHERE expires_at < ? LIMIT ?)", [now, limit])
      ).changes;
      const codes = (
        await db.run("DELETE FROM mobile_code WHERE code IN (SELECT code FROM mobile_code WHERE expires_at < ? LIMIT ?)", [now, limit])
      ).changes;
      const phoneEvents = (
        await db.run("DELETE FROM phone_event WHERE id IN (SELECT id FROM phone_event WHERE received_at < ? LIMIT ?)", [before, limit])
      ).changes;
      return { sessions, tokens: setups + tokens + codes, phone_events: phoneEvents };
    },

    /** Removes up to `limit` idempotency keys saved before `before` (past the window in which a retry is answered from them). */
    removeIdempotency: async (before: number, limit: number): Promise<number> =>
      (
        await db.run(
          `DELETE FROM idempotency_record WHERE (workspace_id, key) IN
           (SELECT workspace_id, key FROM idempotency_record WHERE created_at < ? LIMIT ?)`,
          [before, limit],
        )
      ).changes,

    /** What a prune before `before` would remove, counted without removing anything (a dry run). */
    async countBefore(before: number, now: number, idleSince: number, idempotentSince: number) {
      const n = async (sql: string, params: (string | number)[]) => Number((await db.get<{ n: number }>(sql, params))?.n ?? 0);
      const finished = `SELECT id FROM notification WHERE status IN (${FINISHED_SQL}) AND created_at < ?`;
      const spent = "created_at < ? AND status IN ('delivered', 'failed')";
      return {
        notifications: await n(`SELECT count(*) AS n FROM notification WHERE status IN (${FINISHED_SQL}) AND created_at < ?`, [before]),
        notification_logs: await n(`SELECT count(*) AS n FROM notification_log WHERE notification_id IN (${finished})`, [before]),
        thread_messages: await n(`SELECT count(*) AS n FROM thread_message WHERE notification_id IN (${finished})`, [before]),
        attachments: await n("SELECT count(*) AS n FROM thread_attachment WHERE created_at < ?", [before]),
        // Threads whose every message goes with them.
        threads: await n(
          `SELECT count(*) AS n FROM thread t WHERE EXISTS (SELECT 1 FROM thread_message m WHERE m.thread_id = t.id)
           AND NOT EXISTS (SELECT 1 FROM thread_message m WHERE m.thread_id = t.id
             AND (m.notification_id IS NULL OR m.notification_id NOT IN (${finished})))`,
          [before],
        ),
        smsgate_messages: await n(
          `SELECT count(*) AS n FROM smsgate_message g WHERE NOT EXISTS (SELECT 1 FROM smsgate_recipient r
             WHERE r.message_row_id = g.row_id AND r.notification_id NOT IN (${finished}))`,
          [before],
        ),
        webhook_deliveries: await n(`SELECT count(*) AS n FROM webhook_delivery WHERE ${spent}`, [before]),
        webhook_attempts: await n(
          `SELECT count(*) AS n FROM webhook_attempt WHERE delivery_id IN (SELECT id FROM webhook_delivery WHERE ${spent})`,
          [before],
        ),
        events: await n(
          `SELECT count(*) AS n FROM event e WHERE created_at < ? AND NOT EXISTS (SELECT 1 FROM webhook_delivery d
             WHERE d.event_id = e.id AND NOT (d.created_at < ? AND d.status IN ('delivered', 'failed')))`,
          [before, before],
        ),
        sessions: await n("SELECT count(*) AS n FROM dashboard_session WHERE ended_at IS NOT NULL OR last_seen_at < ?", [idleSince]),
        tokens:
          (await n("SELECT count(*) AS n FROM dashboard_setup WHERE used_at IS NOT NULL OR expires_at < ?", [now])) +
          (await n("SELECT count(*) AS n FROM smsgate_token WHERE expires_at < ?", [now])) +
          (await n("SELECT count(*) AS n FROM mobile_code WHERE expires_at < ?", [now])),
        phone_events: await n("SELECT count(*) AS n FROM phone_event WHERE received_at < ?", [before]),
        idempotency_keys: await n("SELECT count(*) AS n FROM idempotency_record WHERE created_at < ?", [idempotentSince]),
      };
    },

    /** SQLite only: whether freed pages can be given back (auto_vacuum = INCREMENTAL), and how many are free. */
    vacuumState(): { incremental: boolean; freePages: number } | null {
      if (!sqlite) return null;
      const mode = (sqlite.query("PRAGMA auto_vacuum").get() as { auto_vacuum: number }).auto_vacuum;
      const free = (sqlite.query("PRAGMA freelist_count").get() as { freelist_count: number }).freelist_count;
      return { incremental: mode === 2, freePages: free };
    },
    /** SQLite only: gives up to `pages` free pages back to the file system. */
    vacuumStep: (pages: number): void => void sqlite?.run(`PRAGMA incremental_vacuum(${Math.max(1, Math.floor(pages))})`),
    /** SQLite only: switches an older database to incremental vacuum (rewrites the whole file: no server may hold it). */
    makeIncremental: (): void => {
      sqlite?.run("PRAGMA auto_vacuum = INCREMENTAL");
      sqlite?.run("VACUUM");
    },
  };
}

export type RetentionRepository = ReturnType<typeof createRetentionRepository>;
