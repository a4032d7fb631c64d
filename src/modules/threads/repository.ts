// Threads and their messages: every conversation, both directions, both channels.
import type { Database, Statement } from "bun:sqlite";

export interface ThreadRecord {
  id: number;
  workspace_id: number;
  channel: "sms" | "chatapp";
  device_id: number;
  peer: string;
  peer_name: string | null;
  contact_id: number | null;
  last_message_at: number;
  last_message_preview: string;
  last_direction: "inbound" | "outbound";
  unread_count: number;
  last_inbound_at: number | null;
  created_at: number;
}

export interface ThreadMessageRecord {
  id: number;
  thread_id: number;
  direction: "inbound" | "outbound";
  body: string;
  notification_id: number | null;
  device_id: number | null;
  external_id: string | null;
  at: number;
}

export interface MessageInput {
  workspaceId: number;
  channel: "sms" | "chatapp";
  /** 0 for SMS threads; the business number's device for chat-app threads. */
  threadDeviceId: number;
  peer: string;
  peerName?: string | null;
  direction: "inbound" | "outbound";
  body: string;
  notificationId?: number | null;
  deviceId?: number | null;
  externalId?: string | null;
  at: number;
}

const PREVIEW = 120;

export function createThreadRepository(sqlite: Database) {
  const contactByPhone: Statement<{ id: number }, [number, string]> = sqlite.prepare("SELECT id FROM contact WHERE workspace_id = ? AND phone = ?");
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
    RETURNING *`);
  const findThread: Statement<ThreadRecord, [number, string, number, string]> = sqlite.prepare(
    "SELECT * FROM thread WHERE workspace_id = ? AND channel = ? AND device_id = ? AND peer = ?",
  );
  const insertMessage: Statement<{ id: number }> = sqlite.prepare(`
    INSERT INTO thread_message (thread_id, direction, body, notification_id, device_id, external_id, at)
    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, external_id) DO NOTHING RETURNING id`);
  const seen: Statement<{ id: number }, [number, string]> = sqlite.prepare("SELECT id FROM thread_message WHERE thread_id = ? AND external_id = ?");

  return {
    /**
     * Adds a message to its thread (creating the thread, linked to the contact with that phone if
     * there is one). An inbound message the channel already delivered (same external id) is
     * ignored; returns null then.
     */
    add(m: MessageInput): { thread: ThreadRecord; messageId: number } | null {
      return sqlite.transaction(() => {
        const existing = findThread.get(m.workspaceId, m.channel, m.threadDeviceId, m.peer);
        if (existing && m.externalId && seen.get(existing.id, m.externalId)) return null;
        const inbound = m.direction === "inbound";
        const contactId = contactByPhone.get(m.workspaceId, m.peer)?.id ?? null;
        const thread = upsertThread.get(
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
        const row = insertMessage.get(thread.id, m.direction, m.body, m.notificationId ?? null, m.deviceId ?? null, m.externalId ?? null, m.at);
        if (!row) return null;
        return { thread, messageId: row.id };
      })();
    },

    find: (workspaceId: number, channel: "sms" | "chatapp", threadDeviceId: number, peer: string) =>
      findThread.get(workspaceId, channel, threadDeviceId, peer),
  };
}

export type ThreadRepository = ReturnType<typeof createThreadRepository>;
