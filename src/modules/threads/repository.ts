// Threads and their messages: every conversation, both directions, both channels. A send stores
// only its notification; its outbound message is added here later, in notification id order, by
// catchUp(), which every method but find() runs first, so nothing reads or changes a thread that
// lags behind the sends (a worker task also catches up once a second). The writing side uses
// statements prepared once, their columns aliased to the schema's names; the reading side goes
// through drizzle. Row types come from the drizzle tables either way.
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
export type ThreadMessageView = Omit<ThreadMessageRecord, "threadId"> & {
  notificationStatus: (typeof notification.$inferSelect)["status"] | null;
};

export interface ThreadFilters {
  channel?: ThreadRecord["channel"];
  contactId?: number;
  unread?: boolean;
}

/** Which conversation: a workspace's thread with one person on one channel (and business number). */
export interface ThreadKey {
  workspaceId: number;
  channel: ThreadRecord["channel"];
  /** 0 for SMS threads; the business number's device for chat-app threads. */
  threadDeviceId: number;
  peer: string;
}

export interface MessageInput extends ThreadKey {
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

/** Notifications added to their threads per read of the backlog. */
const CATCH_UP_BATCH = 500;

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
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
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

  const withContact = () =>
    db
      .select({ ...getTableColumns(thread), contactName: contact.name })
      .from(thread)
      .leftJoin(contact, eq(contact.id, thread.contactId));

  /**
   * The thread of `key` once `last` is in it (created at `createdAt` if new, linked to the contact
   * with that phone if there is one): its newest message, name, unread count and window updated.
   */
  function threadFor(key: ThreadKey, last: Pick<MessageInput, "peerName" | "direction" | "body" | "at">, createdAt: number): ThreadRecord {
    const inbound = last.direction === "inbound";
    const contactId = contactByPhone.get(key.workspaceId, key.peer)?.id ?? null;
    return upsertThread.get(
      key.workspaceId,
      key.channel,
      key.threadDeviceId,
      key.peer,
      last.peerName ?? null,
      contactId,
      last.at,
      last.body.slice(0, PREVIEW),
      last.direction,
      inbound ? 1 : 0,
      inbound ? last.at : null,
      createdAt,
    )!;
  }

  /**
   * Adds a message to its thread (creating the thread, linked to the contact with that phone if
   * there is one). Only a message that may repeat one the channel delivered before (an external
   * id, or the same content) looks for it first; returns null for such a repeat.
   */
  function write(m: MessageInput): { thread: ThreadRecord; messageId: number } | null {
    if (m.externalId || m.sameContentIsDuplicate) {
      const existing = findThread.get(m.workspaceId, m.channel, m.threadDeviceId, m.peer);
      if (existing && m.externalId && seen.get(existing.id, m.externalId)) return null;
      if (existing && m.sameContentIsDuplicate && sameContent.get(existing.id, m.at, m.body)) return null;
    }
    const row = threadFor(m, m, m.at);
    const meta = m.meta ? JSON.stringify(m.meta) : null;
    const message = insertMessage.get(
      row.id,
      m.direction,
      m.body,
      m.notificationId ?? null,
      m.deviceId ?? null,
      m.externalId ?? null,
      meta,
      m.at,
    );
    if (!message) return null;
    return { thread: row, messageId: message.id };
  }

  // The sends not yet in their threads: those past the cursor, oldest first.
  const syncedUpTo: Statement<{ id: number }, []> = sqlite.prepare("SELECT notification_id AS id FROM thread_sync WHERE id = 1");
  const anyUnsynced: Statement<{ id: number }, []> = sqlite.prepare(
    "SELECT id FROM notification WHERE id > (SELECT notification_id FROM thread_sync WHERE id = 1) LIMIT 1",
  );
  const unsynced: Statement<
    {
      id: number;
      workspaceId: number;
      channel: ThreadRecord["channel"];
      deviceId: number | null;
      recipient: string;
      recipientName: string | null;
      message: string;
      at: number;
    },
    [number, number]
  > = sqlite.prepare(`
    SELECT id, workspace_id AS workspaceId, delivery_type AS channel, device_id AS deviceId, recipient, recipient_name AS recipientName,
      message, coalesce(schedule_at, created_at) AS at
    FROM notification WHERE id > ? ORDER BY id LIMIT ?`);
  const advance: Statement<unknown, [number]> = sqlite.prepare("UPDATE thread_sync SET notification_id = ? WHERE id = 1");

