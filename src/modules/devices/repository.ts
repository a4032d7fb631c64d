// Device queries. Every read is scoped by workspace: a key never sees another workspace's rows.
// Queries that run per request or per message are prepared once (drizzle's builder would compile
// the SQL again on every call).
import { and, asc, count, eq, gte, inArray, isNull, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { device, notification } from "../../db/schema";
import { openConfig, sealConfig, type SecretBox } from "../../lib/secrets";

export type DeviceRow = typeof device.$inferSelect;
export type NewDevice = typeof device.$inferInsert;

const ws = sql.placeholder("ws");
const id = sql.placeholder("id");
const since = sql.placeholder("since");
const live = and(eq(device.workspaceId, ws), isNull(device.deletedAt));
const liveActive = and(live, eq(device.status, "active"));

export function createDeviceRepository(db: Db, box: SecretBox) {
  // Provider credentials and the phone's signing key are sealed in the table (lib/secrets.ts):
  // sealed on the way in, opened on the way out, so callers only ever see the plain values.
  const reveal = (row: DeviceRow): DeviceRow => ({
    ...row,
    config: openConfig(box, row.config),
    webhookKey: row.webhookKey === null ? null : box.open(row.webhookKey),
  });
  const seal = <T extends Partial<NewDevice>>(row: T): T => ({
    ...row,
    ...(row.config !== undefined ? { config: sealConfig(box, row.config) } : {}),
    ...(typeof row.webhookKey === "string" ? { webhookKey: box.isSealed(row.webhookKey) ? row.webhookKey : box.seal(row.webhookKey) } : {}),
  });
  const byStatus = (status: "active" | "inactive") => and(live, eq(device.status, status));
  const listQuery = (where: ReturnType<typeof and>) => ({
    rows: db
      .select()
      .from(device)
      .where(where)
      .orderBy(asc(device.id))
      .limit(sql.placeholder("limit"))
      .offset(sql.placeholder("offset"))
      .prepare(),
    total: db.select({ n: count() }).from(device).where(where).prepare(),
  });
  const lists = { any: listQuery(live), active: listQuery(byStatus("active")), inactive: listQuery(byStatus("inactive")) };
  const allLive = db.select().from(device).where(live).orderBy(asc(device.id)).prepare();
  const allActive = db.select().from(device).where(liveActive).orderBy(asc(device.id)).prepare();
  const getOne = db
    .select()
    .from(device)
    .where(and(live, eq(device.id, id)))
    .prepare();
  const getById = db
    .select()
    .from(device)
    .where(and(eq(device.id, id), isNull(device.deletedAt)))
    .prepare();
  const getEverById = db.select().from(device).where(eq(device.id, id)).prepare();
  const touch = db
    .update(device)
    .set({ lastSeenAt: sql`${sql.placeholder("now")}` })
    .where(eq(device.id, id))
    .prepare();
  const statusCounts = db
    .select({ status: notification.status, n: count() })
    .from(notification)
    .where(eq(notification.deviceId, id))
    .groupBy(notification.status)
    .prepare();
  const outcomes = db
    .select({ finished: sql<number>`count(*)`, failed: sql<number>`coalesce(sum(${notification.status} = 'failed'), 0)` })
    .from(notification)
    .where(
      and(eq(notification.deviceId, id), inArray(notification.status, ["sent", "delivered", "failed"]), gte(notification.createdAt, since)),
    )
    .prepare();
  const smsSince = db
    .select({ n: count() })
    .from(notification)
    .where(
      and(
        eq(notification.deviceId, id),
        eq(notification.deliveryType, "sms"),
        inArray(notification.status, ["pending", "sent", "delivered"]),
        gte(notification.createdAt, since),
      ),
    )
    .prepare();
  const dispatched = db
    .select({ n: count() })
    .from(notification)
    .where(and(eq(notification.deviceId, id), gte(notification.dispatchedAt, since)))
    .prepare();

  return {
    list(workspaceId: number, opts: { status?: "active" | "inactive"; offset: number; limit: number }) {
      const q = lists[opts.status ?? "any"];
      return {
        rows: q.rows.all({ ws: workspaceId, limit: opts.limit, offset: opts.offset }).map(reveal),
        total: q.total.get({ ws: workspaceId })!.n,
      };
    },

    all(workspaceId: number, includeInactive: boolean): DeviceRow[] {
      return (includeInactive ? allLive : allActive).all({ ws: workspaceId }).map(reveal);
    },

    get(workspaceId: number, deviceId: number): DeviceRow | null {
      const row = getOne.get({ ws: workspaceId, id: deviceId });
      return row ? reveal(row) : null;
    },

    /** Any workspace's live device, for the worker and channel callbacks. */
    byId(deviceId: number): DeviceRow | null {
      const row = getById.get({ id: deviceId });
      return row ? reveal(row) : null;
    },

    /**
     * Any workspace's device, deleted or not: a provider may still report on messages a deleted
     * device sent, and those reports are the truth about them.
     */
    everById(deviceId: number): DeviceRow | null {
      const row = getEverById.get({ id: deviceId });
      return row ? reveal(row) : null;
    },

    /** Records contact with the device (a phone's request, a provider's success). */
    touch(deviceId: number, now: number): void {
      touch.run({ id: deviceId, now });
    },

    getMany(workspaceId: number, ids: number[]): DeviceRow[] {
      return db
        .select()
        .from(device)
        .where(and(eq(device.workspaceId, workspaceId), isNull(device.deletedAt), inArray(device.id, ids)))
        .all()
        .map(reveal);
    },

    transaction<T>(fn: () => T): T {
      return db.transaction(() => fn());
    },

    insertMany(rows: NewDevice[]): DeviceRow[] {
      return db.transaction((tx) => rows.map((r) => reveal(tx.insert(device).values(seal(r)).returning().get())));
    },

    update(deviceId: number, set: Partial<NewDevice>): DeviceRow {
      return reveal(db.update(device).set(seal(set)).where(eq(device.id, deviceId)).returning().get());
    },

    softDelete(workspaceId: number, ids: number[], now: number): void {
      db.update(device)
        .set({ deletedAt: now, updatedAt: now, tokenHash: null })
        .where(and(eq(device.workspaceId, workspaceId), isNull(device.deletedAt), inArray(device.id, ids)))
        .run();
    },

    setStatus(workspaceId: number, ids: number[], status: "active" | "inactive", now: number): DeviceRow[] {
      return db
        .update(device)
        .set({ status, updatedAt: now })
        .where(and(eq(device.workspaceId, workspaceId), isNull(device.deletedAt), inArray(device.id, ids)))
        .returning()
        .all()
        .map(reveal);
    },

    /** Notification counts by status for one device. */
    statusCounts(deviceId: number): Record<string, number> {
      return Object.fromEntries(statusCounts.all({ id: deviceId }).map((r) => [r.status, r.n]));
    },

    /** Finished notifications since `since`: how many, and how many of them failed. */
    outcomesSince(deviceId: number, from: number): { finished: number; failed: number } {
      const row = outcomes.get({ id: deviceId, since: from })!;
      return { finished: row.finished, failed: row.failed };
    },

    /** SMS this device was asked to carry since `since` (cancelled and failed ones do not count). */
    smsCountSince(deviceId: number, from: number): number {
      return smsSince.get({ id: deviceId, since: from })!.n;
    },

    /** Messages handed to the device since `since`, for its per-minute pacing window. */
    dispatchedSince(deviceId: number, from: number): number {
      return dispatched.get({ id: deviceId, since: from })!.n;
    },
  };
}

export type DeviceRepository = ReturnType<typeof createDeviceRepository>;
