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
}

export interface NewMember {
  deviceId: number;
  simNumber: number | null;
  number: string | null;
  paused: boolean;
}

const POOL = `id, workspace_id AS "workspaceId", name, strategy, geomatch, is_default AS "isDefault", created_at AS "createdAt", updated_at AS "updatedAt"`;
const MEMBER = `id, pool_id AS "poolId", device_id AS "deviceId", sim_number AS "simNumber", number, position, paused`;

const pool = (r: PoolRow | null): PoolRow | null =>
  r && {
    ...r,
    id: Number(r.id),
    workspaceId: Number(r.workspaceId),
    geomatch: Boolean(Number(r.geomatch)),
    isDefault: Boolean(Number(r.isDefault)),
  };
const member = (r: MemberRow): MemberRow => ({
  ...r,
  id: Number(r.id),
  poolId: Number(r.poolId),
  deviceId: Number(r.deviceId),
  simNumber: r.simNumber === null ? null : Number(r.simNumber),
  position: Number(r.position),
  paused: Boolean(Number(r.paused)),
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
    members: async (poolId: number): Promise<MemberRow[]> =>
      (await db.all<MemberRow>(`SELECT ${MEMBER} FROM pool_member WHERE pool_id = ? ORDER BY position, id`, [poolId])).map(member),

    async insert(p: Omit<PoolRow, "id">): Promise<number> {
      const row = await db.get<{ id: number }>(
        "INSERT INTO pool (workspace_id, name, strategy, geomatch, is_default, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
        [p.workspaceId, p.name, p.strategy, p.geomatch ? 1 : 0, p.isDefault ? 1 : 0, p.createdAt, p.updatedAt],
      );
      return Number(row!.id);
    },
    async update(p: PoolRow): Promise<void> {
      await db.run("UPDATE pool SET name = ?, strategy = ?, geomatch = ?, is_default = ?, updated_at = ? WHERE id = ?", [
        p.name,
        p.strategy,
        p.geomatch ? 1 : 0,
        p.isDefault ? 1 : 0,
        p.updatedAt,
        p.id,
      ]);
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
          await db.run("DELETE FROM pool_member WHERE id = ?", [m.id]);
        }
      for (const [position, m] of members.entries()) {
        const id = kept.get(key(m.deviceId, m.simNumber));
        if (id !== undefined)
          await db.run("UPDATE pool_member SET number = ?, position = ?, paused = ? WHERE id = ?", [
            m.number,
            position,
            m.paused ? 1 : 0,
            id,
          ]);
        else
          await db.run("INSERT INTO pool_member (pool_id, device_id, sim_number, number, position, paused) VALUES (?, ?, ?, ?, ?, ?)", [
            poolId,
            m.deviceId,
            m.simNumber,
            m.number,
            position,
            m.paused ? 1 : 0,
          ]);
      }
    },
    async remove(poolId: number): Promise<void> {
      await db.run("DELETE FROM pool_sticky WHERE pool_id = ?", [poolId]);
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
          `SELECT m.id, m.pool_id AS "poolId", m.device_id AS "deviceId", m.sim_number AS "simNumber", m.number, m.position, m.paused
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
