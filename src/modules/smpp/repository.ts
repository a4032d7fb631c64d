// The SMPP module's reads and writes (smpp_credential, smpp_origin, smpp_outbox), through the
// storage seam's executor.
import type { Executor } from "../../db/storage";

export interface CredentialRow {
  workspaceId: number;
  systemId: string;
  /** Sealed. */
  password: string;
  keyId: number | null;
  /** Sealed. */
  keySecret: string | null;
  /** 0/1 (a bigint or a number, by back end). */
  incoming: number | boolean;
  createdAt: number;
  rotatedAt: number;
}

export interface OriginRow {
  notificationId: number;
  workspaceId: number;
  systemId: string;
  registeredDelivery: number;
  parts: number;
  /** JSON: { source, destination } addresses. */
  addresses: string;
  createdAt: number;
}

export interface OutboxEntry {
  id: number;
  workspaceId: number;
  systemId: string;
  kind: "receipt" | "message";
  body: string;
  attempts: number;
  createdAt: number;
}

const CREDENTIAL = `workspace_id AS "workspaceId", system_id AS "systemId", password, key_id AS "keyId", key_secret AS "keySecret",
  incoming, created_at AS "createdAt", rotated_at AS "rotatedAt"`;
const ORIGIN = `notification_id AS "notificationId", workspace_id AS "workspaceId", system_id AS "systemId",
  registered_delivery AS "registeredDelivery", parts, addresses, created_at AS "createdAt"`;
const OUTBOX = `id, workspace_id AS "workspaceId", system_id AS "systemId", kind, body, attempts, created_at AS "createdAt"`;

export function createSmppRepository(db: Executor) {
  // PostgreSQL's bigint columns come back as strings: the numbers are made numbers again.
  const num = <T extends object>(row: T | null, ...keys: (keyof T)[]): T | null => {
    if (!row) return row;
    const r = row as Record<string, unknown>;
    for (const k of keys as string[]) if (r[k] !== null && r[k] !== undefined) r[k] = Number(r[k]);
    return row;
  };
  return {
    credential: async (workspaceId: number) =>
      num(
        await db.get<CredentialRow>(`SELECT ${CREDENTIAL} FROM smpp_credential WHERE workspace_id = ?`, [workspaceId]),
        "workspaceId",
        "keyId",
      ),
    bySystemId: async (systemId: string) =>
      num(await db.get<CredentialRow>(`SELECT ${CREDENTIAL} FROM smpp_credential WHERE system_id = ?`, [systemId]), "workspaceId", "keyId"),
    async putCredential(row: CredentialRow): Promise<void> {
      await db.run(
        `INSERT INTO smpp_credential (workspace_id, system_id, password, key_id, key_secret, incoming, created_at, rotated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (workspace_id) DO UPDATE SET system_id = excluded.system_id, password = excluded.password,
           key_id = excluded.key_id, key_secret = excluded.key_secret, incoming = excluded.incoming, rotated_at = excluded.rotated_at`,
        [row.workspaceId, row.systemId, row.password, row.keyId, row.keySecret, row.incoming ? 1 : 0, row.createdAt, row.rotatedAt],
      );
    },

    async recordOrigin(row: OriginRow): Promise<void> {
      await db.run(
        `INSERT INTO smpp_origin (notification_id, workspace_id, system_id, registered_delivery, parts, addresses, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (notification_id) DO NOTHING`,
        [row.notificationId, row.workspaceId, row.systemId, row.registeredDelivery, row.parts, row.addresses, row.createdAt],
      );
    },
    origin: async (notificationId: number) =>
      num(
        await db.get<OriginRow>(`SELECT ${ORIGIN} FROM smpp_origin WHERE notification_id = ?`, [notificationId]),
        "notificationId",
        "workspaceId",
        "registeredDelivery",
        "parts",
        "createdAt",
      ),

    /** Queues a deliver_sm; false when its cause was queued before. */
    async enqueue(e: { workspaceId: number; systemId: string; kind: OutboxEntry["kind"]; dedupeKey: string; body: string }, now: number) {
      const done = await db.run(
        `INSERT INTO smpp_outbox (workspace_id, system_id, kind, dedupe_key, body, attempts, next_at, created_at)
         VALUES (?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING`,
        [e.workspaceId, e.systemId, e.kind, e.dedupeKey, e.body, now, now],
      );
      return done.changes > 0;
    },

    /**
     * Takes up to `limit` due entries of `systemId` for `server` until `until`: those nobody holds,
     * or whose holder's lease has passed. Oldest first.
     */
    async claim(systemId: string, server: string, now: number, until: number, limit: number): Promise<OutboxEntry[]> {
      const rows = await db.all<OutboxEntry>(
        `UPDATE smpp_outbox SET claimed_by = ?, claimed_until = ?
         WHERE id IN (SELECT id FROM smpp_outbox WHERE system_id = ? AND next_at <= ? AND (claimed_until IS NULL OR claimed_until < ?)
           ORDER BY id LIMIT ?)
         RETURNING ${OUTBOX}`,
        [server, until, systemId, now, now, limit],
      );
      return rows
        .map((r) => ({ ...r, id: Number(r.id), workspaceId: Number(r.workspaceId), attempts: Number(r.attempts) }))
        .sort((a, b) => a.id - b.id);
    },
    async delivered(id: number): Promise<void> {
      await db.run("DELETE FROM smpp_outbox WHERE id = ?", [id]);
    },
    /** Gives an entry back for a later try (no answer, or the ESME refused it). */
    async retryLater(id: number, nextAt: number): Promise<void> {
      await db.run("UPDATE smpp_outbox SET attempts = attempts + 1, next_at = ?, claimed_by = NULL, claimed_until = NULL WHERE id = ?", [
        nextAt,
        id,
      ]);
    },
    /** Entries a stopped (or dead) server had taken go back to waiting at once; how many. */
    releaseAbandoned: async (now: number, abandoned: (column: string) => string) =>
      (
        await db.run(
          `UPDATE smpp_outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by IS NOT NULL AND ${abandoned("claimed_by")}`,
          [now],
        )
      ).changes,
    /** Lets go of what `server` holds (a bind closed before it could send them). */
    async release(server: string, ids: number[]): Promise<void> {
      if (ids.length === 0) return;
      await db.run(
        `UPDATE smpp_outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ? AND id IN (${ids.map(() => "?").join(", ")})`,
        [server, ...ids],
      );
    },
    /** Entries waiting, by kind (for /metrics). */
    waiting: async () =>
      (await db.all<{ kind: string; n: number }>("SELECT kind, COUNT(*) AS n FROM smpp_outbox GROUP BY kind")).map((r) => ({
        kind: r.kind,
        n: Number(r.n),
      })),
    /** Forgets entries and origins older than the given instants. */
    async prune(outboxBefore: number, originsBefore: number): Promise<number> {
      const a = await db.run("DELETE FROM smpp_outbox WHERE created_at < ?", [outboxBefore]);
      const b = await db.run("DELETE FROM smpp_origin WHERE created_at < ?", [originsBefore]);
      return a.changes + b.changes;
    },
  };
}

export type SmppRepository = ReturnType<typeof createSmppRepository>;
