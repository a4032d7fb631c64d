// What the health check, the full-disk monitor and the backup command ask of the database itself.
// The ping and the probe write go through the storage seam; the backup is SQLite's own VACUUM
// INTO, which no transaction may wrap, so it keeps the driver (a PostgreSQL database is backed up
// with its own tools, pg_dump).
import type { SqliteHandle } from "../../db/client";
import type { Executor } from "../../db/storage";

export function createSystemRepository(db: Executor, sqlite: SqliteHandle | null) {
  return {
    /** Runs a trivial query; rejects when the database does not answer. */
    ping: async (): Promise<void> => {
      await db.get("SELECT 1 AS one");
    },
    /** A small committed write (a unit of its own); rejects with SQLITE_FULL when the disk refuses it. */
    probeWrite: async (at: number): Promise<void> => {
      await db.run("INSERT INTO storage_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at", [at]);
    },
    /** A consistent copy of the whole database in one new file (SQLite's VACUUM INTO). */
    copyTo: (path: string): void => {
      if (!sqlite) throw new Error("pigeon backup copies a SQLite database; back PostgreSQL up with pg_dump");
      sqlite.run("VACUUM INTO ?", [path]);
    },
  };
}

export type SystemRepository = ReturnType<typeof createSystemRepository>;
