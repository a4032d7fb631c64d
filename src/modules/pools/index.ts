// The pools module: its repository (pools, members, sticky senders) and its service, built here once.
import { createPoolRepository } from "./repository";
import { createPoolService, type PoolDeps } from "./service";
import type { ModuleDescriptor } from "../descriptor";
import { poolRoutes } from "./routes";

export function createPoolsModule(deps: Omit<PoolDeps, "repo">) {
  return createPoolService({ ...deps, repo: createPoolRepository(deps.storage) });
}

export const poolsModule: ModuleDescriptor = {
  name: "pools",
  routes: (s) => ({ api: [poolRoutes(s)] }),
  // Pool members whose pause after carrier failures has ended are announced (pool.member_resumed).
  tasks: (s) => [{ name: "pools:resume", everySeconds: 30, run: () => s.pools.resumeDue() }],
  listeners: (s) => ({
    // A message's outcome counts for or against the pool members on its device (carrier failures pause them).
    transition: (before, to, opts) => s.pools.outcome(before, to, opts.errorCode ?? null),
    // A member's caps count what it sends, with the send's rows (in the day and month it is due).
    stored: async (accepted) => {
      for (const { prepared: p } of accepted)
        if (p.poolMemberId) await s.pools.counted(p.poolMemberId, p.scheduleAt ?? s.clock.now(), p.segments, p.recipient);
    },
  }),
};
