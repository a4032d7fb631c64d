// Builds every service from the database, config and clock. The HTTP app, the worker and the CLI
// share one container, so each rule lives in one place.
import { createCloudAdapter } from "./channels/sms-cloud/adapter";
import { cloudCallbackPath } from "./channels/sms-cloud/callback-routes";
import type { Clock } from "./clock";
import type { Config } from "./config";
import type { Db } from "./db/client";
import { createAuthenticator } from "./http/auth";
import { createIdempotencyStore } from "./http/idempotency";
import { createRateLimiter } from "./http/rate-limit";
import { createAccountsService } from "./modules/accounts/service";
import { createContactRepository } from "./modules/contacts/repository";
import { createContactService } from "./modules/contacts/service";
import { createCreditService } from "./modules/credits/service";
import { createDeviceRepository } from "./modules/devices/repository";
import { createDeviceService } from "./modules/devices/service";
import { createNotificationRepository } from "./modules/notifications/repository";
import { createNotificationService } from "./modules/notifications/service";
import { createNotificationState } from "./modules/notifications/state";
import { createSendingService } from "./modules/sending/service";
import { createTemplateRepository } from "./modules/templates/repository";
import { createTemplateService } from "./modules/templates/service";
import { createUsageRepository } from "./modules/usage/repository";
import { createDispatcher } from "./worker/dispatcher";

export interface Deps {
  db: Db;
  config: Config;
  clock: Clock;
  log?: (message: string, error?: unknown) => void;
  /** The HTTP client channels use; tests may wrap it. */
  fetch?: typeof fetch;
  /** How long channels wait for a provider's answer (default 15 s). */
  channelTimeoutMs?: number;
}

export function createServices(deps: Deps) {
  const { db, clock, config } = deps;
  const sqlite = db.$client;
  const log = deps.log ?? ((message: string, error?: unknown) => console.error(`[pigeon] ${message}`, error ?? ""));

  const usage = createUsageRepository(db);
  const deviceRepo = createDeviceRepository(db);
  const templateRepo = createTemplateRepository(db);
  const notificationRepo = createNotificationRepository(sqlite);
  const credits = createCreditService(sqlite, clock);
  const state = createNotificationState(sqlite, clock, credits);
  const idempotency = createIdempotencyStore(sqlite, clock);

  const devices = createDeviceService(deviceRepo, usage, clock, {
    // A deleted device's waiting notifications can never go out: fail them (refunding credits).
    beforeRemove: (ids) => {
      const pending = sqlite
        .query(`SELECT id FROM notification WHERE device_id IN (${ids.map(() => "?").join(",")}) AND status = 'pending'`)
        .all(...ids) as { id: number }[];
      for (const { id } of pending) state.transition(id, "failed", { errorCode: "device_deleted", reason: "the device was deleted before the message was sent" });
    },
  });

  const cloud = createCloudAdapter({
    statusCallbackUrl: (device) => (config.publicUrl ? config.publicUrl + cloudCallbackPath(device.id) : null),
    fetch: deps.fetch,
    timeoutMs: deps.channelTimeoutMs,
  });

  return {
    ...deps,
    log,
    accounts: createAccountsService(db, clock),
    authenticate: createAuthenticator(sqlite, clock),
    rateLimiter: createRateLimiter(clock),
    idempotency,
    usage,
    deviceRepo,
    devices,
    contacts: createContactService(createContactRepository(db), clock),
    templateRepo,
    templates: createTemplateService(templateRepo, clock),
    credits,
    state,
    notificationRepo,
    notifications: createNotificationService(sqlite, notificationRepo, state),
    sending: createSendingService({ sqlite, clock, devices: deviceRepo, templates: templateRepo, notifications: notificationRepo, state, credits, usage, idempotency }),
    dispatcher: createDispatcher({
      transaction: (fn) => sqlite.transaction(fn)(),
      clock,
      notifications: notificationRepo,
      devices: deviceRepo,
      state,
      adapters: { cloud },
      tickMs: config.workerIntervalSeconds * 1000,
      log,
    }),
  };
}

export type Services = ReturnType<typeof createServices>;