  /**
   * Adds the sends stored since the last call to their threads, at most `limit` of them, in one
   * transaction (the caller's, when it has one); returns how many. A send's message is dated when
   * it was scheduled for, else when it was accepted, and it goes to the thread of the channel and,
   * on the chat-app channel, the business number the notification has now.
   */
  function catchUp(limit = Number.POSITIVE_INFINITY): number {
    if (!anyUnsynced.get()) return 0;
    const run = () => {
      let done = 0;
      while (done < limit) {
        const rows = unsynced.all(syncedUpTo.get()!.id, Math.min(CATCH_UP_BATCH, limit - done));
        if (rows.length === 0) break;
        // One thread update for all of a batch's messages to the same person, leaving the thread as
        // adding them one by one would: the newest (the last of equal times) is its last message,
        // the first made it if it is new, the last name given names it.
        const byThread = new Map<string, typeof rows>();
        for (const n of rows) {
          const key = `${n.workspaceId} ${n.channel} ${n.channel === "chatapp" ? (n.deviceId ?? 0) : 0} ${n.recipient}`;
          const same = byThread.get(key);
          if (same) same.push(n);
          else byThread.set(key, [n]);
        }
        for (const sends of byThread.values()) {
          const [first] = sends;
          let newest = first;
          let peerName: string | null = null;
          for (const n of sends) {
            if (n.at >= newest.at) newest = n;
            peerName = n.recipientName ?? peerName;
          }
          const key = {
            workspaceId: first.workspaceId,
            channel: first.channel,
            threadDeviceId: first.channel === "chatapp" ? (first.deviceId ?? 0) : 0,
            peer: first.recipient,
          };
          const thread = threadFor(key, { peerName, direction: "outbound", body: newest.message, at: newest.at }, first.at);
          for (const n of sends) insertMessage.get(thread.id, "outbound", n.message, n.id, n.deviceId, null, null, n.at);
        }
        advance.run(rows[rows.length - 1].id);
        done += rows.length;
      }
      return done;
    };
    return sqlite.inTransaction ? run() : sqlite.transaction(run)();
  }

  /** `fn`, run once the threads have caught up with the sends. */
  const caughtUp =
    <A extends unknown[], R>(fn: (...args: A) => R) =>
    (...args: A): R => {
      catchUp();
      return fn(...args);
    };

  return {
    catchUp,

    /** Adds a message to its thread, inside the caller's transaction when there is one; see write(). */
    add: caughtUp((m: MessageInput): { thread: ThreadRecord; messageId: number } | null =>
      sqlite.inTransaction ? write(m) : sqlite.transaction(write)(m),
    ),

    /**
     * The MMS in a thread that a downloaded MMS (the phone's id `downloadId`, dated `at`) completes:
     * the one that already has it, else the header-only one nearest in time within `windowMs`.
     */
    mmsToComplete: caughtUp(
      (threadId: number, downloadId: string, at: number, windowMs: number): { id: number; meta: MmsMeta; done: boolean } | null => {
        const done = downloaded.get(threadId, downloadId);
        const id = done?.id ?? awaitingDownload.get(threadId, at, windowMs, 1)?.id;
        if (id === undefined) return null;
        const raw = metaOf.get(id)?.meta;
        return { id, meta: JSON.parse(raw ?? "null") as MmsMeta, done: done != null };
      },
    ),
    /** Takes a sent message out of its thread (failover moved it to another channel's thread). */
    removeOutbound: caughtUp((notificationId: number): void => {
      dropOutbound.run(notificationId);
    }),
    /** Replaces a message's body and metadata (an MMS whose content arrived). */
    completeMms: caughtUp((messageId: number, body: string, meta: MmsMeta): void => {
      setContent.run(body, JSON.stringify(meta), messageId);
    }),

    find: (workspaceId: number, channel: ThreadRecord["channel"], threadDeviceId: number, peer: string): ThreadRecord | null =>
      findThread.get(workspaceId, channel, threadDeviceId, peer) ?? null,

    /** One thread of the workspace, with its contact's name. */
    view: caughtUp(
      (workspaceId: number, id: number): ThreadView | null =>
        withContact()
          .where(and(eq(thread.workspaceId, workspaceId), eq(thread.id, id)))
          .get() ?? null,
    ),
    /** A page of the workspace's threads, most recent first. */
    views: caughtUp((workspaceId: number, f: ThreadFilters, limit: number, offset: number): ThreadView[] =>
      withContact().where(filtersOf(workspaceId, f)).orderBy(desc(thread.lastMessageAt), desc(thread.id)).limit(limit).offset(offset).all(),
    ),
    count: caughtUp(
      (workspaceId: number, f: ThreadFilters): number => db.select({ n: count() }).from(thread).where(filtersOf(workspaceId, f)).get()!.n,
    ),

    /** A page of a thread's messages, newest first. */
    messages: caughtUp((threadId: number, limit: number, offset: number): ThreadMessageView[] =>
      db
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
        .all(),
    ),
    countMessages: caughtUp(
      (threadId: number): number => db.select({ n: count() }).from(threadMessage).where(eq(threadMessage.threadId, threadId)).get()!.n,
    ),

    markRead: caughtUp((threadId: number) => void db.update(thread).set({ unreadCount: 0 }).where(eq(thread.id, threadId)).run()),
  };
}

export type ThreadRepository = ReturnType<typeof createThreadRepository>;
