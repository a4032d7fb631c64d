// Device queries, on the storage seam. Every read is scoped by workspace: a key never sees another
// workspace's rows. Rows leave this file as the schema's records (src/db/records.ts), with the
// provider credentials and the phone's signing key opened.
import type { Executor, SqlParam } from "../../db/storage";
import { tableRecords } from "../../db/records";
import { device } from "./schema";
import { openConfig, sealConfig, type SecretBox } from "../../lib/secrets";
import type { DeviceRow } from "./model";

export type NewDevice = typeof device.$inferInsert;

const records = tableRecords(device);
const COLUMNS = records.columns();
const LIVE = "workspace_id = ? AND deleted_at IS NULL";
const STATUS_FILTER = { any: "", active: " AND status = 'active'", inactive: " AND status = 'inactive'" } as const;
const marks = (ids: readonly unknown[]) => ids.map(() => "?").join(", ");

export function createDeviceRepository(db: Executor, box: SecretBox) {
  // Provider credentials and the phone's signing key are sealed in the table (lib/secrets.ts):
  // sealed on the way in, opened on the way out, so callers only ever see the plain values.
  const reveal = (raw: Record<string, unknown>): DeviceRow => {
    const row = records.record(raw);
    return {
      ...row,
      config: openConfig(box, row.config),
      webhookKey: row.webhookKey === null ? null : box.open(row.webhookKey),
      encryptionPassphrase: row.encryptionPassphrase === null ? null : box.open(row.encryptionPassphrase),
    };
  };
  const seal = <T extends Partial<NewDevice>>(row: T): T => ({
    ...row,
    ...(row.config !== undefined ? { config: sealConfig(box, row.config) } : {}),
    ...(typeof row.webhookKey === "string" ? { webhookKey: box.isSealed(row.webhookKey) ? row.webhookKey : box.seal(row.webhookKey) } : {}),
    ...(typeof row.encryptionPassphrase === "string" ? { encryptionPassphrase: box.seal(row.encryptionPassphrase) } : {}),
  });
  const many = async (sql: string, params: SqlParam[]) => (await db.all<Record<string, unknown>>(sql, params)).map(reveal);
  const one = async (sql: string, params: SqlParam[]) => {
    const row = await db.get<Record<string, unknown>>(sql, params);
    return row ? reveal(row) : null;
  };
  const count = async (sql: string, params: SqlParam[]) => Number((await db.get<{ n: number }>(sql, params))?.n ?? 0);

  return {
    async list(workspaceId: number, opts: { status?: "active" | "inactive"; offset: number; limit: number }) {
      const where = `${LIVE}${STATUS_FILTER[opts.status ?? "any"]}`;
      return {
        rows: await many(`SELECT ${COLUMNS} FROM device WHERE ${where} ORDER BY id LIMIT ? OFFSET ?`, [
          workspaceId,
          opts.limit,
          opts.offset,
        ]),
        total: await count(`SELECT count(*) AS n FROM device WHERE ${where}`, [workspaceId]),
      };
    },

    all(workspaceId: number, includeInactive: boolean): Promise<DeviceRow[]> {
      const where = `${LIVE}${includeInactive ? "" : STATUS_FILTER.active}`;
      return many(`SELECT ${COLUMNS} FROM device WHERE ${where} ORDER BY id`, [workspaceId]);
    },

    get: (workspaceId: number, deviceId: number): Promise<DeviceRow | null> =>
      one(`SELECT ${COLUMNS} FROM device WHERE ${LIVE} AND id = ?`, [workspaceId, deviceId]),

    /** Any workspace's live device, for the worker and channel callbacks. */
    byId: (deviceId: number): Promise<DeviceRow | null> =>
      one(`SELECT ${COLUMNS} FROM device WHERE id = ? AND deleted_at IS NULL`, [deviceId]),
    /** Several live devices by id (those that exist), in one statement. */
    byIds: (ids: readonly number[]): Promise<DeviceRow[]> =>
      ids.length === 0
        ? Promise.resolve([])
        : many(`SELECT ${COLUMNS} FROM device WHERE id IN (${ids.map(() => "?").join(", ")}) AND deleted_at IS NULL`, [...ids]),

    /**
     * Any workspace's device, deleted or not: a provider may still report on messages a deleted
     * device sent, and those reports are the truth about them.
     */
    everById: (deviceId: number): Promise<DeviceRow | null> => one(`SELECT ${COLUMNS} FROM device WHERE id = ?`, [deviceId]),

    /** Records contact with the device (a phone's request, a provider's success). */
    async touch(deviceId: number, now: number): Promise<void> {
      await db.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [now, deviceId]);
    },

    getMany(workspaceId: number, ids: number[]): Promise<DeviceRow[]> {
      if (ids.length === 0) return Promise.resolve([]);
      return many(`SELECT ${COLUMNS} FROM device WHERE ${LIVE} AND id IN (${marks(ids)}) ORDER BY id`, [workspaceId, ...ids]);
    },

    /** Inserts the rows in order; call inside a unit of work to have all or none. */
    async insertMany(rows: NewDevice[]): Promise<DeviceRow[]> {
      const out: DeviceRow[] = [];
      for (const r of rows) {
        const insert = records.insert(seal(r));
        out.push(reveal((await db.get<Record<string, unknown>>(insert.sql, insert.params))!));
      }
      return out;
    },

    async update(deviceId: number, set: Partial<NewDevice>): Promise<DeviceRow> {
      const assign = records.assign(seal(set));
      if (assign.params.length === 0) return (await one(`SELECT ${COLUMNS} FROM device WHERE id = ?`, [deviceId]))!;
      return (await one(`UPDATE device SET ${assign.sql} WHERE id = ? RETURNING ${COLUMNS}`, [...assign.params, deviceId]))!;
    },

    async softDelete(workspaceId: number, ids: number[], now: number): Promise<void> {
      if (ids.length === 0) return;
      await db.run(`UPDATE device SET deleted_at = ?, updated_at = ?, token_hash = NULL WHERE ${LIVE} AND id IN (${marks(ids)})`, [
        now,
        now,
        workspaceId,
        ...ids,
      ]);
    },

    setStatus(workspaceId: number, ids: number[], status: "active" | "inactive", now: number): Promise<DeviceRow[]> {
      if (ids.length === 0) return Promise.resolve([]);
      return many(`UPDATE device SET status = ?, updated_at = ? WHERE ${LIVE} AND id IN (${marks(ids)}) RETURNING ${COLUMNS}`, [
        status,
        now,
        workspaceId,
        ...ids,
      ]);
    },

    /** Notification counts by status for one device. */
    async statusCounts(deviceId: number): Promise<Record<string, number>> {
      const rows = await db.all<{ status: string; n: number }>(
        "SELECT status, count(*) AS n FROM notification WHERE device_id = ? GROUP BY status",
        [deviceId],
      );
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    },

    /** Finished notifications since `since`: how many, and how many of them failed. */
    async outcomesSince(deviceId: number, from: number): Promise<{ finished: number; failed: number }> {
      const row = await db.get<{ finished: number; failed: number }>(
        `SELECT count(*) AS finished, coalesce(sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), 0) AS failed
         FROM notification WHERE device_id = ? AND status IN ('sent', 'delivered', 'failed') AND created_at >= ?`,
        [deviceId, from],
      );
      return { finished: Number(row?.finished ?? 0), failed: Number(row?.failed ?? 0) };
    },

    /** SMS this device was asked to carry since `since` (cancelled and failed ones do not count). */
    smsCountSince: (deviceId: number, from: number): Promise<number> =>
      count(
        `SELECT count(*) AS n FROM notification
         WHERE device_id = ? AND delivery_type = 'sms' AND status IN ('pending', 'sent', 'delivered') AND created_at >= ?`,
        [deviceId, from],
      ),

    /** Messages handed to the device since `since`, for its per-minute pacing window. */
    dispatchedSince: (deviceId: number, from: number): Promise<number> =>
      count("SELECT count(*) AS n FROM notification WHERE device_id = ? AND dispatched_at >= ?", [deviceId, from]),
  };
}

export type DeviceRepository = ReturnType<typeof createDeviceRepository>;
