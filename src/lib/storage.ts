// A full disk is not an internal error: SQLite says SQLITE_FULL, the client is told 507
// storage_full (nothing was stored), and /health reports it until writes have gone quiet.
import type { Clock } from "../clock";

/** True for SQLite's "database or disk is full" (SQLITE_FULL), whichever way it surfaces. */
export function isStorageFull(error: unknown): boolean {
  if (!error || typeof error !== "object") return false;
  const e = error as { code?: unknown; message?: unknown };
  return e.code === "SQLITE_FULL" || (typeof e.message === "string" && /database or disk is full/i.test(e.message));
}

/** How long /health keeps saying "full" after the last write that failed for lack of space. */
export const FULL_REPORT_MS = 60_000;

export function createStorageMonitor(clock: Clock) {
  let lastFullAt: number | null = null;
  return {
    markFull(): void {
      lastFullAt = clock.now();
    },
    /** The time of the last SQLITE_FULL if it was recent enough to still be the state of things. */
    fullSince(): number | null {
      return lastFullAt !== null && clock.now() - lastFullAt < FULL_REPORT_MS ? lastFullAt : null;
    },
  };
}

export type StorageMonitor = ReturnType<typeof createStorageMonitor>;
