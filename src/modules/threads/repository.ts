// Threads and their messages: every conversation, both directions, both channels. A send stores
// only its notification; its outbound message is added here later, in notification id order, by
// catchUp(), which every method but find() runs first, so nothing reads or changes a thread that
// lags behind the sends (a worker task also catches up once a second). Its SQL runs through the
// storage seam's executor, columns aliased to the schema's field names; the row types come from
// the drizzle tables.
import type { contact } from "../contacts/schema";
import type { notification } from "../notifications/schema";
import type { MmsMeta, ThreadMeta, thread, threadMessage } from "./schema";
import { jsonField, type Executor, type SqlParam, type Storage } from "../../db/storage";
import { describeDataSms, type DataMessage } from "../../lib/data-sms";

export type ThreadRecord = typeof thread.$inferSelect;
export type ThreadMessageRecord = typeof threadMessage.$inferSelect;
/** A thread with the name of the contact it is linked to. */
export type ThreadView = ThreadRecord & { contactName: (typeof contact.$inferSelect)["name"] | null };
/** A message with the status of the notification that sent it (outbound only). */
export type ThreadMessageView = Omit<ThreadMessageRecord, "threadId"> & {
  notificationStatus: (typeof notification.$inferSelect)["status"] | null;
  /** The data SMS the notification that sent it carried (outbound only). */
  sentData: (typeof notification.$inferSelect)["dataMessage"];
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
  /** An MMS's headers and attachments, or a data SMS's bytes (inbound phone messages only). */
  meta?: ThreadMeta | null;
  /**
   * Also ignore it when the thread already has an inbound message with the same time and body: a
   * phone re-posting its inbox may give an old message a different id than it first had.
   */
  sameContentIsDuplicate?: boolean;
  at: number;
}

const PREVIEW = 120;

/**
 * What a thread shows of its last message: the first 120 characters of its text, or for a data
 * SMS (no text) its port and size in brackets, as a rule's forward names it.
 */
export function previewOf(body: string, data: DataMessage | null | undefined): string {
  return data ? `[${describeDataSms(data)}]` : body.slice(0, PREVIEW);
}

/** Notifications added to their threads per read of the backlog. */
const CATCH_UP_BATCH = 500;

const THREAD_COLUMNS = `id, workspace_id AS "workspaceId", channel, device_id AS "deviceId", peer, peer_name AS "peerName", contact_id AS "contactId",
  last_message_at AS "lastMessageAt", last_message_preview AS "lastMessagePreview", last_direction AS "lastDirection",
  unread_count AS "unreadCount", last_inbound_at AS "lastInboundAt", created_at AS "createdAt"`;

/** The newer of two instants, either of which may be null (SQLite's two-argument max is not portable). */
const later = (a: string, b: string) => `CASE WHEN ${a} IS NULL THEN ${b} WHEN ${b} IS NULL OR ${a} >= ${b} THEN ${a} ELSE ${b} END`;

const UPSERT_THREAD = `
  INSERT INTO thread (workspace_id, channel, device_id, peer, peer_name, contact_id, last_message_at, last_message_preview,
    last_direction, unread_count, last_inbound_at, created_at)
  VALUES (?, ?, ?, ?, ?, (SELECT id FROM contact WHERE workspace_id = ? AND phone = ?), ?, ?, ?, ?, ?, ?)
  ON CONFLICT (workspace_id, channel, device_id, peer) DO UPDATE SET
    peer_name = coalesce(excluded.peer_name, thread.peer_name),
    contact_id = coalesce(thread.contact_id, excluded.contact_id),
    last_message_at = ${later("thread.last_message_at", "excluded.last_message_at")},
    last_message_preview = CASE WHEN excluded.last_message_at >= thread.last_message_at THEN excluded.last_message_preview ELSE thread.last_message_preview END,
    last_direction = CASE WHEN excluded.last_message_at >= thread.last_message_at THEN excluded.last_direction ELSE thread.last_direction END,
    unread_count = thread.unread_count + excluded.unread_count,
    last_inbound_at = ${later("thread.last_inbound_at", "excluded.last_inbound_at")}
  RETURNING ${THREAD_COLUMNS}`;

const INSERT_MESSAGE = `
  INSERT INTO thread_message (thread_id, direction, body, notification_id, device_id, external_id, meta, at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, external_id) WHERE external_id IS NOT NULL DO NOTHING RETURNING id`;

