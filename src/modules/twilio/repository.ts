// The twilio_account queries, the reads the Twilio-compatible Messages API makes of the
// notifications it sent (one by id, a page of them newest first with Twilio's filters) and of
// received messages, the status callbacks asked for, the incoming-message URLs, and the outbox of
// Twilio-style posts.
import type { Executor, SqlParam } from "../../db/storage";

export interface TwilioAccountRow {
  workspaceId: number;
  accountSid: string;
  /** Sealed. */
  authToken: string;
  apiKeyId: number;
  incomingUrl: string | null;
  createdAt: number;
  updatedAt: number;
}

/** A post waiting in the outbox: a status callback, or a received message for an incoming-message URL. */
export interface TwilioPostRow {
  id: number;
  workspaceId: number;
  kind: "status" | "incoming";
  url: string;
  params: [string, string][];
  peer: string;
  reply: { channel: string; deviceId: number; simNumber: number | null } | null;
  attempts: number;
}

/** A received message as the Messages API shows it. */
export interface ReceivedRow {
  id: number;
  peer: string;
  body: string;
  deviceId: number | null;
  at: number;
  channel: string;
}

/** A notification as the Messages API shows it, with the number it went out from when known. */
export interface MessageRow {
  id: number;
  recipient: string;
  message: string;
  status: "awaiting_approval" | "pending" | "sent" | "delivered" | "failed" | "cancelled";
  stage: string;
  scheduleAt: number | null;
  segments: number;
  errorCode: string | null;
  errorReason: string | null;
  createdAt: number;
  updatedAt: number;
  sentAt: number | null;
  fromNumber: string | null;
}

const ACCOUNT = `workspace_id AS "workspaceId", account_sid AS "accountSid", auth_token AS "authToken", api_key_id AS "apiKeyId",
  incoming_url AS "incomingUrl", created_at AS "createdAt", updated_at AS "updatedAt"`;
const account = (r: TwilioAccountRow | null): TwilioAccountRow | null =>
  r && {
    ...r,
    workspaceId: Number(r.workspaceId),
    apiKeyId: Number(r.apiKeyId),
    createdAt: Number(r.createdAt),
    updatedAt: Number(r.updatedAt),
  };

const MESSAGE = `n.id, n.recipient, n.message, n.status, n.stage, n.schedule_at AS "scheduleAt", n.segments, n.error_code AS "errorCode",
  n.error_reason AS "errorReason", n.created_at AS "createdAt", n.updated_at AS "updatedAt", n.sent_at AS "sentAt",
  d.phone_number AS "fromNumber"`;
const message = (r: MessageRow): MessageRow => ({
  ...r,
  id: Number(r.id),
  scheduleAt: r.scheduleAt === null ? null : Number(r.scheduleAt),
  segments: Number(r.segments),
  createdAt: Number(r.createdAt),
  updatedAt: Number(r.updatedAt),
  sentAt: r.sentAt === null ? null : Number(r.sentAt),
});

export interface MessageFilters {
  to?: string;
  from?: string;
  /** sent_at within [sentFrom, sentTo). */
  sentFrom?: number;
  sentTo?: number;
  /** Only ids below this one (the page token: the last id of the page before). */
  before?: number;
}

