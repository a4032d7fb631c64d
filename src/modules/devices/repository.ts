// Device queries. Every read is scoped by workspace: a key never sees another workspace's rows.
import { and, asc, count, eq, gte, inArray, isNull, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { device, notification } from "../../db/schema";

export type DeviceRow = typeof device.$inferSelect;
export type NewDevice = typeof device.$inferInsert;

const live = (workspaceId: number) => and(eq(device.workspaceId, workspaceId), isNull(device.deletedAt));

export function createDeviceRepository(db: Db) {
  return {
    list(workspaceId: number, opts: { status?: "active" | "inactive"; offset: number; limit: number }) {
      const where = opts.status ? and(live(workspaceId), eq(device.status, opts.status)) : live(workspaceId);
      const rows = db.select().from(device).where(where).orderBy(asc(device.id)).limit(opts.limit).offset(opts.offset).all();
      const total = db.select({ n: count() }).from(device).where(where).get()!.n;
      return { rows, total };
    },

    all(workspaceId: number, includeInactive: boolean): DeviceRow[] {
      const where = includeInactive ? live(workspaceId) : and(live(workspaceId), eq(device.status, "active"));
      return db.select().from(device).where(where).orderBy(asc(device.id)).all();
    },

    get(workspaceId: number, id: number): DeviceRow | null {
      return db.select().from(device).where(and(live(workspaceId), eq(device.id, id))).get() ?? null;
    },

    /** Any workspace's live device, for the worker and channel callbacks. */
    byId(id: number): DeviceRow | null {
      return db.select().from(device).where(and(eq(device.id, id), isNull(device.deletedAt))).get() ?? null;
    },

    /** Records contact with the device (a phone's request, a provider's success). */
    touch(id: number, now: number): void {
      db.update(device).set({ lastSeenAt: now }).where(eq(device.id, id)).run();
    },

    getMany(workspaceId: number, ids: number[]): DeviceRow[] {
      return db.select().from(device).where(and(live(workspaceId), inArray(device.id, ids))).all();
    },

    transaction<T>(fn: () => T): T {
      return db.transaction(() => fn());
    },

    insertMany(rows: NewDevice[]): DeviceRow[] {
      return db.transaction((tx) => rows.map((r) => tx.insert(device).values(r).returning().get()));
    },

    softDelete(workspaceId: number, ids: number[], now: number): void {
      db.update(device)
        .set({ deletedAt: now, updatedAt: now, tokenHash: null })
        .where(and(live(workspaceId), inArray(device.id, ids)))
        .run();
    },

    setStatus(workspaceId: number, ids: number[], status: "active" | "inactive", now: number): DeviceRow[] {
      return db
        .update(device)
        .set({ status, updatedAt: now })
        .where(and(live(workspaceId), inArray(device.id, ids)))
        .returning()
        .all();
    },

    /** Notification counts by status for one device. */
    statusCounts(deviceId: number): Record<string, number> {
      const rows = db
        .select({ status: notification.status, n: count() })
        .from(notification)
        .where(eq(notification.deviceId, deviceId))
        .groupBy(notification.status)
        .all();
      return Object.fromEntries(rows.map((r) => [r.status, r.n]));
    },

    /** Finished notifications since `since`: how many, and how many of them failed. */
    outcomesSince(deviceId: number, since: number): { finished: number; failed: number } {
      const row = db
        .select({
          finished: sql<number>`count(*)`,
          failed: sql<number>`coalesce(sum(${notification.status} = 'failed'), 0)`,
        })
        .from(notification)
        .where(
          and(
            eq(notification.deviceId, deviceId),
            inArray(notification.status, ["sent", "delivered", "failed"]),
            gte(notification.createdAt, since),
          ),
        )
        .get()!;
      return { finished: row.finished, failed: row.failed };
    },

    /** SMS this device was asked to carry since `since` (cancelled and failed ones do not count). */
    smsCountSince(deviceId: number, since: number): number {
      return db
        .select({ n: count() })
        .from(notification)
        .where(
          and(
            eq(notification.deviceId, deviceId),
            eq(notification.deliveryType, "sms"),
            inArray(notification.status, ["pending", "sent", "delivered"]),
            gte(notification.createdAt, since),
          ),
        )
        .get()!.n;
    },

    /** Messages handed to the device since `since`, for its per-minute pacing window. */
    dispatchedSince(deviceId: number, since: number): number {
      return db
        .select({ n: count() })
        .from(notification)
        .where(and(eq(notification.deviceId, deviceId), gte(notification.dispatchedAt, since)))
        .get()!.n;
    },
  };
}

export type DeviceRepository = ReturnType<typeof createDeviceRepository>;
