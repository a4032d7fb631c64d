// What the workspace holds about one phone number, found and removed: its contact, the messages to
// it, its threads, its opt-out history, the webhook events (with their deliveries) that carried it,
// the stored replies and platform statuses that name it. Tables without an index on the number
// are read in bounded pages (`after` is the last key of the previous page), so no single query
// reads a whole table; the caller turns the event loop between pages.
import type { Executor } from "../../db/storage";

const inList = (n: number) => Array.from({ length: n }, () => "?").join(", ");

/** A page of keys, and which of them hold the number. */
export interface Page<K> {
  keys: K[];
  hits: K[];
}

export function createPrivacyRepository(db: Executor) {
  return {
    contacts: (workspaceId: number, phone: string) =>
      db.all<Record<string, unknown>>(
        `SELECT id, name, phone, email, timezone, created_at AS "createdAt", updated_at AS "updatedAt" FROM contact
         WHERE workspace_id = ? AND phone = ?`,
        [workspaceId, phone],
      ),
    /**
     * The number's traces in routing: the pool member it sticks to and the inbound rules' replies
     * to it go; a member's distinct recipients this month keep it under `digest`, so a cap still
     * counts it. The count of rows touched.
     */
    /** A number's one-time-code verifications and their sends. */
    async removeVerifications(workspaceId: number, phone: string): Promise<number> {
      await db.run(
        "DELETE FROM verification_send WHERE recipient = ? AND service_id IN (SELECT id FROM verify_service WHERE workspace_id = ?)",
        [phone, workspaceId],
      );
      return (await db.run("DELETE FROM verification WHERE workspace_id = ? AND recipient = ?", [workspaceId, phone])).changes;
    },
    /** Twilio-style posts (status callbacks, incoming messages) still waiting to be made about the number. */
    removeTwilioPosts: async (workspaceId: number, phone: string): Promise<number> =>
      (await db.run("DELETE FROM twilio_post WHERE workspace_id = ? AND peer = ?", [workspaceId, phone])).changes,
    async removeRoutingTraces(workspaceId: number, phone: string, digest: string): Promise<number> {
      const pools = "SELECT id FROM pool WHERE workspace_id = ?";
      const members = `SELECT m.id FROM pool_member m JOIN pool p ON p.id = m.pool_id WHERE p.workspace_id = ?`;
      const sticky = (await db.run(`DELETE FROM pool_sticky WHERE recipient = ? AND pool_id IN (${pools})`, [phone, workspaceId])).changes;
      const counted = (
        await db.run(`UPDATE pool_recipient SET recipient = ? WHERE recipient = ? AND member_id IN (${members})`, [
          digest,
          phone,
          workspaceId,
        ])
      ).changes;
      const replies = (await db.run("DELETE FROM rule_reply WHERE workspace_id = ? AND sender = ?", [workspaceId, phone])).changes;
      return sticky + counted + replies;
    },
    removeContacts: async (workspaceId: number, phone: string): Promise<number> =>
      (await db.run("DELETE FROM contact WHERE workspace_id = ? AND phone = ?", [workspaceId, phone])).changes,

    maxNotificationId: async (): Promise<number> =>
      Number((await db.get<{ n: number | null }>("SELECT max(id) AS n FROM notification"))?.n ?? 0),
    /** The workspace's notifications to `forms` of the number with ids in (after, upTo]: a primary-key range, bounded. */
    notificationsIn: async (workspaceId: number, forms: string[], after: number, upTo: number): Promise<{ id: number; stage: string }[]> =>
      db.all<{ id: number; stage: string }>(
        `SELECT id, stage FROM notification WHERE id > ? AND id <= ? AND workspace_id = ? AND recipient IN (${inList(forms.length)})`,
        [after, upTo, workspaceId, ...forms],
      ),

    threads: (workspaceId: number, forms: string[]) =>
      db.all<{ id: number; channel: string; peer: string; peerName: string | null; createdAt: number }>(
        `SELECT id, channel, peer, peer_name AS "peerName", created_at AS "createdAt" FROM thread
         WHERE workspace_id = ? AND peer IN (${inList(forms.length)}) ORDER BY id`,
        [workspaceId, ...forms],
      ),
    threadMessages: (threadId: number) =>
      db.all<Record<string, unknown>>(
        `SELECT id, direction, body, notification_id AS "notificationId", external_id AS "externalId", meta, at FROM thread_message
         WHERE thread_id = ? ORDER BY at, id`,
        [threadId],
      ),
    /** A thread's kept MMS attachments with their bytes, in base64, for the export. */
    async threadAttachments(threadId: number) {
      const rows = await db.all<{
        id: number;
        messageId: number;
        partId: number | null;
        contentType: string;
        name: string | null;
        size: number;
        data: Uint8Array;
      }>(
        `SELECT a.id, a.thread_message_id AS "messageId", a.part_id AS "partId", a.content_type AS "contentType", a.name, a.size, a.data
         FROM thread_attachment a JOIN thread_message m ON m.id = a.thread_message_id WHERE m.thread_id = ? ORDER BY a.id`,
        [threadId],
      );
      return rows.map(({ data, ...a }) => ({
        ...a,
        messageId: Number(a.messageId),
        size: Number(a.size),
        dataBase64: Buffer.from(data).toString("base64"),
      }));
    },
    /** Removes threads and all their messages (inbound ones too), their attachments first; how many of each. */
    async removeThreads(ids: number[]): Promise<{ threads: number; thread_messages: number; attachments: number }> {
      if (ids.length === 0) return { threads: 0, thread_messages: 0, attachments: 0 };
      const marks = inList(ids.length);
      const attachments = (
        await db.run(
          `DELETE FROM thread_attachment WHERE thread_message_id IN (SELECT id FROM thread_message WHERE thread_id IN (${marks}))`,
          ids,
        )
      ).changes;
      const messages = (await db.run(`DELETE FROM thread_message WHERE thread_id IN (${marks})`, ids)).changes;
      const threads = (await db.run(`DELETE FROM thread WHERE id IN (${marks})`, ids)).changes;
      return { threads, thread_messages: messages, attachments };
    },

    optOutEvents: (workspaceId: number, phone: string) =>
      db.all<Record<string, unknown>>(
        `SELECT id, action, source, reason, channel, device_id AS "deviceId", at FROM opt_out_event
         WHERE workspace_id = ? AND phone = ? ORDER BY id`,
        [workspaceId, phone],
      ),
    /**
     * Puts `digest` in the number's place: its suppression (if any) and the opt-out that made it
     * stay, without reason or message; the rest of its opt-out history goes. How many history rows went.
     */
    async pseudonymiseOptOuts(workspaceId: number, phone: string, digest: string): Promise<number> {
      const kept = await db.get<{ id: number }>(
        `SELECT e.id FROM opt_out_event e JOIN suppression s ON s.workspace_id = e.workspace_id AND s.phone = e.phone
         WHERE e.workspace_id = ? AND e.phone = ? AND e.action = 'opted_out' ORDER BY e.id DESC LIMIT 1`,
        [workspaceId, phone],
      );
      const removed = (
        await db.run("DELETE FROM opt_out_event WHERE workspace_id = ? AND phone = ? AND id <> ?", [workspaceId, phone, kept?.id ?? -1])
      ).changes;
      if (kept) {
        await db.run("UPDATE opt_out_event SET phone = ?, reason = NULL, thread_message_id = NULL WHERE id = ?", [digest, kept.id]);
        await db.run("DELETE FROM suppression WHERE workspace_id = ? AND phone = ?", [workspaceId, digest]);
        await db.run("UPDATE suppression SET phone = ?, reason = NULL WHERE workspace_id = ? AND phone = ?", [digest, workspaceId, phone]);
      }
      return removed;
    },

    /** A page of the workspace's events in (created_at, id) order, with those whose data holds `needle`. */
    eventsPage: async (
      workspaceId: number,
      needle: string,
      after: { at: number; id: string } | null,
      limit: number,
    ): Promise<Page<{ at: number; id: string }> & { rows: Record<string, unknown>[] }> => {
      const rows = await db.all<{ id: string; at: number; hit: number | boolean; type: string; data: unknown }>(
        `SELECT id, created_at AS "at", CASE WHEN CAST(data AS TEXT) LIKE ? THEN 1 ELSE 0 END AS "hit",
           CASE WHEN CAST(data AS TEXT) LIKE ? THEN type END AS "type", CASE WHEN CAST(data AS TEXT) LIKE ? THEN data END AS "data"
         FROM event WHERE workspace_id = ?${after ? " AND (created_at > ? OR (created_at = ? AND id > ?))" : ""}
         ORDER BY created_at, id LIMIT ?`,
        [needle, needle, needle, workspaceId, ...(after ? [after.at, after.at, after.id] : []), limit],
      );
      const hits = rows.filter((r) => Number(r.hit) === 1);
      return {
        keys: rows.map((r) => ({ at: Number(r.at), id: r.id })),
        hits: hits.map((r) => ({ at: Number(r.at), id: r.id })),
        rows: hits.map((r) => ({
          id: r.id,
          type: r.type,
          data: typeof r.data === "string" ? JSON.parse(r.data) : r.data,
          at: Number(r.at),
        })),
      };
    },
    deliveriesOf: (eventIds: string[]) =>
      eventIds.length === 0
        ? Promise.resolve([])
        : db.all<Record<string, unknown>>(
            `SELECT d.id, d.event_id AS "eventId", d.subscription_id AS "subscriptionId", s.url, d.status, d.attempts,
               d.last_status_code AS "lastStatusCode", d.created_at AS "createdAt", d.delivered_at AS "deliveredAt"
             FROM webhook_delivery d JOIN webhook_subscription s ON s.id = d.subscription_id
             WHERE d.event_id IN (${inList(eventIds.length)}) ORDER BY d.created_at, d.id`,
            eventIds,
          ),
    /** Removes events with their deliveries and attempts; how many of each. */
    async removeEvents(eventIds: string[]): Promise<{ events: number; webhook_deliveries: number; webhook_attempts: number }> {
      if (eventIds.length === 0) return { events: 0, webhook_deliveries: 0, webhook_attempts: 0 };
      const marks = inList(eventIds.length);
      const attempts = (
        await db.run(
          `DELETE FROM webhook_attempt WHERE delivery_id IN (SELECT id FROM webhook_delivery WHERE event_id IN (${marks}))`,
          eventIds,
        )
      ).changes;
      const deliveries = (await db.run(`DELETE FROM webhook_delivery WHERE event_id IN (${marks})`, eventIds)).changes;
      const events = (await db.run(`DELETE FROM event WHERE id IN (${marks})`, eventIds)).changes;
      return { events, webhook_deliveries: deliveries, webhook_attempts: attempts };
    },

    /** A page of the workspace's stored replies (idempotency keys) in key order, with those that hold `needle`. */
    idempotencyPage: async (workspaceId: number, needle: string, after: string | null, limit: number): Promise<Page<string>> => {
      const rows = await db.all<{ key: string; hit: number | boolean }>(
        `SELECT key, CASE WHEN response_body LIKE ? THEN 1 ELSE 0 END AS "hit" FROM idempotency_record
         WHERE workspace_id = ?${after === null ? "" : " AND key > ?"} ORDER BY key LIMIT ?`,
        [needle, workspaceId, ...(after === null ? [] : [after]), limit],
      );
      return { keys: rows.map((r) => r.key), hits: rows.filter((r) => Number(r.hit) === 1).map((r) => r.key) };
    },
    removeIdempotency: async (workspaceId: number, keys: string[]): Promise<number> =>
      keys.length === 0
        ? 0
        : (
            await db.run(`DELETE FROM idempotency_record WHERE workspace_id = ? AND key IN (${inList(keys.length)})`, [
              workspaceId,
              ...keys,
            ])
          ).changes,

    /** The email bridge's forwards (sent or waiting) whose subject or text names the number. */
    removeEmailForwards: async (workspaceId: number, needle: string): Promise<number> =>
      (await db.run("DELETE FROM email_outbox WHERE workspace_id = ? AND (subject LIKE ? OR body LIKE ?)", [workspaceId, needle, needle]))
        .changes,

    /** Platform statuses still waiting for their message (a small table, emptied as they are applied) that name the number. */
    removeBacklog: async (workspaceId: number, needle: string): Promise<number> =>
      (
        await db.run(
          `DELETE FROM status_backlog WHERE CAST(payload AS TEXT) LIKE ?
           AND device_id IN (SELECT id FROM device WHERE workspace_id = ?)`,
          [needle, workspaceId],
        )
      ).changes,

    /** The audit of an erasure: when, who, how much; never the number. */
    recordErasure: async (workspaceId: number, at: number, actor: string, counts: Record<string, number>): Promise<void> =>
      void (await db.run("INSERT INTO erasure_log (workspace_id, at, actor, counts) VALUES (?, ?, ?, ?)", [
        workspaceId,
        at,
        actor,
        JSON.stringify(counts),
      ])),
    erasures: (workspaceId: number, limit: number) =>
      db.all<{ id: number; at: number; actor: string; counts: string }>(
        "SELECT id, at, actor, counts FROM erasure_log WHERE workspace_id = ? ORDER BY id DESC LIMIT ?",
        [workspaceId, limit],
      ),
  };
}

export type PrivacyRepository = ReturnType<typeof createPrivacyRepository>;
