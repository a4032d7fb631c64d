// The threads module's tables: conversations, their messages, and how far they have caught up with the
// sends. Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { sql } from "drizzle-orm";
import { blob, index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { DELIVERY_TYPES } from "../../core/kinds";
import { workspace } from "../accounts/schema";
import { contact } from "../contacts/schema";
import { notification } from "../notifications/schema";

/** An MMS as the phone reported it: headers first (mms:received), content later (mms:downloaded). */
export interface MmsMeta {
  type: "mms";
  transactionId: string | null;
  subject: string | null;
  size: number | null;
  contentClass: string | null;
  /** The phone's id of the downloaded message, once mms:downloaded came. */
  downloadId: string | null;
  attachments: { partId: number | null; contentType: string; name: string | null; size: number | null }[] | null;
  /** The parts whose bytes Pigeon did not keep, and why (absent before attachments were kept). */
  dropped?: DroppedPart[];
}

/** Why a part's bytes were not kept: see DROP_REASONS in attachments.ts. */
export interface DroppedPart {
  partId: number | null;
  contentType: string;
  name: string | null;
  size: number | null;
  reason: string;
}

/** A data SMS a paired phone received: its payload (base64) and the port it came to; its body is empty. */
export interface DataMeta {
  type: "data";
  data: string;
  port: number;
}

/** What a thread message keeps beside its text: an MMS's headers, or a data SMS's bytes. */
export type ThreadMeta = MmsMeta | DataMeta;

/**
 * A conversation with one person on one channel. SMS threads are per workspace and phone number;
 * chat-app threads are per business number (device) and user, as the 24-hour window is.
 */
export const thread = sqliteTable(
  "thread",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    channel: text("channel", { enum: DELIVERY_TYPES }).notNull(),
    // 0 for SMS threads (any phone of the workspace); the business number's device for chat-app.
    deviceId: integer("device_id").notNull().default(0),
    peer: text("peer").notNull(),
    peerName: text("peer_name"),
    contactId: integer("contact_id").references(() => contact.id, { onDelete: "set null" }),
    lastMessageAt: integer("last_message_at").notNull(),
    lastMessagePreview: text("last_message_preview").notNull().default(""),
    lastDirection: text("last_direction", { enum: ["inbound", "outbound"] }).notNull(),
    unreadCount: integer("unread_count").notNull().default(0),
    lastInboundAt: integer("last_inbound_at"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    uniqueIndex("thread_peer_uq").on(table.workspaceId, table.channel, table.deviceId, table.peer),
    index("thread_workspace_last_idx").on(table.workspaceId, table.lastMessageAt),
  ],
);

export const threadMessage = sqliteTable(
  "thread_message",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    threadId: integer("thread_id")
      .notNull()
      .references(() => thread.id),
    direction: text("direction", { enum: ["inbound", "outbound"] }).notNull(),
    body: text("body").notNull(),
    notificationId: integer("notification_id").references(() => notification.id),
    deviceId: integer("device_id"),
    // The channel's id for an inbound message (the phone's content hash, the platform's wamid).
    externalId: text("external_id"),
    // What a plain text body cannot hold: an MMS's headers and its attachments' metadata, or a
    // received data SMS's payload and port.
    meta: text("meta", { mode: "json" }).$type<ThreadMeta>(),
    at: integer("at").notNull(),
  },
  (table) => [
    index("thread_message_thread_idx").on(table.threadId, table.at),
    // A message the channel delivered once (its id) is stored once; a send's own messages have no
    // such id and stay out of the index (one index fewer written per send).
    uniqueIndex("thread_message_external_uq").on(table.threadId, table.externalId).where(sql`external_id IS NOT NULL`),
    // A send's own thread message, found by its notification: retention and erasure remove them together.
    index("thread_message_notification_idx").on(table.notificationId).where(sql`notification_id IS NOT NULL`),
  ],
);

/**
 * How far the threads have caught up with the notifications (one row, id 1): a send stores only its
 * notification, and the threads repository adds every notification past `notification_id` to its
 * thread as an outbound message before it reads or writes anything (src/modules/threads/repository.ts).
 */
export const threadSync = sqliteTable("thread_sync", {
  id: integer("id").primaryKey(),
  notificationId: integer("notification_id").notNull(),
});

/**
 * On PostgreSQL, the sends not yet added to their threads: a trigger adds a row with each
 * notification, in the same transaction, and the catch-up takes them (FOR UPDATE SKIP LOCKED) and
 * deletes them. A cursor over ids (thread_sync, SQLite's way) would skip a send whose transaction
 * committed after a later id's. Unused on SQLite, where one writer commits ids in order.
 */
export const threadPending = sqliteTable("thread_pending", {
  notificationId: integer("notification_id").primaryKey(),
});

/**
 * The bytes of a received MMS's parts (pictures, audio, video, text files), each attached to its
 * thread message and stored in the database itself: a BLOB on SQLite, bytea on PostgreSQL, so a
 * backup, a copy to PostgreSQL and an erasure carry them with everything else.
 */
export const threadAttachment = sqliteTable(
  "thread_attachment",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    threadMessageId: integer("thread_message_id")
      .notNull()
      .references(() => threadMessage.id),
    // The phone's id of the part within its MMS.
    partId: integer("part_id"),
    // As the phone gave it, parameters included; what it is served as is decided when it is read.
    contentType: text("content_type").notNull(),
    name: text("name"),
    size: integer("size").notNull(),
    data: blob("data", { mode: "buffer" }).notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    index("thread_attachment_message_idx").on(table.threadMessageId),
    // A workspace's stored bytes (its cap) and retention's cut-off read this.
    index("thread_attachment_workspace_idx").on(table.workspaceId, table.createdAt),
  ],
);
