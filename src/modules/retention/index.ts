// The retention module: its repository (what may be removed, and SQLite's vacuum) and its service,
// built here once. Erasure (src/modules/privacy) removes a person's messages with the same repository.
import { createRetentionRepository, type VacuumHandle } from "./repository";
import { createRetention, type RetentionDeps } from "./service";
import type { ModuleDescriptor } from "../descriptor";

export function createRetentionModule(deps: Omit<RetentionDeps, "repo"> & { sqlite: VacuumHandle | null }) {
  const repository = createRetentionRepository(deps.storage, deps.sqlite);
  return { repository, service: createRetention({ ...deps, repo: repository }) };
}

export const retentionModule: ModuleDescriptor = {
  name: "retention",
  // PIGEON_RETENTION_DAYS: what finished longer ago than that, removed in pieces (off at 0).
  tasks: (s) => (s.retention.days > 0 ? [{ name: "retention:prune", everySeconds: 3600, run: () => s.retention.tick() }] : []),
  stop: (s) => s.retention.stop(),
};
