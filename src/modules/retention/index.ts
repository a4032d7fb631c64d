// The retention module: its repository (what may be removed, and SQLite's vacuum) and its service,
// built here once. Erasure (src/modules/privacy) removes a person's messages with the same repository.
import { createRetentionRepository, type VacuumHandle } from "./repository";
import { createRetention, type RetentionDeps } from "./service";

export function createRetentionModule(deps: Omit<RetentionDeps, "repo"> & { sqlite: VacuumHandle | null }) {
  const repository = createRetentionRepository(deps.storage, deps.sqlite);
  return { repository, service: createRetention({ ...deps, repo: repository }) };
}
