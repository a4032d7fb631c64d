// Threads and their messages: every conversation, both directions, both channels. Adding a message
// runs on every accepted send and every inbound message, so add() and find() use statements
// prepared once, their columns aliased to the schema's names; the reading side goes through
// drizzle. Row types come from the drizzle tables either way.
import type { Database, Statement } from "bun:sqlite";
import { and, count, desc, eq, getTableColumns, gt, type SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "../../db/schema";
import { contact, notification, thread, threadMessage, type MmsMeta } from "../../db/schema";

export type ThreadRecord = typeof thread.$inferSelect;
export type ThreadMessageRecord = typeof threadMessage.$inferSelect;
/** A thread with the name of the contact it is linked to. */
export type ThreadView = ThreadRecord & { contactName: (typeof contact.$inferSelect)["name"] | null };
/** A message with the status of the notification that sent it (outbound only). */
export type ThreadMessageView = Omit<ThreadMessageRecord, "threadId"> & { notificationStatus: (typeof notification.$inferSelect)["status"] | null };

export interface ThreadFilters {
  channel?: ThreadRecord["channel"];
  contactId?: number;
  unread?: boolean;
}

export interface MessageInput {
  workspaceId: number;
  channel: ThreadRecord["channel"];
  /** 0 for SMS threads; the business number's device for chat-app threads. */
  threadDeviceId: number;
  peer: string;
  peerName?: string | null;
  direction: ThreadMessageRecord["direction"];
  body: string;
  notificationId?: number | null;
  deviceId?: number | null;
  externalId?: string | null;
  /** An MMS's headers and attachments (inbound phone MMS only). */
  meta?: MmsMeta | null;
  /**
   * Also ignore it when the thread already has an inbound message with the same time and body: a
   * phone re-posting its inbox may give an old message a different id than it first had.
   */
  sameContentIsDuplicate?: boolean;
  at: number;
}

const PREVIEW = 120;

const THREAD_COLUMNS = `id, workspace_id AS workspaceId, channel, device_id AS deviceId, peer, peer_name AS peerName, contact_id AS contactId,
  last_message_at AS lastMessageAt, last_message_preview AS lastMessagePreview, last_direction AS lastDirection,
  unread_count AS unreadCount, last_inbound_at AS lastInboundAt, created_at AS createdAt`;

export function createThreadRepository(sqlite: Database) {
  const db = drizzle({ client: sqlite, schema });

  const contactByPhone: Statement<Pick<typeof contact.$inferSelect, "id">, [number, string]> = sqlite.prepare(
    "SELECT id FROM contact WHERE workspace_id = ? AND phone = ?",
  );
  const upsertThread: Statement<ThreadRecord> = sqlite.prepare(`
    INSERT INTO thread (workspace_id, channel, device_id, peer, peer_name, contact_id, last_message_at, last_message_preview,
      last_direction, unread_count, last_inbound_at, created_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?7)
    ON CONFLICT (workspace_id, channel, device_id, peer) DO UPDATE SET
      peer_name = coalesce(excluded.peer_name, thread.peer_name),
      contact_id = coalesce(thread.contact_id, excluded.contact_id),
      last_message_at = max(thread.last_message_at, excluded.last_message_at),
      last_message_preview = CASE WHEN excluded.last_message_at >= thread.last_message_at THEN excluded.last_message_preview ELSE thread.last_message_preview END,
      last_direction = CASE WHEN excluded.last_message_at >= thread.last_message_at THEN excluded.last_direction ELSE thread.last_direction END,
      unread_count = thread.unread_count + excluded.unread_count,
      last_inbound_at = CASE WHEN excluded.last_inbound_at IS NULL THEN thread.last_inbound_at
        WHEN thread.last_inbound_at IS NULL THEN excluded.last_inbound_at
        ELSE max(thread.last_inbound_at, excluded.last_inbound_at) END
    RETURNING ${THREAD_COLUMNS}`);
  const findThread: Statement<ThreadRecord, [number, string, number, string]> = sqlite.prepare(
    `SELECT ${THREAD_COLUMNS} FROM thread WHERE workspace_id = ? AND channel = ? AND device_id = ? AND peer = ?`,
  );
  const insertMessage: Statement<Pick<ThreadMessageRecord, "id">> = sqlite.prepare(`
    INSERT INTO thread_message (thread_id, direction, body, notification_id, device_id, external_id, meta, at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, external_id) DO NOTHING RETURNING id`);
  const seen: Statement<Pick<ThreadMessageRecord, "id">, [number, string]> = sqlite.prepare(
    "SELECT id FROM thread_message WHERE thread_id = ? AND external_id = ?",
  );
  const sameContent: Statement<Pick<ThreadMessageRecord, "id">, [number, number, string]> = sqlite.prepare(
    "SELECT id FROM thread_message WHERE thread_id = ? AND direction = 'inbound' AND at = ? AND body = ? LIMIT 1",
  );
  // An MMS whose headers came (mms:received) and whose content has not: the one nearest in time.
  const awaitingDownload: Statement<Pick<ThreadMessageRecord, "id">, [number, number, number, number]> = sqlite.prepare(`
    SELECT id FROM thread_message
    WHERE thread_id = ?1 AND direction = 'inbound' AND json_extract(meta, '$.type') = 'mms' AND json_extract(meta, '$.downloadId') IS NULL
      AND at BETWEEN ?2 - ?3 AND ?2 + ?3
    ORDER BY abs(at - ?2), id LIMIT ?4`);
  const downloaded: Statement<Pick<ThreadMessageRecord, "id">, [number, string]> = sqlite.prepare(
    "SELECT id FROM thread_message WHERE thread_id = ? AND json_extract(meta, '$.downloadId') = ? LIMIT 1",
  );
  const metaOf: Statement<{ meta: string | null }, [number]> = sqlite.prepare("SELECT meta FROM thread_message WHERE id = ?");
  const setContent = sqlite.prepare("UPDATE thread_message SET body = ?, meta = ? WHERE id = ?");
  const dropOutbound = sqlite.prepare("DELETE FROM thread_message WHERE notification_id = ? AND direction = 'outbound'");

  function filtersOf(workspaceId: number, f: ThreadFilters): SQL | undefined {
    return and(
      eq(thread.workspaceId, workspaceId),
      f.channel ? eq(thread.channel, f.channel) : undefined,
      f.contactId !== undefined ? eq(thread.contactId, f.contactId) : undefined,
      f.unread === true ? gt(thread.unreadCount, 0) : undefined,
      f.unread === false ? eq(thread.unreadCount, 0) : undefined,
    );
  }

  const withContact = () => db.select({ ...getTableColumns(thread), contactName: contact.name }).from(thread).leftJoin(contact, eq(contact.id, thread.contactId));

  return {
    /**
     * Adds a message to its thread (creating the thread, linked to the contact with that phone if
     * there is one). An inbound message the channel already delivered (same external id) is
     * ignored; returns null then.
     */
    add(m: MessageInput): { thread: ThreadRecord; messageId: number } | null {
      // Every send adds one: inside the caller's transaction (the usual case) it runs as it is,
      // without a savepoint of its own, and only a message that may repeat one the channel
      // delivered before looks for it first.
      const write = () => {
        if (m.externalId || m.sameContentIsDuplicate) {
          const existing = findThread.get(m.workspaceId, m.channel, m.threadDeviceId, m.peer);
          if (existing && m.externalId && seen.get(existing.id, m.externalId)) return null;
          if (existing && m.sameContentIsDuplicate && sameContent.get(existing.id, m.at, m.body)) return null;
        }
        const inbound = m.direction === "inbound";
        const contactId = contactByPhone.get(m.workspaceId, m.peer)?.id ?? null;
        const row = upsertThread.get(
          m.workspaceId,
          m.channel,
          m.threadDeviceId,
          m.peer,
          m.peerName ?? null,
          contactId,
          m.at,
          m.body.slice(0, PREVIEW),
          m.direction,
          inbound ? 1 : 0,
          inbound ? m.at : null,
        )!;
        const meta = m.meta ? JSON.stringify(m.meta) : null;
        const message = insertMessage.get(row.id, m.direction, m.body, m.notificationId ?? null, m.deviceId ?? null, m.externalId ?? null, meta, m.at);
        if (!message) return null;
        return { thread: row, messageId: message.id };
      };
      return sqlite.inTransaction ? write() : sqlite.transaction(write)();
    },

    /**
     * The MMS in a thread that a downloaded MMS (the phone's id `downloadId`, dated `at`) completes:
     * the one that already has it, else the header-only one nearest in time within `windowMs`.
     */
    mmsToComplete(threadId: number, downloadId: string, at: number, windowMs: number): { id: number; meta: MmsMeta; done: boolean } | null {
      const done = downloaded.get(threadId, downloadId);
      const id = done?.id ?? awaitingDownload.get(threadId, at, windowMs, 1)?.id;
      if (id === undefined) return null;
      const raw = metaOf.get(id)?.meta;
      return { id, meta: JSON.parse(raw ?? "null") as MmsMeta, done: done != null };
    },
    /** Takes a sent message out of its thread (failover moved it to another channel's thread). */
    removeOutbound(notificationId: number): void {
      dropOutbound.run(notificationId);
    },
    /** Replaces a message's body and metadata (an MMS whose content arrived). */
    completeMms(messageId: number, body: string, meta: MmsMeta): void {
      setContent.run(body, JSON.stringify(meta), messageId);
    },

    find: (workspaceId: number, channel: ThreadRecord["channel"], threadDeviceId: number, peer: string): ThreadRecord | null =>
      findThread.get(workspaceId, channel, threadDeviceId, peer) ?? null,

    /** One thread of the workspace, with its contact's name. */
    view(workspaceId: number, id: number): ThreadView | null {
      return withContact().where(and(eq(thread.workspaceId, workspaceId), eq(thread.id, id))).get() ?? null;
    },
    /** A page of the workspace's threads, most recent first. */
    views(workspaceId: number, f: ThreadFilters, limit: number, offset: number): ThreadView[] {
      return withContact().where(filtersOf(workspaceId, f)).orderBy(desc(thread.lastMessageAt), desc(thread.id)).limit(limit).offset(offset).all();
    },
    count(workspaceId: number, f: ThreadFilters): number {
      return db.select({ n: count() }).from(thread).where(filtersOf(workspaceId, f)).get()!.n;
    },

    /** A page of a thread's messages, newest first. */
    messages(threadId: number, limit: number, offset: number): ThreadMessageView[] {
      return db
        .select({
          id: threadMessage.id,
          direction: threadMessage.direction,
          body: threadMessage.body,
          notificationId: threadMessage.notificationId,
          deviceId: threadMessage.deviceId,
          externalId: threadMessage.externalId,
          meta: threadMessage.meta,
          at: threadMessage.at,
          notificationStatus: notification.status,
        })
        .from(threadMessage)
        .leftJoin(notification, eq(notification.id, threadMessage.notificationId))
        .where(eq(threadMessage.threadId, threadId))
        .orderBy(desc(threadMessage.at), desc(threadMessage.id))
        .limit(limit)
        .offset(offset)
        .all();
    },
    countMessages(threadId: number): number {
      return db.select({ n: count() }).from(threadMessage).where(eq(threadMessage.threadId, threadId)).get()!.n;
    },

    markRead: (threadId: number) => void db.update(thread).set({ unreadCount: 0 }).where(eq(thread.id, threadId)).run(),
  };
}

export type ThreadRepository = ReturnType<typeof createThreadRepository>;
