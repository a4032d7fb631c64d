// The pool, pool_member and pool_sticky queries: pools with their members, the member a recipient
// keeps, and how many messages wait on each member (its device, and SIM when the member names one).
import type { Executor } from "../../db/storage";

export type PoolStrategy = "sticky" | "round_robin" | "least_loaded";

export interface PoolRow {
  id: number;
  workspaceId: number;
  name: string;
  strategy: PoolStrategy;
  geomatch: boolean;
  isDefault: boolean;
  failureThreshold: number;
  failureBackoffSeconds: number;
  createdAt: number;
  updatedAt: number;
}

export interface MemberRow {
  id: number;
  poolId: number;
  deviceId: number;
  simNumber: number | null;
  number: string | null;
  position: number;
  paused: boolean;
  dailyLimit: number | null;
  monthlyLimit: number | null;
  countSegments: boolean;
  monthlyUniqueRecipients: number | null;
  consecutiveFailures: number;
  pausedUntil: number | null;
  backoffSeconds: number | null;
}

export type NewMember = Omit<MemberRow, "id" | "poolId" | "position" | "consecutiveFailures" | "pausedUntil" | "backoffSeconds"> & {
  /** Lift a pause that carrier failures put on it. */
  resume?: boolean;
};

/** What a member sent today and this month (UTC), and whether it texted the recipient asked about this month. */
export interface MemberUsage {
  dayMessages: number;
  daySegments: number;
  monthMessages: number;
  monthSegments: number;
  uniqueRecipients: number;
  knowsRecipient: boolean;
}

const POOL = `id, workspace_id AS "workspaceId", name, strategy, geomatch, is_default AS "isDefault",
  failure_threshold AS "failureThreshold", failure_backoff_seconds AS "failureBackoffSeconds", created_at AS "createdAt", updated_at AS "updatedAt"`;
const MEMBER_COLUMNS = (m: string) =>
  `${m}id, ${m}pool_id AS "poolId", ${m}device_id AS "deviceId", ${m}sim_number AS "simNumber", ${m}number, ${m}position, ${m}paused,
   ${m}daily_limit AS "dailyLimit", ${m}monthly_limit AS "monthlyLimit", ${m}count_segments AS "countSegments",
   ${m}monthly_unique_recipients AS "monthlyUniqueRecipients", ${m}consecutive_failures AS "consecutiveFailures",
   ${m}paused_until AS "pausedUntil", ${m}backoff_seconds AS "backoffSeconds"`;
const MEMBER = MEMBER_COLUMNS("");
const orNull = (v: number | null) => (v === null ? null : Number(v));

const pool = (r: PoolRow | null): PoolRow | null =>
  r && {
    ...r,
    id: Number(r.id),
    workspaceId: Number(r.workspaceId),
    geomatch: Boolean(Number(r.geomatch)),
    isDefault: Boolean(Number(r.isDefault)),
    failureThreshold: Number(r.failureThreshold),
    failureBackoffSeconds: Number(r.failureBackoffSeconds),
  };
const member = (r: MemberRow): MemberRow => ({
  ...r,
  id: Number(r.id),
  poolId: Number(r.poolId),
  deviceId: Number(r.deviceId),
  simNumber: orNull(r.simNumber),
  position: Number(r.position),
  paused: Boolean(Number(r.paused)),
  dailyLimit: orNull(r.dailyLimit),
  monthlyLimit: orNull(r.monthlyLimit),
  countSegments: Boolean(Number(r.countSegments)),
  monthlyUniqueRecipients: orNull(r.monthlyUniqueRecipients),
  consecutiveFailures: Number(r.consecutiveFailures),
  pausedUntil: orNull(r.pausedUntil),
  backoffSeconds: orNull(r.backoffSeconds),
});

