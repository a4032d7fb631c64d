// Reading conversations: threads with their contact and last message, and their messages with each
// outbound message's notification status. Chat-app threads show their 24-hour window.
import type { Clock } from "../../clock";
import type { MmsMeta } from "./schema";
import { AppError } from "../../core/errors";
import { DAY, iso } from "../../lib/time";
import type { AttachmentMeta } from "./attachment-repository";
import { attachmentPath, servedAs, type Attachments } from "./attachments";
import type { ThreadFilters, ThreadRecord, ThreadRepository, ThreadView } from "./repository";

export type { ThreadFilters };

export function createThreadService(repo: ThreadRepository, attachments: Attachments, clock: Clock) {
  /** The chat-app customer-service window of a thread: open for 24 hours after the user last wrote. */
  function windowOf(t: ThreadRecord) {
    if (t.channel !== "chatapp") return null;
    const expires = t.lastInboundAt === null ? null : t.lastInboundAt + DAY;
    return { open: expires !== null && expires > clock.now(), expires_at: iso(expires) };
  }

  function present(t: ThreadView) {
    return {
      thread_id: t.id,
      channel: t.channel,
      peer: t.peer,
      peer_name: t.peerName,
      contact: t.contactId === null ? null : { contact_id: t.contactId, name: t.contactName },
      device_id: t.deviceId === 0 ? null : t.deviceId,
      last_message: { body: t.lastMessagePreview, direction: t.lastDirection, at: iso(t.lastMessageAt) },
      last_message_at: iso(t.lastMessageAt),
      unread_count: t.unreadCount,
      window: windowOf(t),
      created_at: iso(t.createdAt),
    };
  }

  async function require(workspaceId: number, id: number): Promise<ThreadView> {
    const row = await repo.view(workspaceId, id);
    if (!row) throw new AppError("not_found", `thread ${id} not found`);
    return row;
  }

  return {
    /** Adds the sends not yet in their threads, at most `limit`; how many it added (the worker's catch-up). */
    catchUp: (limit?: number) => repo.catchUp(limit),
    async list(workspaceId: number, f: ThreadFilters, page = 1, limit = 20) {
      const rows = await repo.views(workspaceId, f, limit, (page - 1) * limit);
      const total = await repo.count(workspaceId, f);
      return { threads: rows.map(present), pagination: { page, limit, total } };
    },

    async messages(workspaceId: number, id: number, page = 1, limit = 20) {
      const t = await require(workspaceId, id);
      const found = await repo.messages(t.id, limit, (page - 1) * limit);
      const kept = await attachments.ofMessages(found.filter((m) => m.meta?.type === "mms").map((m) => m.id));
      const rows = found.map((m) => ({
        message_id: m.id,
        direction: m.direction,
        body: m.body,
        at: iso(m.at),
        device_id: m.deviceId,
        notification_id: m.notificationId,
        status: m.direction === "outbound" ? m.notificationStatus : "received",
        external_id: m.externalId,
        mms: m.meta?.type === "mms" ? presentMms(m.meta) : null,
        // A data SMS: received (its meta) or sent (its notification's).
        ...dataOf(m.meta?.type === "data" ? m.meta : m.sentData),
        attachments: (kept.get(m.id) ?? []).map((a) => presentAttachment(t.id, a)),
        attachments_dropped: (m.meta?.type === "mms" ? (m.meta.dropped ?? []) : []).map(presentDropped),
      }));
      return { thread: present(t), messages: rows, pagination: { page, limit, total: await repo.countMessages(t.id) } };
    },

    /** One attachment of a thread message, with its bytes; 404 unless thread, message and attachment are the workspace's and belong together. */
    async attachment(workspaceId: number, threadId: number, messageId: number, attachmentId: number) {
      const found = await attachments.open(workspaceId, threadId, messageId, attachmentId);
      if (!found) throw new AppError("not_found", `attachment ${attachmentId} not found`);
      return found;
    },

    /** The first picture of each listed thread's newest message, by thread id (the dashboard's thumbnails). */
    newestPictures: (workspaceId: number, threadIds: number[]) => attachments.newestPictures(workspaceId, threadIds),

    async markRead(workspaceId: number, id: number) {
      const t = await require(workspaceId, id);
      await repo.markRead(t.id);
      return present(await require(workspaceId, id));
    },
  };
}

export type ThreadService = ReturnType<typeof createThreadService>;

/** A data SMS's payload and port as a thread message shows them, only on a data SMS. */
function dataOf(d: { data: string; port: number } | null | undefined) {
  return d ? { data_message: { data: d.data, port: d.port } } : {};
}

/** An MMS's metadata as the API shows it. */
export function presentMms(meta: MmsMeta) {
  return {
    transaction_id: meta.transactionId,
    subject: meta.subject,
    size: meta.size,
    content_class: meta.contentClass,
    downloaded: meta.downloadId !== null,
    attachments: (meta.attachments ?? []).map((a) => ({ part_id: a.partId, content_type: a.contentType, name: a.name, size: a.size })),
  };
}

/** A kept attachment as the API lists it, with where its bytes are served. */
export function presentAttachment(threadId: number, a: AttachmentMeta) {
  return {
    attachment_id: a.id,
    part_id: a.partId,
    content_type: a.contentType,
    served_as: servedAs(a.contentType).type,
    name: a.name,
    size: a.size,
    url: attachmentPath(threadId, a.threadMessageId, a.id),
  };
}

/** A part whose bytes were not kept, and why. */
export function presentDropped(d: NonNullable<MmsMeta["dropped"]>[number]) {
  return { part_id: d.partId, content_type: d.contentType, name: d.name, size: d.size, reason: d.reason };
}