export function createTwilioRepository(db: Executor) {
  return {
    account: async (workspaceId: number) =>
      account(await db.get<TwilioAccountRow>(`SELECT ${ACCOUNT} FROM twilio_account WHERE workspace_id = ?`, [workspaceId])),
    bySid: async (sid: string) =>
      account(await db.get<TwilioAccountRow>(`SELECT ${ACCOUNT} FROM twilio_account WHERE account_sid = ?`, [sid])),
    async insert(row: TwilioAccountRow): Promise<void> {
      await db.run(
        `INSERT INTO twilio_account (workspace_id, account_sid, auth_token, api_key_id, incoming_url, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        [row.workspaceId, row.accountSid, row.authToken, row.apiKeyId, row.incomingUrl, row.createdAt, row.updatedAt],
      );
    },
    setIncomingUrl: async (workspaceId: number, url: string | null, now: number) =>
      void (await db.run("UPDATE twilio_account SET incoming_url = ?, updated_at = ? WHERE workspace_id = ?", [url, now, workspaceId])),
    setPoolIncomingUrl: async (workspaceId: number, poolId: number, url: string | null, now: number) =>
      void (await db.run("UPDATE pool SET incoming_url = ?, updated_at = ? WHERE workspace_id = ? AND id = ?", [
        url,
        now,
        workspaceId,
        poolId,
      ])),
    poolIncomingUrls: async (workspaceId: number) =>
      (
        await db.all<{ id: number; name: string; url: string }>(
          "SELECT id, name, incoming_url AS url FROM pool WHERE workspace_id = ? AND incoming_url IS NOT NULL ORDER BY id",
          [workspaceId],
        )
      ).map((r) => ({ ...r, id: Number(r.id) })),
    /**
     * Where a message received on a device (and SIM) is posted: the URL of a pool it is a member of
     * (a member for that very SIM before one for the whole phone, then the oldest pool), else the
     * workspace's; with the pool's id when it came from one.
     */
    async incomingTarget(
      workspaceId: number,
      deviceId: number,
      simNumber: number | null,
    ): Promise<{ url: string; poolId: number | null } | null> {
      const pool = await db.get<{ url: string; poolId: number }>(
        `SELECT p.incoming_url AS url, p.id AS "poolId" FROM pool p JOIN pool_member m ON m.pool_id = p.id
         WHERE p.workspace_id = ? AND m.device_id = ? AND (m.sim_number IS NULL OR m.sim_number = ?) AND p.incoming_url IS NOT NULL
         ORDER BY CASE WHEN m.sim_number IS NULL THEN 1 ELSE 0 END, p.id LIMIT 1`,
        [workspaceId, deviceId, simNumber],
      );
      if (pool) return { url: pool.url, poolId: Number(pool.poolId) };
      const own = await db.get<{ url: string | null }>("SELECT incoming_url AS url FROM twilio_account WHERE workspace_id = ?", [
        workspaceId,
      ]);
      return own?.url ? { url: own.url, poolId: null } : null;
    },

    insertCallback: async (notificationId: number, workspaceId: number, url: string, now: number) =>
      void (await db.run("INSERT INTO twilio_callback (notification_id, workspace_id, url, created_at) VALUES (?, ?, ?, ?)", [
        notificationId,
        workspaceId,
        url,
        now,
      ])),
    /** The status callback URLs of those of `ids` that asked for one. */
    async callbacksOf(ids: readonly number[]): Promise<Map<number, string>> {
      if (ids.length === 0) return new Map();
      const rows = await db.all<{ id: number; url: string }>(
        `SELECT notification_id AS id, url FROM twilio_callback WHERE notification_id IN (${ids.map(() => "?").join(", ")})`,
        [...ids],
      );
      return new Map(rows.map((r) => [Number(r.id), r.url]));
    },

    async insertPost(p: Omit<TwilioPostRow, "id" | "attempts">, now: number): Promise<void> {
      await db.run(
        "INSERT INTO twilio_post (workspace_id, kind, url, params, peer, reply, attempts, next_at, created_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
        [p.workspaceId, p.kind, p.url, JSON.stringify(p.params), p.peer, p.reply === null ? null : JSON.stringify(p.reply), now, now],
      );
    },
    /** Posts due and not under way, oldest first. */
    async duePosts(now: number, limit: number): Promise<TwilioPostRow[]> {
      const rows = await db.all<Omit<TwilioPostRow, "params" | "reply"> & { params: string; reply: string | null }>(
        `SELECT id, workspace_id AS "workspaceId", kind, url, params, peer, reply, attempts FROM twilio_post
         WHERE claimed_by IS NULL AND next_at <= ? ORDER BY next_at, id LIMIT ?`,
        [now, limit],
      );
      return rows.map((r) => ({
        ...r,
        id: Number(r.id),
        workspaceId: Number(r.workspaceId),
        attempts: Number(r.attempts),
        params: JSON.parse(r.params),
        reply: r.reply === null ? null : JSON.parse(r.reply),
      }));
    },
    /** Takes a post for this server's call; false when another took it first. */
    /**
     * Whether an older status callback of the same message to the same URL is still to be made (due,
     * under way or waiting for its retry): a message's callbacks go out one after another, in order.
     */
    heldBehind: async (p: { id: number; url: string; messageSid: string }) =>
      (await db.get(`SELECT 1 AS held FROM twilio_post WHERE kind = 'status' AND id < ? AND url = ? AND params LIKE ? LIMIT 1`, [
        p.id,
        p.url,
        `%${JSON.stringify(["MessageSid", p.messageSid]).slice(1, -1)}%`,
      ])) !== null,
    claimPost: async (id: number, owner: string) =>
      (await db.run("UPDATE twilio_post SET claimed_by = ? WHERE id = ? AND claimed_by IS NULL", [owner, id])).changes === 1,
    /** Made (or given up): gone; false when it was gone already (erased meanwhile). */
    removePost: async (id: number) => (await db.run("DELETE FROM twilio_post WHERE id = ?", [id])).changes === 1,
    retryPost: async (id: number, nextAt: number, error: string) =>
      void (await db.run("UPDATE twilio_post SET claimed_by = NULL, attempts = attempts + 1, next_at = ?, last_error = ? WHERE id = ?", [
        nextAt,
        error,
        id,
      ])),
    /** Posts a stopped (or dead) server had under way go back to waiting; how many. */
    releaseAbandoned: async (now: number, abandoned: (column: string) => string) =>
      (await db.run(`UPDATE twilio_post SET claimed_by = NULL WHERE claimed_by IS NOT NULL AND ${abandoned("claimed_by")}`, [now])).changes,
    /** Erasure: the posts about a phone number. */
    erasePeer: async (workspaceId: number, phone: string) =>
      (await db.run("DELETE FROM twilio_post WHERE workspace_id = ? AND peer = ?", [workspaceId, phone])).changes,

    /** A message received in the workspace (a thread's inbound message), or null. */
    async received(workspaceId: number, id: number): Promise<ReceivedRow | null> {
      const r = await db.get<ReceivedRow>(
        `SELECT m.id, t.peer, m.body, m.device_id AS "deviceId", m.at, t.channel FROM thread_message m JOIN thread t ON t.id = m.thread_id
         WHERE t.workspace_id = ? AND m.id = ? AND m.direction = 'inbound'`,
        [workspaceId, id],
      );
      return r && { ...r, id: Number(r.id), deviceId: r.deviceId === null ? null : Number(r.deviceId), at: Number(r.at) };
    },
    setToken: async (workspaceId: number, sealed: string, now: number) =>
      void (await db.run("UPDATE twilio_account SET auth_token = ?, updated_at = ? WHERE workspace_id = ?", [sealed, now, workspaceId])),

    async message(workspaceId: number, id: number): Promise<MessageRow | null> {
      const row = await db.get<MessageRow>(
        `SELECT ${MESSAGE} FROM notification n LEFT JOIN device d ON d.id = n.device_id WHERE n.workspace_id = ? AND n.id = ?`,
        [workspaceId, id],
      );
      return row ? message(row) : null;
    },
    /** Newest first, at most `limit`. */
    async messages(workspaceId: number, f: MessageFilters, limit: number): Promise<MessageRow[]> {
      const where = ["n.workspace_id = ?"];
      const args: SqlParam[] = [workspaceId];
      const and = (clause: string, value: SqlParam) => {
        where.push(clause);
        args.push(value);
      };
      if (f.to !== undefined) and("n.recipient = ?", f.to);
      if (f.from !== undefined) and("d.phone_number = ?", f.from);
      if (f.sentFrom !== undefined) and("n.sent_at >= ?", f.sentFrom);
      if (f.sentTo !== undefined) and("n.sent_at < ?", f.sentTo);
      if (f.before !== undefined) and("n.id < ?", f.before);
      const rows = await db.all<MessageRow>(
        `SELECT ${MESSAGE} FROM notification n LEFT JOIN device d ON d.id = n.device_id WHERE ${where.join(" AND ")} ORDER BY n.id DESC LIMIT ?`,
        [...args, limit],
      );
      return rows.map(message);
    },
  };
}

export type TwilioRepository = ReturnType<typeof createTwilioRepository>;
