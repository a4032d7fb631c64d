// What the health check asks of the database.
import type { Statement } from "bun:sqlite";
import type { Db } from "../../db/client";

export function createSystemRepository(db: Db) {
  const ping: Statement<{ one: number }, []> = db.$client.prepare("SELECT 1 AS one");
  return {
    /** Runs a trivial query; throws when the database does not answer. */
    ping: () => void ping.get(),
  };
}

export type SystemRepository = ReturnType<typeof createSystemRepository>;