/** A send's own message: no channel id, so nothing it could repeat. */
const INSERT_SENT = `INSERT INTO thread_message (thread_id, direction, body, notification_id, device_id, at) VALUES (?, 'outbound', ?, ?, ?, ?)`;

const VIEW_COLUMNS = `${THREAD_COLUMNS.split(",")
  .map((c) => `t.${c.trim()}`)
  .join(", ")}, c.name AS "contactName"`;

const MESSAGE_COLUMNS = `m.id, m.direction, m.body, m.notification_id AS "notificationId", m.device_id AS "deviceId",
  m.external_id AS "externalId", m.meta, m.at, n.status AS "notificationStatus", n.data_message AS "sentData"`;

type SendRow = {
  id: number;
  workspaceId: number;
  channel: ThreadRecord["channel"];
  deviceId: number | null;
  recipient: string;
  recipientName: string | null;
  message: string;
  /** A data SMS's payload and port, as stored (JSON text), else null. */
  dataMessage: string | null;
  at: number;
  /** 1 (or true) for an end-to-end encrypted send: its recipient is ciphertext, so it joins no thread. */
  encrypted: number | boolean;
};

const SEND_FIELDS = `n.id, n.workspace_id AS "workspaceId", n.delivery_type AS channel, n.device_id AS "deviceId", n.recipient,
    n.recipient_name AS "recipientName", n.message, n.data_message AS "dataMessage", coalesce(n.schedule_at, n.created_at) AS at, n.encrypted`;

/** SQLite: the sends past the cursor, oldest first (one writer commits ids in order). */
const UNSYNCED = `SELECT ${SEND_FIELDS} FROM notification n WHERE n.id > ? ORDER BY n.id LIMIT ?`;

/**
 * PostgreSQL: the queued sends no other catch-up holds, oldest first, locked until this unit
 * commits (and deletes them); a send whose transaction commits late is queued all the same.
 */
const QUEUED = `SELECT ${SEND_FIELDS} FROM thread_pending p JOIN notification n ON n.id = p.notification_id
  ORDER BY p.notification_id LIMIT ? FOR UPDATE OF p SKIP LOCKED`;

