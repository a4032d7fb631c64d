// The verify_service, verification and verification_send queries: a workspace's Verify services,
// the verifications of a service (the latest pending one for a number), the sends the fraud limits
// count, and the masking of a code's message once its channel has taken it.
import type { Executor } from "../../db/storage";

export interface ServiceRow {
  id: number;
  workspaceId: number;
  name: string;
  codeLength: number;
  ttlSeconds: number;
  poolId: number | null;
  chatappTemplateId: number | null;
  perNumberLimit: number;
  prefixHourlyBudget: number;
  createdAt: number;
  updatedAt: number;
}

export type VerificationStatus = "pending" | "approved" | "canceled" | "expired";

export interface VerificationRow {
  id: number;
  serviceId: number;
  workspaceId: number;
  recipient: string;
  channel: string;
  /** Sealed. */
  code: string;
  status: VerificationStatus;
  checks: number;
  expiresAt: number;
  createdAt: number;
  updatedAt: number;
}

export interface SendRow {
  at: number;
  channel: string;
  notificationId: number | null;
}

const SERVICE = `id, workspace_id AS "workspaceId", name, code_length AS "codeLength", ttl_seconds AS "ttlSeconds", pool_id AS "poolId",
  chatapp_template_id AS "chatappTemplateId", per_number_limit AS "perNumberLimit", prefix_hourly_budget AS "prefixHourlyBudget",
  created_at AS "createdAt", updated_at AS "updatedAt"`;
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const service = (r: ServiceRow): ServiceRow => ({
  ...r,
  id: Number(r.id),
  workspaceId: Number(r.workspaceId),
  codeLength: Number(r.codeLength),
  ttlSeconds: Number(r.ttlSeconds),
  poolId: num(r.poolId),
  chatappTemplateId: num(r.chatappTemplateId),
  perNumberLimit: Number(r.perNumberLimit),
  prefixHourlyBudget: Number(r.prefixHourlyBudget),
  createdAt: Number(r.createdAt),
  updatedAt: Number(r.updatedAt),
});

const VERIFICATION = `id, service_id AS "serviceId", workspace_id AS "workspaceId", recipient, channel, code, status, checks,
  expires_at AS "expiresAt", created_at AS "createdAt", updated_at AS "updatedAt"`;
const verification = (r: VerificationRow): VerificationRow => ({
  ...r,
  id: Number(r.id),
  serviceId: Number(r.serviceId),
  workspaceId: Number(r.workspaceId),
  checks: Number(r.checks),
  expiresAt: Number(r.expiresAt),
  createdAt: Number(r.createdAt),
  updatedAt: Number(r.updatedAt),
});

/** The fields of a service a create or update writes. */
export type ServiceFields = Omit<ServiceRow, "id" | "workspaceId" | "createdAt">;
const FIELDS = [
  ["name", "name"],
  ["codeLength", "code_length"],
  ["ttlSeconds", "ttl_seconds"],
  ["poolId", "pool_id"],
  ["chatappTemplateId", "chatapp_template_id"],
  ["perNumberLimit", "per_number_limit"],
  ["prefixHourlyBudget", "prefix_hourly_budget"],
  ["updatedAt", "updated_at"],
] as const;

