// Builds every service from the database, config and clock. The HTTP app, the worker and the CLI
// share one container, so each rule lives in one place.
import type { Clock } from "./clock";
import type { Config } from "./config";
import type { Db } from "./db/client";
import { createAuthenticator } from "./http/auth";
import { createRateLimiter } from "./http/rate-limit";
import { createAccountsService } from "./modules/accounts/service";
import { createContactRepository } from "./modules/contacts/repository";
import { createContactService } from "./modules/contacts/service";
import { createDeviceRepository } from "./modules/devices/repository";
import { createDeviceService } from "./modules/devices/service";
import { createTemplateRepository } from "./modules/templates/repository";
import { createTemplateService } from "./modules/templates/service";
import { createUsageRepository } from "./modules/usage/repository";

export interface Deps {
  db: Db;
  config: Config;
  clock: Clock;
  log?: (message: string, error?: unknown) => void;
}

export function createServices(deps: Deps) {
  const { db, clock } = deps;
  const log = deps.log ?? ((message: string, error?: unknown) => console.error(`[pigeon] ${message}`, error ?? ""));
  const usage = createUsageRepository(db);
  const deviceRepo = createDeviceRepository(db);
  return {
    ...deps,
    log,
    accounts: createAccountsService(db, clock),
    authenticate: createAuthenticator(db.$client, clock),
    rateLimiter: createRateLimiter(clock),
    usage,
    deviceRepo,
    devices: createDeviceService(deviceRepo, usage, clock),
    contacts: createContactService(createContactRepository(db), clock),
    templates: createTemplateService(createTemplateRepository(db), clock),
  };
}

export type Services = ReturnType<typeof createServices>;
