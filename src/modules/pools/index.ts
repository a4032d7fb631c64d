// The pools module: its repository (pools, members, sticky senders) and its service, built here once.
import { createPoolRepository } from "./repository";
import { createPoolService, type PoolDeps } from "./service";

export function createPoolsModule(deps: Omit<PoolDeps, "repo">) {
  return createPoolService({ ...deps, repo: createPoolRepository(deps.storage) });
}
