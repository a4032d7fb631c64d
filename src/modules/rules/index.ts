// The inbound rules module: its repository and its service, built here once.
import { createRuleRepository } from "./repository";
import { createRuleService, type RuleDeps } from "./service";
import type { ModuleDescriptor } from "../descriptor";
import { ruleRoutes } from "./routes";

export function createRulesModule(deps: Omit<RuleDeps, "repo">) {
  return createRuleService({ ...deps, repo: createRuleRepository(deps.storage) });
}

export const rulesModule: ModuleDescriptor = { name: "rules", routes: (s) => ({ api: [ruleRoutes(s)] }) };
