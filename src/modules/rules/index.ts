// The inbound rules module: its repository and its service, built here once.
import { createRuleRepository } from "./repository";
import { createRuleService, type RuleDeps } from "./service";

export function createRulesModule(deps: Omit<RuleDeps, "repo">) {
  return createRuleService({ ...deps, repo: createRuleRepository(deps.storage) });
}
