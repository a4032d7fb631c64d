// The bytes of received MMS parts (thread_attachment), each attached to its thread message: kept,
// listed by message, read back under a workspace's tenancy, and summed for the caps and the
// metrics. The bytes are a BLOB on SQLite and bytea on PostgreSQL; both drivers hand them back as
// a Uint8Array (PostgreSQL's as a Buffer, which is one).
import type { Executor } from "../../db/storage";
import type { threadAttachment } from "./schema";

/** An attachment as the API lists it: everything but its bytes. */
export type AttachmentMeta = Omit<typeof threadAttachment.$inferSelect, "data" | "workspaceId">;
/** An attachment with its bytes, as it is served. */
export type AttachmentRecord = AttachmentMeta & { data: Uint8Array<ArrayBuffer> };

const inList = (n: number) => Array.from({ length: n }, () => "?").join(", ");

const META_COLUMNS = `a.id, a.thread_message_id AS "threadMessageId", a.part_id AS "partId", a.content_type AS "contentType", a.name,
  a.size, a.created_at AS "createdAt"`;

export function createAttachmentRepository(db: Executor) {
  return {
    /** Keeps one part's bytes; its id. */
    async insert(a: Omit<typeof threadAttachment.$inferInsert, "id">): Promise<number> {
      const row = await db.get<{ id: number }>(
        `INSERT INTO thread_attachment (workspace_id, thread_message_id, part_id, content_type, name, size, data, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
        [a.workspaceId, a.threadMessageId, a.partId ?? null, a.contentType, a.name ?? null, a.size, a.data, a.createdAt],
      );
      return Number(row!.id);
    },

    /** The bytes a workspace keeps now, all its messages together (what its cap counts). */
    storedBytes: async (workspaceId: number): Promise<number> =>
      Number(
        (
          await db.get<{ n: number | null }>("SELECT coalesce(sum(size), 0) AS n FROM thread_attachment WHERE workspace_id = ?", [
            workspaceId,
          ])
        )?.n ?? 0,
      ),

    /** The attachments of these thread messages, without their bytes, in the order they were kept. */
    async ofMessages(messageIds: number[]): Promise<AttachmentMeta[]> {
      if (messageIds.length === 0) return [];
      const rows = await db.all<AttachmentMeta>(
        `SELECT ${META_COLUMNS} FROM thread_attachment a WHERE a.thread_message_id IN (${inList(messageIds.length)}) ORDER BY a.id`,
        messageIds,
      );
      return rows.map((r) => ({ ...r, id: Number(r.id), threadMessageId: Number(r.threadMessageId), size: Number(r.size) }));
    },

    /** The attachments of each of these threads' newest message (the inbox's thumbnails), without their bytes. */
    async ofNewest(workspaceId: number, threadIds: number[]): Promise<(AttachmentMeta & { threadId: number })[]> {
      if (threadIds.length === 0) return [];
      const rows = await db.all<AttachmentMeta & { threadId: number }>(
        `SELECT ${META_COLUMNS}, m.thread_id AS "threadId" FROM thread t
         JOIN thread_message m ON m.thread_id = t.id AND m.at = t.last_message_at
         JOIN thread_attachment a ON a.thread_message_id = m.id
         WHERE t.workspace_id = ? AND t.id IN (${inList(threadIds.length)}) ORDER BY a.id`,
        [workspaceId, ...threadIds],
      );
      return rows.map((r) => ({
        ...r,
        id: Number(r.id),
        threadMessageId: Number(r.threadMessageId),
        size: Number(r.size),
        threadId: Number(r.threadId),
      }));
    },

    /**
     * One attachment with its bytes, found only through its message and thread in the workspace:
     * another workspace's ids, or ids that do not belong together, find nothing.
     */
    async one(workspaceId: number, threadId: number, messageId: number, attachmentId: number): Promise<AttachmentRecord | null> {
      const row = await db.get<AttachmentRecord>(
        `SELECT ${META_COLUMNS}, a.data FROM thread_attachment a
         JOIN thread_message m ON m.id = a.thread_message_id JOIN thread t ON t.id = m.thread_id
         WHERE a.id = ? AND a.workspace_id = ? AND m.id = ? AND t.id = ? AND t.workspace_id = ?`,
        [attachmentId, workspaceId, messageId, threadId, workspaceId],
      );
      if (!row) return null;
      return { ...row, id: Number(row.id), threadMessageId: Number(row.threadMessageId), size: Number(row.size) };
    },
  };
}

export type AttachmentRepository = ReturnType<typeof createAttachmentRepository>;