export function createVerifyRepository(db: Executor) {
  return {
    async services(workspaceId: number): Promise<ServiceRow[]> {
      return (await db.all<ServiceRow>(`SELECT ${SERVICE} FROM verify_service WHERE workspace_id = ? ORDER BY id`, [workspaceId])).map(
        service,
      );
    },
    async service(workspaceId: number, id: number): Promise<ServiceRow | null> {
      const r = await db.get<ServiceRow>(`SELECT ${SERVICE} FROM verify_service WHERE workspace_id = ? AND id = ?`, [workspaceId, id]);
      return r ? service(r) : null;
    },
    countServices: async (workspaceId: number) =>
      Number((await db.get<{ n: number }>("SELECT count(*) AS n FROM verify_service WHERE workspace_id = ?", [workspaceId]))?.n ?? 0),
    async insertService(workspaceId: number, f: ServiceFields, now: number): Promise<number> {
      const row = await db.get<{ id: number }>(
        `INSERT INTO verify_service (workspace_id, ${FIELDS.map(([, c]) => c).join(", ")}, created_at)
         VALUES (?, ${FIELDS.map(() => "?").join(", ")}, ?) RETURNING id`,
        [workspaceId, ...FIELDS.map(([k]) => f[k]), now],
      );
      return Number(row!.id);
    },
    async updateService(id: number, f: ServiceFields): Promise<void> {
      await db.run(`UPDATE verify_service SET ${FIELDS.map(([, c]) => `${c} = ?`).join(", ")} WHERE id = ?`, [
        ...FIELDS.map(([k]) => f[k]),
        id,
      ]);
    },
    /** The service with its verifications and their sends. */
    async removeService(id: number): Promise<void> {
      await db.run("DELETE FROM verification_send WHERE service_id = ?", [id]);
      await db.run("DELETE FROM verification WHERE service_id = ?", [id]);
      await db.run("DELETE FROM verify_service WHERE id = ?", [id]);
    },

    async verification(workspaceId: number, id: number): Promise<VerificationRow | null> {
      const r = await db.get<VerificationRow>(`SELECT ${VERIFICATION} FROM verification WHERE workspace_id = ? AND id = ?`, [
        workspaceId,
        id,
      ]);
      return r ? verification(r) : null;
    },
    /**
     * Holds the service's row until the unit of work ends, so that its sends are counted and its
     * verifications found one start at a time. SQLite's units of work already run one at a time.
     */
    async lockService(id: number): Promise<void> {
      if (db.dialect === "postgres") await db.get("SELECT id FROM verify_service WHERE id = ? FOR UPDATE", [id]);
    },
    /** The number's newest pending verification of the service, if any. */
    async pendingFor(serviceId: number, recipient: string): Promise<VerificationRow | null> {
      const r = await db.get<VerificationRow>(
        `SELECT ${VERIFICATION} FROM verification WHERE service_id = ? AND recipient = ? AND status = 'pending' ORDER BY id DESC LIMIT 1`,
        [serviceId, recipient],
      );
      return r ? verification(r) : null;
    },
    async insertVerification(v: Omit<VerificationRow, "id" | "checks">): Promise<number> {
      const row = await db.get<{ id: number }>(
        `INSERT INTO verification (service_id, workspace_id, recipient, channel, code, status, checks, expires_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?) RETURNING id`,
        [v.serviceId, v.workspaceId, v.recipient, v.channel, v.code, v.status, v.expiresAt, v.createdAt, v.updatedAt],
      );
      return Number(row!.id);
    },
    setStatus: async (id: number, status: VerificationStatus, now: number) =>
      void (await db.run("UPDATE verification SET status = ?, updated_at = ? WHERE id = ?", [status, now, id])),
    /** One more check made; the count after it (a check counts only while the verification is pending). */
    async countCheck(id: number, now: number): Promise<number> {
      const row = await db.get<{ checks: number }>(
        "UPDATE verification SET checks = checks + 1, updated_at = ? WHERE id = ? AND status = 'pending' RETURNING checks",
        [now, id],
      );
      return Number(row?.checks ?? Number.MAX_SAFE_INTEGER);
    },
    setChannel: async (id: number, channel: string, now: number) =>
      void (await db.run("UPDATE verification SET channel = ?, updated_at = ? WHERE id = ?", [channel, now, id])),

    async insertSend(s: { verificationId: number; serviceId: number; recipient: string; prefix: string; channel: string; at: number }) {
      await db.run(
        "INSERT INTO verification_send (verification_id, service_id, recipient, prefix, channel, notification_id, at) VALUES (?, ?, ?, ?, ?, NULL, ?)",
        [s.verificationId, s.serviceId, s.recipient, s.prefix, s.channel, s.at],
      );
    },
    /** The send just recorded for a verification gets the notification that carries it. */
    setSendNotification: async (verificationId: number, notificationId: number) =>
      void (await db.run(
        "UPDATE verification_send SET notification_id = ? WHERE id = (SELECT max(id) FROM verification_send WHERE verification_id = ?)",
        [notificationId, verificationId],
      )),
    sendsOf: async (verificationId: number): Promise<SendRow[]> =>
      (
        await db.all<SendRow>(
          `SELECT at, channel, notification_id AS "notificationId" FROM verification_send WHERE verification_id = ? ORDER BY id`,
          [verificationId],
        )
      ).map((r) => ({ ...r, at: Number(r.at), notificationId: num(r.notificationId) })),
    sendsToSince: async (serviceId: number, recipient: string, since: number) =>
      Number(
        (
          await db.get<{ n: number }>("SELECT count(*) AS n FROM verification_send WHERE service_id = ? AND recipient = ? AND at > ?", [
            serviceId,
            recipient,
            since,
          ])
        )?.n ?? 0,
      ),
    sendsToPrefixSince: async (serviceId: number, prefix: string, since: number) =>
      Number(
        (
          await db.get<{ n: number }>("SELECT count(*) AS n FROM verification_send WHERE service_id = ? AND prefix = ? AND at > ?", [
            serviceId,
            prefix,
            since,
          ])
        )?.n ?? 0,
      ),

    /** Of `ids`, the notifications that carry a code, with that code (sealed). */
    async codeCarriers(ids: readonly number[]): Promise<{ notificationId: number; code: string }[]> {
      if (ids.length === 0) return [];
      const rows = await db.all<{ notificationId: number; code: string }>(
        `SELECT s.notification_id AS "notificationId", v.code FROM verification_send s JOIN verification v ON v.id = s.verification_id
         WHERE s.notification_id IN (${ids.map(() => "?").join(", ")})`,
        [...ids],
      );
      return rows.map((r) => ({ notificationId: Number(r.notificationId), code: r.code }));
    },
    /** A code's message, its template values, its thread message and its thread's preview, shown masked from now on. */
    async mask(notificationId: number, text: string, vars: Record<string, string> | null, code: string, masked: string): Promise<void> {
      await db.run(
        `UPDATE thread SET last_message_preview = replace(last_message_preview, ?, ?)
         WHERE id IN (SELECT thread_id FROM thread_message WHERE notification_id = ?)`,
        [code, masked, notificationId],
      );
      await db.run("UPDATE notification SET message = ?, template_vars = ? WHERE id = ?", [
        text,
        vars === null ? null : JSON.stringify(vars),
        notificationId,
      ]);
      await db.run("UPDATE thread_message SET body = ? WHERE notification_id = ?", [text, notificationId]);
    },
    notificationText: async (id: number) =>
      await db.get<{ message: string; vars: string | null }>(`SELECT message, template_vars AS vars FROM notification WHERE id = ?`, [id]),

    /** What no limit or check needs any more: sends older than `sendsBefore`, verifications done before `doneBefore`. */
    async prune(sendsBefore: number, doneBefore: number): Promise<void> {
      await db.run(
        `DELETE FROM verification_send WHERE at < ? OR verification_id IN (SELECT id FROM verification WHERE updated_at < ? AND (status <> 'pending' OR expires_at < ?))`,
        [sendsBefore, doneBefore, doneBefore],
      );
      await db.run(
        "DELETE FROM verification WHERE updated_at < ? AND (status <> 'pending' OR expires_at < ?) AND id NOT IN (SELECT verification_id FROM verification_send)",
        [doneBefore, doneBefore],
      );
    },
  };
}

export type VerifyRepository = ReturnType<typeof createVerifyRepository>;
