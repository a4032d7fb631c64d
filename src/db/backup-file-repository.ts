// What `pigeon restore` reads of a backup file before it trusts it (src/db/restore.ts): SQLite's own
// integrity check, the tables it holds and how many migrations its schema has had. Raw SQLite, on
// a read-only connection to a file that is not (yet) any server's database.
import type { Database } from "bun:sqlite";

export function createBackupFileRepository(db: Database) {
  return {
    /** "ok", or the first problem SQLite's integrity check found; throws when the file is no database. */
    integrity: (): string => (db.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check,
    tables: (): Set<string> =>
      new Set((db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name)),
    /** Rows of drizzle's migration journal: one a migration applied. */
    migrationsApplied: (): number => (db.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number }).n,
  };
}
