// The accounts module: accounts, plans, workspaces and API keys, and the check of a request's key.
// It serves no routes of its own (the workspaces and users modules answer the API, the CLI the
// operator); its service, built here, is what start-up, the CLI and the key gates use.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { SecretBox } from "../../lib/secrets";
import type { ModuleDescriptor } from "../../services-type";
import { createAccountsService } from "./service";

export function createAccountsModule(deps: { storage: Storage; clock: Clock; secrets: SecretBox }) {
  return { service: createAccountsService(deps.storage, deps.clock, deps.secrets) };
}

export const accountsModule: ModuleDescriptor = { name: "accounts" };
