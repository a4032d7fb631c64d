// The `lease` table: each server's own lease (`server:<id>`) and the cluster leader's (`leader`).
import type { Executor } from "../db/storage";

const RENEW =
  "INSERT INTO lease (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at";

export function createLeaseRepository(db: Executor) {
  return {
    /** Holds `name` for `holder` until `until`, whoever held it. */
    renew: async (name: string, holder: string, until: number) => void (await db.run(RENEW, [name, holder, until])),
    /** Takes or renews `name` for `holder` when it is free, expired (before `now`) or already theirs; false otherwise. */
    take: async (name: string, holder: string, until: number, now: number): Promise<boolean> =>
      (await db.run(`${RENEW} WHERE lease.holder = excluded.holder OR lease.expires_at < ?`, [name, holder, until, now])).changes === 1,
    /** Every lease `holder` holds, given up. */
    release: async (holder: string) => void (await db.run("DELETE FROM lease WHERE holder = ?", [holder])),
  };
}

/**
 * SQL true for a claim whose server (its id in `column`) holds no live `server:` lease; its one
 * parameter is now. On a database only one server uses, every claim is that server's to take.
 */
export function abandonedClaim(column: string, shared: boolean): string {
  return shared
    ? `(${column} IS NULL OR NOT EXISTS (SELECT 1 FROM lease WHERE lease.name = 'server:' || ${column} AND lease.expires_at >= ?))`
    : "(? IS NOT NULL)";
}