export function createThreadRepository(storage: Storage) {
  const db: Executor = storage;

  function filtersOf(workspaceId: number, f: ThreadFilters): { sql: string; params: SqlParam[] } {
    const parts = ["t.workspace_id = ?"];
    const params: SqlParam[] = [workspaceId];
    if (f.channel) {
      parts.push("t.channel = ?");
      params.push(f.channel);
    }
    if (f.contactId !== undefined) {
      parts.push("t.contact_id = ?");
      params.push(f.contactId);
    }
    if (f.unread === true) parts.push("t.unread_count > 0");
    if (f.unread === false) parts.push("t.unread_count = 0");
    return { sql: parts.join(" AND "), params };
  }

  /** A thread's record from its row: the thread columns as selected. */
  const threadOf = (row: ThreadRecord) => row;

  /**
   * The thread of `key` once `last` is in it (created at `createdAt` if new, linked to the contact
   * with that phone if there is one): its newest message, name, unread count and window updated.
   */
  async function threadFor(
    key: ThreadKey,
    last: Pick<MessageInput, "peerName" | "direction" | "body" | "at"> & { data?: DataMessage | null },
    createdAt: number,
  ): Promise<ThreadRecord> {
    const inbound = last.direction === "inbound";
    const row = await db.get<ThreadRecord>(UPSERT_THREAD, [
      key.workspaceId,
      key.channel,
      key.threadDeviceId,
      key.peer,
      last.peerName ?? null,
      key.workspaceId,
      key.peer,
      last.at,
      previewOf(last.body, last.data),
      last.direction,
      inbound ? 1 : 0,
      inbound ? last.at : null,
      createdAt,
    ]);
    return threadOf(row!);
  }

  const findThread = (workspaceId: number, channel: ThreadRecord["channel"], threadDeviceId: number, peer: string) =>
    db.get<ThreadRecord>(`SELECT ${THREAD_COLUMNS} FROM thread WHERE workspace_id = ? AND channel = ? AND device_id = ? AND peer = ?`, [
      workspaceId,
      channel,
      threadDeviceId,
      peer,
    ]);

  /**
   * Adds a message to its thread (creating the thread, linked to the contact with that phone if
   * there is one). Only a message that may repeat one the channel delivered before (an external
   * id, or the same content) looks for it first; returns null for such a repeat.
   */
  async function write(m: MessageInput): Promise<{ thread: ThreadRecord; messageId: number } | null> {
    if (m.externalId || m.sameContentIsDuplicate) {
      const existing = await findThread(m.workspaceId, m.channel, m.threadDeviceId, m.peer);
      if (existing && m.externalId) {
        if (await db.get("SELECT id FROM thread_message WHERE thread_id = ? AND external_id = ?", [existing.id, m.externalId])) return null;
      }
      if (existing && m.sameContentIsDuplicate) {
        const same = await db.get(
          "SELECT id FROM thread_message WHERE thread_id = ? AND direction = 'inbound' AND at = ? AND body = ? LIMIT 1",
          [existing.id, m.at, m.body],
        );
        if (same) return null;
      }
    }
    const row = await threadFor(m, { ...m, data: m.meta?.type === "data" ? m.meta : null }, m.at);
    const meta = m.meta ? JSON.stringify(m.meta) : null;
    const message = await db.get<{ id: number }>(INSERT_MESSAGE, [
      row.id,
      m.direction,
      m.body,
      m.notificationId ?? null,
      m.deviceId ?? null,
      m.externalId ?? null,
      meta,
      m.at,
    ]);
    if (!message) return null;
    return { thread: row, messageId: message.id };
  }

  /**
   * Adds the sends stored since the last call to their threads, at most `limit` of them, in one
   * unit of work (the caller's, when it has one); returns how many. A send's message is dated when
   * it was scheduled for, else when it was accepted, and it goes to the thread of the channel and,
   * on the chat-app channel, the business number the notification has now.
   */
  async function catchUp(limit = Number.POSITIVE_INFINITY): Promise<number> {
    const queued = db.dialect === "postgres";
    const pending = await db.get(
      queued
        ? "SELECT notification_id FROM thread_pending LIMIT 1"
        : "SELECT id FROM notification WHERE id > (SELECT notification_id FROM thread_sync WHERE id = 1) LIMIT 1",
    );
    if (!pending) return 0;
    return storage.transaction(async () => {
      let done = 0;
      while (done < limit) {
        const batch = Math.min(CATCH_UP_BATCH, limit - done);
        let rows: SendRow[];
        if (queued) rows = await db.all<SendRow>(QUEUED, [batch]);
        else {
          const cursor = (await db.get<{ id: number }>('SELECT notification_id AS "id" FROM thread_sync WHERE id = 1'))!.id;
          rows = await db.all<SendRow>(UNSYNCED, [cursor, batch]);
        }
        if (rows.length === 0) break;
        // An encrypted send's number cannot be read (and differs each time): it is in no thread.
        await addToThreads(rows.filter((r) => !r.encrypted));
        if (queued)
          await db.run(
            `DELETE FROM thread_pending WHERE notification_id IN (${rows.map(() => "?").join(", ")})`,
            rows.map((r) => r.id),
          );
        else await db.run("UPDATE thread_sync SET notification_id = ? WHERE id = 1", [rows[rows.length - 1].id]);
        done += rows.length;
      }
      return done;
    });
  }

  /**
   * One thread update for all of a batch's messages to the same person, leaving the thread as
   * adding them one by one would: the newest (the last of equal times) is its last message, the
   * first made it if it is new, the last name given names it.
   */
  async function addToThreads(rows: SendRow[]): Promise<void> {
    const byThread = new Map<string, SendRow[]>();
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
      const data = newest.dataMessage === null ? null : (JSON.parse(newest.dataMessage) as DataMessage);
      const thread = await threadFor(key, { peerName, direction: "outbound", body: newest.message, data, at: newest.at }, first.at);
      for (const n of sends) await db.run(INSERT_SENT, [thread.id, n.message, n.id, n.deviceId, n.at]);
    }
  }

  /** `fn`, run once the threads have caught up with the sends. */
  const caughtUp =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await catchUp();
      return fn(...args);
    };

  return {
    catchUp,

    /** Adds a message to its thread, inside the caller's unit of work when there is one; see write(). */
    add: caughtUp((m: MessageInput) => storage.transaction(() => write(m))),

    /**
     * The MMS in a thread that a downloaded MMS (the phone's id `downloadId`, dated `at`) completes:
     * the one that already has it, else the header-only one nearest in time within `windowMs`.
     */
    mmsToComplete: caughtUp(
      async (
        threadId: number,
        downloadId: string,
        at: number,
        windowMs: number,
      ): Promise<{ id: number; meta: MmsMeta; done: boolean } | null> => {
        const done = await db.get<{ id: number }>(
          `SELECT id FROM thread_message WHERE thread_id = ? AND ${jsonField(db.dialect, "meta", "downloadId")} = ? LIMIT 1`,
          [threadId, downloadId],
        );
        // An MMS whose headers came (mms:received) and whose content has not: the one nearest in time.
        const id =
          done?.id ??
          (
            await db.get<{ id: number }>(
              `SELECT id FROM thread_message
              WHERE thread_id = ? AND direction = 'inbound' AND ${jsonField(db.dialect, "meta", "type")} = 'mms' AND ${jsonField(db.dialect, "meta", "downloadId")} IS NULL
                AND at BETWEEN ? AND ?
              ORDER BY abs(at - ?), id LIMIT 1`,
              [threadId, at - windowMs, at + windowMs, at],
            )
          )?.id;
        if (id === undefined) return null;
        const raw = (await db.get<{ meta: string | null }>("SELECT meta FROM thread_message WHERE id = ?", [id]))?.meta;
        return { id, meta: JSON.parse(raw ?? "null") as MmsMeta, done: done !== null };
      },
    ),
    /** Takes a sent message out of its thread (failover moved it to another channel's thread). */
    removeOutbound: caughtUp(async (notificationId: number): Promise<void> => {
      await db.run("DELETE FROM thread_message WHERE notification_id = ? AND direction = 'outbound'", [notificationId]);
    }),
    /** Replaces a message's body and metadata (an MMS whose content arrived). */
    completeMms: caughtUp(async (messageId: number, body: string, meta: MmsMeta): Promise<void> => {
      await db.run("UPDATE thread_message SET body = ?, meta = ? WHERE id = ?", [body, JSON.stringify(meta), messageId]);
    }),

    find: findThread,

    /** One thread of the workspace, with its contact's name. */
    view: caughtUp(
      (workspaceId: number, id: number): Promise<ThreadView | null> =>
        db.get<ThreadView>(
          `SELECT ${VIEW_COLUMNS} FROM thread t LEFT JOIN contact c ON c.id = t.contact_id WHERE t.workspace_id = ? AND t.id = ?`,
          [workspaceId, id],
        ),
    ),
    /** A page of the workspace's threads, most recent first. */
    views: caughtUp((workspaceId: number, f: ThreadFilters, limit: number, offset: number): Promise<ThreadView[]> => {
      const where = filtersOf(workspaceId, f);
      return db.all<ThreadView>(
        `SELECT ${VIEW_COLUMNS} FROM thread t LEFT JOIN contact c ON c.id = t.contact_id WHERE ${where.sql}
        ORDER BY t.last_message_at DESC, t.id DESC LIMIT ? OFFSET ?`,
        [...where.params, limit, offset],
      );
    }),
    count: caughtUp(async (workspaceId: number, f: ThreadFilters): Promise<number> => {
      const where = filtersOf(workspaceId, f);
      return Number((await db.get<{ n: number }>(`SELECT count(*) AS n FROM thread t WHERE ${where.sql}`, where.params))?.n ?? 0);
    }),

    /** A page of a thread's messages, newest first. */
    messages: caughtUp(async (threadId: number, limit: number, offset: number): Promise<ThreadMessageView[]> => {
      const rows = await db.all<ThreadMessageView & { meta: unknown; sentData: unknown }>(
        `SELECT ${MESSAGE_COLUMNS} FROM thread_message m LEFT JOIN notification n ON n.id = m.notification_id
        WHERE m.thread_id = ? ORDER BY m.at DESC, m.id DESC LIMIT ? OFFSET ?`,
        [threadId, limit, offset],
      );
      // The JSON columns hold JSON text; a driver that parses JSON hands over the value.
      const json = <T>(value: unknown): T | null => (typeof value === "string" ? (JSON.parse(value) as T) : ((value as T | null) ?? null));
      return rows.map((r) => ({ ...r, meta: json<ThreadMeta>(r.meta), sentData: json<ThreadMessageView["sentData"]>(r.sentData) }));
    }),
    countMessages: caughtUp(
      async (threadId: number): Promise<number> =>
        Number((await db.get<{ n: number }>("SELECT count(*) AS n FROM thread_message WHERE thread_id = ?", [threadId]))?.n ?? 0),
    ),

    markRead: caughtUp(async (threadId: number): Promise<void> => {
      await db.run("UPDATE thread SET unread_count = 0 WHERE id = ?", [threadId]);
    }),
  };
}

export type ThreadRepository = ReturnType<typeof createThreadRepository>;
