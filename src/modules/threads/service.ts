// Reading conversations: threads with their contact and last message, and their messages with each
// outbound message's notification status. Chat-app threads show their 24-hour window.
import type { Database, Statement } from "bun:sqlite";
import type { Clock } from "../../clock";
import { AppError } from "../../http/errors";
import { DAY, iso } from "../../lib/time";
import type { ThreadMessageRecord, ThreadRecord } from "./repository";

interface ThreadRow extends ThreadRecord {
  contact_name: string | null;
}

interface MessageRow extends ThreadMessageRecord {
  notification_status: string | null;
}

export interface ThreadFilters {
  channel?: "sms" | "chatapp";
  contactId?: number;
  unread?: boolean;
}

export function createThreadService(sqlite: Database, clock: Clock) {
  const getOne: Statement<ThreadRow, [number, number]> = sqlite.prepare(
    "SELECT t.*, c.name AS contact_name FROM thread t LEFT JOIN contact c ON c.id = t.contact_id WHERE t.workspace_id = ? AND t.id = ?",
  );
  const messages: Statement<MessageRow, [number, number, number]> = sqlite.prepare(`
    SELECT m.id, m.direction, m.body, m.notification_id, m.device_id, m.external_id, m.at, n.status AS notification_status
    FROM thread_message m LEFT JOIN notification n ON n.id = m.notification_id
    WHERE m.thread_id = ? ORDER BY m.at DESC, m.id DESC LIMIT ? OFFSET ?`);
  const messageCount: Statement<{ n: number }, [number]> = sqlite.prepare("SELECT count(*) AS n FROM thread_message WHERE thread_id = ?");
  const markRead = sqlite.prepare("UPDATE thread SET unread_count = 0 WHERE id = ?");

  /** The chat-app customer-service window of a thread: open for 24 hours after the user last wrote. */
  function windowOf(t: ThreadRecord) {
    if (t.channel !== "chatapp") return null;
    const expires = t.last_inbound_at === null ? null : t.last_inbound_at + DAY;
    return { open: expires !== null && expires > clock.now(), expires_at: iso(expires) };
  }

  function present(t: ThreadRow) {
    return {
      thread_id: t.id,
      channel: t.channel,
      peer: t.peer,
      peer_name: t.peer_name,
      contact: t.contact_id === null ? null : { contact_id: t.contact_id, name: t.contact_name },
      device_id: t.device_id === 0 ? null : t.device_id,
      last_message: { body: t.last_message_preview, direction: t.last_direction, at: iso(t.last_message_at) },
      last_message_at: iso(t.last_message_at),
      unread_count: t.unread_count,
      window: windowOf(t),
      created_at: iso(t.created_at),
    };
  }

  function require(workspaceId: number, id: number): ThreadRow {
    const row = getOne.get(workspaceId, id);
    if (!row) throw new AppError("not_found", `thread ${id} not found`);
    return row;
  }

  return {
    list(workspaceId: number, f: ThreadFilters, page = 1, limit = 20) {
      const where = ["t.workspace_id = ?"];
      const args: (string | number)[] = [workspaceId];
      if (f.channel) where.push("t.channel = ?"), args.push(f.channel);
      if (f.contactId !== undefined) where.push("t.contact_id = ?"), args.push(f.contactId);
      if (f.unread === true) where.push("t.unread_count > 0");
      if (f.unread === false) where.push("t.unread_count = 0");
      const clause = where.join(" AND ");
      const rows = sqlite
        .query(`SELECT t.*, c.name AS contact_name FROM thread t LEFT JOIN contact c ON c.id = t.contact_id WHERE ${clause} ORDER BY t.last_message_at DESC, t.id DESC LIMIT ? OFFSET ?`)
        .all(...args, limit, (page - 1) * limit) as ThreadRow[];
      const total = (sqlite.query(`SELECT count(*) AS n FROM thread t WHERE ${clause}`).get(...args) as { n: number }).n;
      return { threads: rows.map(present), pagination: { page, limit, total } };
    },

    messages(workspaceId: number, id: number, page = 1, limit = 20) {
      const t = require(workspaceId, id);
      const rows = messages.all(t.id, limit, (page - 1) * limit).map((m) => ({
        message_id: m.id,
        direction: m.direction,
        body: m.body,
        at: iso(m.at),
        device_id: m.device_id,
        notification_id: m.notification_id,
        status: m.direction === "outbound" ? m.notification_status : "received",
        external_id: m.external_id,
      }));
      return { thread: present(t), messages: rows, pagination: { page, limit, total: messageCount.get(t.id)!.n } };
    },

    markRead(workspaceId: number, id: number) {
      const t = require(workspaceId, id);
      markRead.run(t.id);
      return present(require(workspaceId, id));
    },

  };
}

export type ThreadService = ReturnType<typeof createThreadService>;
