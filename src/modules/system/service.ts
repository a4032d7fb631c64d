// The database itself, as the health check, the full-disk monitor and the backup command see it:
// the system module's one repository, built here and nowhere else.
import type { Clock } from "../../clock";
import type { SqliteHandle } from "../../db/client";
import type { Executor } from "../../db/storage";
import { createDiskMonitor } from "../../lib/disk";
import { createSystemRepository } from "./repository";

export function createSystemService(deps: { storage: Executor; sqlite: SqliteHandle | null; clock: Clock; dataDir: string | null }) {
  const repo = createSystemRepository(deps.storage, deps.sqlite);
  return {
    /** Runs a trivial query; rejects when the database does not answer. */
    ping: repo.ping,
    /** A consistent copy of the whole database in one new file. */
    copyTo: repo.copyTo,
    /** Whether writes are failing for a full disk (its probe is this module's small write). */
    disk: createDiskMonitor({ clock: deps.clock, dataDir: deps.dataDir, probeWrite: () => repo.probeWrite(deps.clock.now()) }),
  };
}

export type SystemService = ReturnType<typeof createSystemService>;
