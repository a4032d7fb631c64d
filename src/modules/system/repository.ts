// What the health check and the backup command ask of the database itself.
import type { Statement } from "bun:sqlite";
import type { Db } from "../../db/client";

export function createSystemRepository(db: Db) {
  const ping: Statement<{ one: number }, []> = db.$client.prepare("SELECT 1 AS one");
  const probe = db.$client.prepare("INSERT INTO storage_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at");
  return {
    /** Runs a trivial query; throws when the database does not answer. */
    ping: () => void ping.get(),
    /** A small committed write (its own transaction); throws SQLITE_FULL when the disk refuses it. */
    probeWrite: (at: number) => void probe.run(at),
    /** A consistent copy of the whole database in one new file (SQLite's VACUUM INTO). */
    copyTo: (path: string) => void db.$client.run("VACUUM INTO ?", [path]),
  };
}

export type SystemRepository = ReturnType<typeof createSystemRepository>;
