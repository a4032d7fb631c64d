// Scheduled backups (PIGEON_BACKUP_DIR, _EVERY, _KEEP; SQLite only). The copy itself is
// `pigeon backup --out`, run as a child process of this server: SQLite's VACUUM INTO is one
// synchronous call that would hold this server's event loop for as long as the copy takes, while
// the child reads the database beside it (WAL) and the server goes on answering. Each backup is
// written under a temporary name and renamed when whole, so a file with a backup's name is always
// complete; the newest `keep` are kept. The first is taken at start when none in the directory is
// younger than the interval; one that fails is tried again after at most five minutes.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../../clock";
import { iso } from "../../lib/time";

const NAME = /^pigeon-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z\.db$/;
const RETRY_MS = 5 * 60_000;

/** A backup's file name, from the time it was taken: sorts as its time does. */
export function backupName(at: number): string {
  return `pigeon-${new Date(at).toISOString().replace(/[-:]/g, "").replace(".", "")}.db`;
}

function takenAt(name: string): number | null {
  const m = NAME.exec(name);
  return m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], +m[7]) : null;
}

export interface BackupStatus {
  dir: string;
  every_hours: number;
  keep: number;
  last_success_at: string | null;
  age_seconds: number | null;
  last_error: string | null;
}

export function createBackupSchedule(deps: {
  dir: string;
  everyHours: number;
  keep: number;
  clock: Clock;
  log: (message: string, error?: unknown) => void;
  /** Writes a consistent copy of the database to `out` (mode 0600); throws when it could not. */
  take: (out: string) => Promise<void>;
}) {
  const interval = deps.everyHours * 3_600_000;
  // A directory that cannot be read or made is reported by the attempts, not at construction.
  const names = (): string[] => {
    try {
      return readdirSync(deps.dir);
    } catch {
      return [];
    }
  };
  const existing = () =>
    names()
      .flatMap((name) => {
        const at = takenAt(name);
        return at === null ? [] : [{ name, at }];
      })
      .sort((a, b) => a.at - b.at);
  // Read from the directory on first use (a server's first tick or /health), not when a CLI
  // command builds its services.
  let lastSuccessAt: number | null = null;
  let lastError: string | null = null;
  let nextAt: number | null = null;
  let running: Promise<void> | null = null;
  const due = (): number => {
    if (nextAt === null) {
      lastSuccessAt = existing().at(-1)?.at ?? null;
      // The first at start unless one in the directory is younger than the interval.
      nextAt = lastSuccessAt === null ? deps.clock.now() : lastSuccessAt + interval;
    }
    return nextAt;
  };

  /** Deletes all but the newest `keep`, and what a backup cut off by a stop left half written. */
  function rotate(): void {
    const all = existing();
    for (const { name } of all.slice(0, Math.max(0, all.length - deps.keep))) rmSync(join(deps.dir, name), { force: true });
    for (const name of names()) if (name.endsWith(".partial")) rmSync(join(deps.dir, name), { force: true });
  }

  async function takeOne(now: number): Promise<void> {
    const name = backupName(now);
    const partial = join(deps.dir, `${name}.partial`);
    try {
      mkdirSync(deps.dir, { recursive: true, mode: 0o700 });
      await deps.take(partial);
      renameSync(partial, join(deps.dir, name));
      lastSuccessAt = now;
      lastError = null;
      nextAt = now + interval;
      rotate();
      deps.log(
        `backup written to ${join(deps.dir, name)} (${statSync(join(deps.dir, name)).size} bytes); the newest ${deps.keep} are kept`,
      );
    } catch (error) {
      if (existsSync(partial)) rmSync(partial, { force: true });
      lastError = (error as Error).message;
      nextAt = now + Math.min(interval, RETRY_MS);
      deps.log(`scheduled backup into ${deps.dir} failed; trying again at ${iso(nextAt)}`, error);
    }
  }

  return {
    /** backups:schedule, every second: takes a backup when one is due (one at a time). */
    tick(): Promise<void> | undefined {
      const now = deps.clock.now();
      if (running || now < due()) return running ?? undefined;
      running = takeOne(now).finally(() => {
        running = null;
      });
      return running;
    },
    status(): BackupStatus {
      due();
      const now = deps.clock.now();
      return {
        dir: deps.dir,
        every_hours: deps.everyHours,
        keep: deps.keep,
        last_success_at: iso(lastSuccessAt),
        age_seconds: lastSuccessAt === null ? null : Math.max(0, Math.floor((now - lastSuccessAt) / 1000)),
        last_error: lastError,
      };
    },
  };
}
