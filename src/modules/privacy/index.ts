// The privacy module: its repository (one number's rows, found and removed) and its service, built here once.
import { createPrivacyRepository } from "./repository";
import { createPrivacyService, type PrivacyDeps } from "./service";

export function createPrivacyModule(deps: Omit<PrivacyDeps, "repo">) {
  return createPrivacyService({ ...deps, repo: createPrivacyRepository(deps.storage) });
}
