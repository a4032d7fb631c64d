// What the health check and the backup command ask of the database itself.
import type { Statement } from "bun:sqlite";
import type { Db } from "../../db/client";

export function createSystemRepository(db: Db) {
  const ping: Statement<{ one: number }, []> = db.$client.prepare("SELECT 1 AS one");
  return {
    /** Runs a trivial query; throws when the database does not answer. */
    ping: () => void ping.get(),
    /** A consistent copy of the whole database in one new file (SQLite's VACUUM INTO). */
    copyTo: (path: string) => void db.$client.run("VACUUM INTO ?", [path]),
  };
}

export type SystemRepository = ReturnType<typeof createSystemRepository>;
