// The rate_counter table (PostgreSQL): the sliding windows every server shares. `admit` is one
// call of the pigeon_admit function, so checking and counting happen together under its locks.
import type { Executor } from "../../db/storage";

export interface Window {
  bucket: string;
  /** The slot to count in (a second, or a day). */
  slot: number;
  /** The first slot the window counts. */
  since: number;
  limit: number;
  /** When the counted slot may be forgotten. */
  expiresAt: number;
}

export interface Admission {
  admitted: boolean;
  /** Each window's count (after counting, when admitted and counted). */
  used: number[];
  /** Each window's oldest counted slot, or null when it is empty. */
  oldest: (number | null)[];
  /** The database's cache generation when the call began (src/lib/generation-cache.ts). */
  generation: number;
}

export function createRateCounterRepository(db: Executor) {
  const array = (values: (string | number)[]) =>
    `{${values.map((v) => (typeof v === "string" ? JSON.stringify(v) : String(v))).join(",")}}`;
  return {
    /**
     * Whether every window has room; when they all do, requests are counted in the windows that
     * `count` names (true: one in all of them; an array: a flag or an amount a window). A window
     * has room for an amount when its count plus the amount stays within its limit; one only
     * checked (false, 0), while its count is below its limit (migration 0012).
     */
    async admit(windows: Window[], count: boolean | (boolean | number)[]): Promise<Admission> {
      const amounts = windows.map((_, i) => {
        const c = Array.isArray(count) ? count[i] : count;
        return typeof c === "number" ? c : c ? 1 : 0;
      });
      const row = await db.get<{
        admitted: boolean | number;
        used: (number | string)[];
        oldest: (number | string | null)[];
        generation: number | string;
      }>(
        // With the database's cache generation as it stood when the statement began (see
        // src/lib/generation-cache.ts): 0 until the first change has made its row.
        `SELECT admitted, used, oldest,
           (SELECT coalesce(max(value::bigint), 0) FROM instance_setting WHERE name = 'cache_generation') AS generation
         FROM pigeon_admit(?::text[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::integer[])`,
        [
          array(windows.map((w) => w.bucket)),
          array(windows.map((w) => w.slot)),
          array(windows.map((w) => w.since)),
          array(windows.map((w) => w.limit)),
          array(windows.map((w) => w.expiresAt)),
          array(amounts),
        ],
      );
      return {
        admitted: row!.admitted === true || row!.admitted === 1,
        used: row!.used.map(Number),
        oldest: row!.oldest.map((o) => (o === null ? null : Number(o))),
        generation: Number(row!.generation),
      };
    },
    /** Counts one in `bucket`'s `slot`, whatever its count. */
    count: async (bucket: string, slot: number, expiresAt: number) =>
      void (await db.run(
        `INSERT INTO rate_counter (bucket, slot, n, expires_at) VALUES (?, ?, 1, ?)
         ON CONFLICT (bucket, slot) DO UPDATE SET n = rate_counter.n + 1, expires_at = greatest(rate_counter.expires_at, excluded.expires_at)`,
        [bucket, slot, expiresAt],
      )),
    /** Forgets what expired before `now`; returns how many slots. */
    prune: async (now: number): Promise<number> => (await db.run("DELETE FROM rate_counter WHERE expires_at < ?", [now])).changes,
  };
}
