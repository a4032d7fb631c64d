// The dashboard users module: its repository and its service, built here once.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { ModuleDescriptor } from "../../services-type";
import type { SecretBox } from "../../lib/secrets";
import type { AccountsService } from "../accounts/service";
import { createUserRepository } from "./repository";
import { createUserService } from "./service";

export function createUsersModule(deps: { storage: Storage; clock: Clock; accounts: AccountsService; secrets: SecretBox }) {
  return createUserService({ ...deps, repo: createUserRepository(deps.storage) });
}

/** The users' routes are the dashboard's (sign-in, members): the module itself mounts none. */
export const usersModule: ModuleDescriptor = { name: "users" };
