// The safe-sending module: its repository (rules, opt-outs and their history) and its service,
// built here once.
import type { DeviceKind } from "../../core/kinds";
import { createSafetyRepository } from "./repository";
import { createSafetyService, type SafetyDeps } from "./service";
import type { ModuleDescriptor } from "../descriptor";
import { safetyRoutes } from "./routes";

export function createSafetyModule(deps: Omit<SafetyDeps, "repo"> & { dispatchedRoutes: DeviceKind[] }) {
  return createSafetyService({ ...deps, repo: createSafetyRepository(deps.storage, deps.dispatchedRoutes) });
}

export const safetyModule: ModuleDescriptor = { name: "safety", routes: (s) => ({ api: [safetyRoutes(s)] }) };
