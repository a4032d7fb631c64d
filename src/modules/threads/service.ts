// Reading conversations: threads with their contact and last message, and their messages with each
// outbound message's notification status. Chat-app threads show their 24-hour window.
import type { Clock } from "../../clock";
import type { MmsMeta } from "./schema";
import { AppError } from "../../core/errors";
import { DAY, iso } from "../../lib/time";
import type { ThreadFilters, ThreadRecord, ThreadRepository, ThreadView } from "./repository";

export type { ThreadFilters };

export function createThreadService(repo: ThreadRepository, clock: Clock) {
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
      const rows = (await repo.messages(t.id, limit, (page - 1) * limit)).map((m) => ({
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
      }));
      return { thread: present(t), messages: rows, pagination: { page, limit, total: await repo.countMessages(t.id) } };
    },

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
