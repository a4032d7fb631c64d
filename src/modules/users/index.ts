// The dashboard users module: its repository and its service, built here once.
import type { Database } from "bun:sqlite";
import type { Clock } from "../../clock";
import type { AccountsService } from "../accounts/service";
import { createUserRepository } from "./repository";
import { createUserService } from "./service";

export function createUsersModule(deps: { sqlite: Database; clock: Clock; accounts: AccountsService }) {
  return createUserService({ repo: createUserRepository(deps.sqlite), clock: deps.clock, accounts: deps.accounts });
}
