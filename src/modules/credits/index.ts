// The credits module: the workspace's credit ledger and balance. Its routes are the dashboard's
// credits page and the CLI; sending debits through its service, the notifications refund through it.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { ModuleDescriptor } from "../../services-type";
import { createCreditService } from "./service";

export function createCreditsModule(deps: { storage: Storage; clock: Clock }) {
  return { service: createCreditService(deps.storage, deps.clock) };
}

export const creditsModule: ModuleDescriptor = { name: "credits" };