export function createPoolRepository(db: Executor) {
  return {
    get: async (workspaceId: number, id: number): Promise<PoolRow | null> =>
      pool(await db.get<PoolRow>(`SELECT ${POOL} FROM pool WHERE workspace_id = ? AND id = ?`, [workspaceId, id])),
    byName: async (workspaceId: number, name: string): Promise<PoolRow | null> =>
      pool(await db.get<PoolRow>(`SELECT ${POOL} FROM pool WHERE workspace_id = ? AND name = ?`, [workspaceId, name])),
    defaultOf: async (workspaceId: number): Promise<PoolRow | null> =>
      pool(await db.get<PoolRow>(`SELECT ${POOL} FROM pool WHERE workspace_id = ? AND is_default = 1 ORDER BY id LIMIT 1`, [workspaceId])),
    list: async (workspaceId: number): Promise<PoolRow[]> =>
      (await db.all<PoolRow>(`SELECT ${POOL} FROM pool WHERE workspace_id = ? ORDER BY id`, [workspaceId])).map((r) => pool(r)!),
    /** The numbers given to the workspace's pool members, with the device and SIM each stands for. */
    memberNumbers: async (workspaceId: number): Promise<{ deviceId: number; simNumber: number | null; number: string }[]> =>
      (
        await db.all<{ deviceId: number; simNumber: number | null; number: string }>(
          `SELECT m.device_id AS "deviceId", m.sim_number AS "simNumber", m.number FROM pool_member m JOIN pool p ON p.id = m.pool_id
           WHERE p.workspace_id = ? AND m.number IS NOT NULL ORDER BY m.id`,
          [workspaceId],
        )
      ).map((r) => ({ deviceId: Number(r.deviceId), simNumber: orNull(r.simNumber), number: r.number })),
    members: async (poolId: number): Promise<MemberRow[]> =>
      (await db.all<MemberRow>(`SELECT ${MEMBER} FROM pool_member WHERE pool_id = ? ORDER BY position, id`, [poolId])).map(member),

    async insert(p: Omit<PoolRow, "id">): Promise<number> {
      const row = await db.get<{ id: number }>(
        `INSERT INTO pool (workspace_id, name, strategy, geomatch, is_default, failure_threshold, failure_backoff_seconds, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
        [
          p.workspaceId,
          p.name,
          p.strategy,
          p.geomatch ? 1 : 0,
          p.isDefault ? 1 : 0,
          p.failureThreshold,
          p.failureBackoffSeconds,
          p.createdAt,
          p.updatedAt,
        ],
      );
      return Number(row!.id);
    },
    async update(p: PoolRow): Promise<void> {
      await db.run(
        "UPDATE pool SET name = ?, strategy = ?, geomatch = ?, is_default = ?, failure_threshold = ?, failure_backoff_seconds = ?, updated_at = ? WHERE id = ?",
        [p.name, p.strategy, p.geomatch ? 1 : 0, p.isDefault ? 1 : 0, p.failureThreshold, p.failureBackoffSeconds, p.updatedAt, p.id],
      );
    },
    /** No other pool of the workspace is its default. */
    async clearDefault(workspaceId: number, except: number): Promise<void> {
      await db.run("UPDATE pool SET is_default = 0 WHERE workspace_id = ? AND id <> ? AND is_default = 1", [workspaceId, except]);
    },
    /** Replaces a pool's members; a recipient kept by a member that is no longer there chooses again. */
    async replaceMembers(poolId: number, members: NewMember[]): Promise<void> {
      const old = await db.all<{ id: number; deviceId: number; simNumber: number | null }>(
        'SELECT id, device_id AS "deviceId", sim_number AS "simNumber" FROM pool_member WHERE pool_id = ?',
        [poolId],
      );
      const key = (deviceId: number, sim: number | null) => `${Number(deviceId)}:${sim === null ? "" : Number(sim)}`;
      const kept = new Map(old.map((m) => [key(m.deviceId, m.simNumber), Number(m.id)]));
      const wanted = new Set(members.map((m) => key(m.deviceId, m.simNumber)));
      for (const m of old)
        if (!wanted.has(key(m.deviceId, m.simNumber))) {
          await db.run("DELETE FROM pool_sticky WHERE pool_id = ? AND member_id = ?", [poolId, m.id]);
          await db.run("DELETE FROM pool_usage WHERE member_id = ?", [m.id]);
          await db.run("DELETE FROM pool_recipient WHERE member_id = ?", [m.id]);
          await db.run("DELETE FROM pool_member WHERE id = ?", [m.id]);
        }
      for (const [position, m] of members.entries()) {
        const id = kept.get(key(m.deviceId, m.simNumber));
        const caps = [m.dailyLimit, m.monthlyLimit, m.countSegments ? 1 : 0, m.monthlyUniqueRecipients];
        if (id !== undefined)
          await db.run(
            `UPDATE pool_member SET number = ?, position = ?, paused = ?, daily_limit = ?, monthly_limit = ?, count_segments = ?,
               monthly_unique_recipients = ?, paused_until = CASE WHEN ? = 1 THEN NULL ELSE paused_until END,
               consecutive_failures = CASE WHEN ? = 1 THEN 0 ELSE consecutive_failures END WHERE id = ?`,
            [m.number, position, m.paused ? 1 : 0, ...caps, m.resume ? 1 : 0, m.resume ? 1 : 0, id],
          );
        else
          await db.run(
            `INSERT INTO pool_member (pool_id, device_id, sim_number, number, position, paused, daily_limit, monthly_limit, count_segments,
               monthly_unique_recipients) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            [poolId, m.deviceId, m.simNumber, m.number, position, m.paused ? 1 : 0, ...caps],
          );
      }
    },
    /** What each member sent in `day` and `month` (`2026-11-26`, `2026-11`), and whether it texted `recipient` this month. */
    async usage(memberIds: number[], day: string, month: string, recipient: string | null): Promise<Map<number, MemberUsage>> {
      const out = new Map<number, MemberUsage>();
      for (const id of memberIds)
        out.set(id, { dayMessages: 0, daySegments: 0, monthMessages: 0, monthSegments: 0, uniqueRecipients: 0, knowsRecipient: false });
      if (memberIds.length === 0) return out;
      const marks = memberIds.map(() => "?").join(", ");
      for (const r of await db.all<{ memberId: number; period: string; messages: number; segments: number }>(
        `SELECT member_id AS "memberId", period, messages, segments FROM pool_usage WHERE member_id IN (${marks}) AND period IN (?, ?)`,
        [...memberIds, `d:${day}`, `m:${month}`],
      )) {
        const u = out.get(Number(r.memberId))!;
        if (r.period.startsWith("d:")) [u.dayMessages, u.daySegments] = [Number(r.messages), Number(r.segments)];
        else [u.monthMessages, u.monthSegments] = [Number(r.messages), Number(r.segments)];
      }
      for (const r of await db.all<{ memberId: number; n: number }>(
        `SELECT member_id AS "memberId", count(*) AS n FROM pool_recipient WHERE member_id IN (${marks}) AND month = ? GROUP BY member_id`,
        [...memberIds, month],
      ))
        out.get(Number(r.memberId))!.uniqueRecipients = Number(r.n);
      if (recipient !== null)
        for (const r of await db.all<{ memberId: number }>(
          `SELECT member_id AS "memberId" FROM pool_recipient WHERE member_id IN (${marks}) AND month = ? AND recipient = ?`,
          [...memberIds, month, recipient],
        ))
          out.get(Number(r.memberId))!.knowsRecipient = true;
      return out;
    },
    /** Counts a message sent through a member. */
    async addUsage(memberId: number, day: string, month: string, segments: number, recipient: string): Promise<void> {
      for (const period of [`d:${day}`, `m:${month}`])
        await db.run(
          `INSERT INTO pool_usage (member_id, period, messages, segments) VALUES (?, ?, 1, ?)
           ON CONFLICT (member_id, period) DO UPDATE SET messages = pool_usage.messages + 1, segments = pool_usage.segments + excluded.segments`,
          [memberId, period, segments],
        );
      await db.run("INSERT INTO pool_recipient (member_id, month, recipient) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [
        memberId,
        month,
        recipient,
      ]);
    },

    /** Every device that is a member of some pool (carrier outcomes of the others need no look). */
    memberDevices: async (): Promise<number[]> =>
      (await db.all<{ deviceId: number }>('SELECT DISTINCT device_id AS "deviceId" FROM pool_member')).map((r) => Number(r.deviceId)),
    /** One more carrier failure in a row; the count now. */
    failed: async (memberId: number): Promise<number> =>
      Number(
        (await db.get<{ n: number }>(
          "UPDATE pool_member SET consecutive_failures = consecutive_failures + 1 WHERE id = ? RETURNING consecutive_failures AS n",
          [memberId],
        ))!.n,
      ),
    async pause(memberId: number, until: number, backoffSeconds: number): Promise<void> {
      await db.run("UPDATE pool_member SET paused_until = ?, backoff_seconds = ?, consecutive_failures = 0 WHERE id = ?", [
        until,
        backoffSeconds,
        memberId,
      ]);
    },
    /** A message went out: the failures in a row and the back-off start again (written only when there is something to clear). */
    async succeeded(memberIds: number[]): Promise<void> {
      if (memberIds.length === 0) return;
      await db.run(
        `UPDATE pool_member SET consecutive_failures = 0, backoff_seconds = NULL
         WHERE id IN (${memberIds.map(() => "?").join(", ")}) AND (consecutive_failures > 0 OR backoff_seconds IS NOT NULL)`,
        memberIds,
      );
    },
    /** Members whose pause ended by `now`: their pause is cleared, and they are returned. */
    resumeDue: async (now: number): Promise<(MemberRow & { workspaceId: number })[]> =>
      (
        await db.all<MemberRow & { workspaceId: number }>(
          `UPDATE pool_member SET paused_until = NULL WHERE paused_until IS NOT NULL AND paused_until <= ?
           RETURNING ${MEMBER}, (SELECT workspace_id FROM pool WHERE pool.id = pool_member.pool_id) AS "workspaceId"`,
          [now],
        )
      ).map((r) => ({ ...member(r), workspaceId: Number(r.workspaceId) })),

    async remove(poolId: number): Promise<void> {
      await db.run("DELETE FROM pool_sticky WHERE pool_id = ?", [poolId]);
      const members = "SELECT id FROM pool_member WHERE pool_id = ?";
      await db.run(`DELETE FROM pool_usage WHERE member_id IN (${members})`, [poolId]);
      await db.run(`DELETE FROM pool_recipient WHERE member_id IN (${members})`, [poolId]);
      await db.run("DELETE FROM pool_member WHERE pool_id = ?", [poolId]);
      await db.run("DELETE FROM pool WHERE id = ?", [poolId]);
    },

    sticky: async (poolId: number, recipient: string): Promise<number | null> => {
      const row = await db.get<{ memberId: number }>(
        'SELECT member_id AS "memberId" FROM pool_sticky WHERE pool_id = ? AND recipient = ?',
        [poolId, recipient],
      );
      return row ? Number(row.memberId) : null;
    },
    async stick(poolId: number, recipient: string, memberId: number, at: number): Promise<void> {
      await db.run(
        `INSERT INTO pool_sticky (pool_id, recipient, member_id, at) VALUES (?, ?, ?, ?)
         ON CONFLICT (pool_id, recipient) DO UPDATE SET member_id = excluded.member_id, at = excluded.at`,
        [poolId, recipient, memberId, at],
      );
    },
    /** The workspace's pool members on a device (an inbound message to it makes its sender stick to them). */
    membersOnDevice: async (workspaceId: number, deviceId: number): Promise<MemberRow[]> =>
      (
        await db.all<MemberRow>(
          `SELECT ${MEMBER_COLUMNS("m.")}
           FROM pool_member m JOIN pool p ON p.id = m.pool_id WHERE p.workspace_id = ? AND m.device_id = ? ORDER BY m.id`,
          [workspaceId, deviceId],
        )
      ).map(member),

    /** Messages waiting (pending, not yet with their channel) on each of these devices, by SIM. */
    waiting: async (deviceIds: number[]): Promise<{ deviceId: number; simNumber: number | null; n: number }[]> =>
      deviceIds.length === 0
        ? []
        : (
            await db.all<{ deviceId: number; simNumber: number | null; n: number }>(
              `SELECT device_id AS "deviceId", sim_number AS "simNumber", count(*) AS n FROM notification
               WHERE device_id IN (${deviceIds.map(() => "?").join(", ")}) AND status = 'pending' AND stage = 'queued'
               GROUP BY device_id, sim_number`,
              deviceIds,
            )
          ).map((r) => ({ deviceId: Number(r.deviceId), simNumber: r.simNumber === null ? null : Number(r.simNumber), n: Number(r.n) })),
  };
}

export type PoolRepository = ReturnType<typeof createPoolRepository>;
