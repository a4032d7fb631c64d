// The privacy module: its repository (one number's rows, found and removed) and its service, built here once.
import { createPrivacyRepository } from "./repository";
import { createPrivacyService, type PrivacyDeps } from "./service";
import type { ModuleDescriptor } from "../descriptor";
import { privacyRoutes } from "./routes";

export function createPrivacyModule(deps: Omit<PrivacyDeps, "repo">) {
  return createPrivacyService({ ...deps, repo: createPrivacyRepository(deps.storage) });
}

export const privacyModule: ModuleDescriptor = { name: "privacy", routes: (s) => ({ api: [privacyRoutes(s)] }) };
