// The Verify module: its repository and its service, built here once.
import { createVerifyRepository } from "./repository";
import { createVerifyService, type VerifyDeps } from "./service";

export function createVerifyModule(deps: Omit<VerifyDeps, "repo">) {
  return createVerifyService({ ...deps, repo: createVerifyRepository(deps.storage) });
}
