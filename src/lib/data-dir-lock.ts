// One server per data directory: two would run two workers over one database and send the same
// message twice. `pigeon.lock` holds the owner's pid and the kernel's start time for that pid; it
// is put in place with link(2), which fails if the name exists, so of two servers starting at once
// only one gets it, and nobody ever sees a half-written lock. A lock left behind
// by a server that was SIGKILLed (or a machine that lost power) names a process that no longer
// exists, or a pid that now belongs to a process started later: either way it is stale and taken
// over. CLI commands never take the lock; SQLite's own locking keeps them safe beside a server.
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const LOCK_FILE = "pigeon.lock";

export interface DataDirLock {
  path: string;
  release(): void;
}

export class DataDirLocked extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`another Pigeon server (pid ${pid}) is already using the data directory ${dataDir}`);
  }
}

/** The kernel's start time of a process (Linux), so a reused pid is not taken for the old owner. */
export function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start after the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether `pid` is alive and, when its start time was recorded, still the process that recorded it. */
export function isSameProcess(pid: number, started: string | null): boolean {
  if (!isAlive(pid)) return false;
  const now = startTimeOf(pid);
  return started === null || now === null || now === started;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"; // alive, someone else's
  }
}

interface Owner {
  pid: number;
  started: string | null;
}

function readOwner(path: string): Owner | null {
  try {
    const [pid, started] = readFileSync(path, "utf8").trim().split(/\s+/);
    const n = Number(pid);
    return Number.isInteger(n) && n > 0 ? { pid: n, started: started || null } : null;
  } catch {
    return null;
  }
}

function holds(owner: Owner): boolean {
  if (owner.pid === process.pid) return false; // our own leftover (a pid reused inside a container)
  if (!isAlive(owner.pid)) return false;
  const now = startTimeOf(owner.pid);
  return owner.started === null || now === null || now === owner.started;
}

/** The pid of the live server holding the data directory's lock, or null when none does. */
export function lockHolder(dataDir: string): number | null {
  const owner = readOwner(join(dataDir, LOCK_FILE));
  if (!owner || !isAlive(owner.pid)) return null;
  const started = startTimeOf(owner.pid);
  return owner.started === null || started === null || started === owner.started ? owner.pid : null;
}

/** Takes the data directory's lock, or throws DataDirLocked naming the server that holds it. */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  const content = `${process.pid} ${startTimeOf(process.pid) ?? ""}\n`;
  const mine = `${path}.${process.pid}.tmp`;
  writeFileSync(mine, content, { mode: 0o600 });
  try {
    for (let tries = 0; tries < 5; tries++) {
      try {
        placeExclusively(mine, path, content);
        return ownLock(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const owner = readOwner(path);
      if (owner && holds(owner)) throw new DataDirLocked(dataDir, owner.pid);
      clearStale(path, owner);
    }
  } finally {
    unlinkSync(mine);
  }
  const owner = readOwner(path);
  throw new DataDirLocked(dataDir, owner?.pid ?? 0);
}

function ownLock(path: string): DataDirLock {
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      // Only our own file: never remove a lock another server took over.
      if (readOwner(path)?.pid === process.pid) unlinkSync(path);
    },
  };
}

/**
 * Moves a stale lock aside (rename is atomic: of two servers clearing it at once, one gets it). If
 * what was moved is not the stale lock we judged — another server took over in between — it is
 * put back.
 */
function clearStale(path: string, stale: Owner | null): void {
  const aside = `${path}.stale-${process.pid}`;
  try {
    renameSync(path, aside);
  } catch {
    return; // gone already
  }
  const moved = readOwner(aside);
  if (moved && stale && moved.pid !== stale.pid) {
    try {
      linkSync(aside, path);
    } catch {
      /* a third server holds it now; ours was not the live one anyway */
    }
  }
  unlinkSync(aside);
}

/** link(2) where the file system has hard links; O_EXCL creation where it has not (some mounts). */
function placeExclusively(prepared: string, path: string, content: string): void {
  try {
    linkSync(prepared, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw error;
    writeFileSync(path, content, { flag: "wx", mode: 0o600 });
  }
}
