// A full disk is not an internal error: SQLite says SQLITE_FULL, the client is told 507
// storage_full (nothing was stored), and /health reports it until the disk takes writes again.
import { statfsSync } from "node:fs";
import type { Clock } from "../clock";

/** True for SQLite's "database or disk is full" (SQLITE_FULL), whichever way it surfaces. */
export function isDiskFull(error: unknown): boolean {
  if (!error || typeof error !== "object") return false;
  const e = error as { code?: unknown; message?: unknown };
  return e.code === "SQLITE_FULL" || (typeof e.message === "string" && /database or disk is full/i.test(e.message));
}

/**
 * How long after a failed write /health believes it without checking: within this, the failure is
 * the freshest word on the disk. After it, /health checks for itself (see `stillFull`).
 */
export const FULL_TRUSTED_MS = 5_000;

/** Free space below which the data directory's file system counts as full without a write being tried. */
export const MIN_FREE_BYTES = 1024 * 1024;

export interface DiskMonitorDeps {
  clock: Clock;
  /** The data directory, whose file system's free space is read; null for an in-memory database. */
  dataDir: string | null;
  /** A small committed write; rejects when the disk refuses it. */
  probeWrite: () => Promise<void>;
}

/**
 * Whether writes are failing for lack of space, and when they last did. Full from the first
 * SQLITE_FULL until a write succeeds again: any commit (`markWritten`), or, when /health asks and
 * nothing has been written for a while, a probe write of its own, tried once the file system shows
 * free space. So a server taken out of a load balancer's rotation, which gets no writes, still
 * reports its recovery; `lastFullAt` stays as history.
 */
export function createDiskMonitor(deps: DiskMonitorDeps) {
  const { clock } = deps;
  let lastFullAt: number | null = null;
  let full = false;

  function freeBytes(): number | null {
    if (deps.dataDir === null) return null;
    try {
      const stats = statfsSync(deps.dataDir);
      return stats.bavail * stats.bsize;
    } catch {
      return null;
    }
  }

  return {
    markFull(): void {
      full = true;
      lastFullAt = clock.now();
    },
    /** A write was committed: the disk takes writes. */
    markWritten(): void {
      full = false;
    },
    /** When writes last failed for lack of space, if ever (history, not the state). */
    lastFullAt: (): number | null => lastFullAt,
    /** Whether writes are failing now; past FULL_TRUSTED_MS since the failure, checked by a probe write. */
    async stillFull(): Promise<boolean> {
      if (!full || lastFullAt === null || clock.now() - lastFullAt < FULL_TRUSTED_MS) return full;
      const free = freeBytes();
      if (free !== null && free < MIN_FREE_BYTES) return true;
      try {
        await deps.probeWrite();
        full = false;
      } catch (error) {
        if (!isDiskFull(error)) throw error;
        lastFullAt = clock.now();
      }
      return full;
    },
  };
}

export type DiskMonitor = ReturnType<typeof createDiskMonitor>;
