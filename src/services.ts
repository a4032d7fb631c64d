// Builds every service from the database, config and clock. The HTTP app, the worker and the CLI
// share one container, so each rule lives in one place.
import { createChatappAdapter } from "./channels/chatapp/adapter";
import { createGraphClient } from "./channels/chatapp/graph";
import { createChatappService } from "./channels/chatapp/service";
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
import { createPhoneEventHub } from "./channels/sms-phone/events";
import { createMobileService } from "./channels/sms-phone/service";
import { createNotificationRepository } from "./modules/notifications/repository";
import { createNotificationService, presentNotification } from "./modules/notifications/service";
import { createEventService } from "./modules/events/service";
import { createWebhookService } from "./modules/webhooks/service";
import { createThreadService } from "./modules/threads/service";
import { createNotificationState } from "./modules/notifications/state";
import { createSendingService } from "./modules/sending/service";
import { createTemplateRepository } from "./modules/templates/repository";
import { createTemplateService } from "./modules/templates/service";
import { createThreadRepository } from "./modules/threads/repository";
import { createUsageRepository } from "./modules/usage/repository";
import { createDispatcher } from "./worker/dispatcher";
import { createStorageMonitor } from "./lib/storage";
import { dirname, join } from "node:path";
import { sealLegacySecrets } from "./db/secrets-at-rest";
import { createSecretBox, KEY_FILE } from "./lib/secrets";

/**
 * One log line per event: the message and the error's name and message. The stack (which in the
 * compiled binary quotes minified source) only at PIGEON_LOG_LEVEL=debug.
 */
export function formatLogLine(message: string, error: unknown, debug: boolean): string {
  let line = `[pigeon] ${message}`;
  if (error instanceof Error) {
    line += `: ${error.name}: ${error.message.split("\n")[0]}`;
    if (debug && error.stack) line += `\n${error.stack}`;
  } else if (error !== undefined && error !== "") {
    line += `: ${String(error).split("\n")[0]}`;
  }
  return line;
}

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
  const log = deps.log ?? ((message: string, error?: unknown) => console.error(formatLogLine(message, error, config.logLevel === "debug")));

  // pigeon.key lives beside the database; an in-memory database keeps its key in memory.
  const secrets = createSecretBox(config.dbPath === ":memory:" ? null : join(dirname(config.dbPath), KEY_FILE));
  sealLegacySecrets(sqlite, secrets);

  const usage = createUsageRepository(db);
  const deviceRepo = createDeviceRepository(db, secrets);
  const templateRepo = createTemplateRepository(db);
  const notificationRepo = createNotificationRepository(sqlite);
  const credits = createCreditService(sqlite, clock);
  const state = createNotificationState(sqlite, clock, credits);
  const idempotency = createIdempotencyStore(sqlite, clock);
  const threads = createThreadRepository(sqlite);

  // Paired phones: their event streams keep them marked as seen.
  const hub = createPhoneEventHub((deviceId) => deviceRepo.touch(deviceId, clock.now()));

  const devices = createDeviceService(deviceRepo, usage, clock, {
    settingsChanged: (device) => {
      if (device.kind === "sms") hub.notify(device.id, "SettingsUpdated");
    },
    // A deleted device's waiting notifications can never go out: fail them (refunding credits).
    beforeRemove: (ids) => {
      const pending = sqlite
        .query(`SELECT id FROM notification WHERE device_id IN (${ids.map(() => "?").join(",")}) AND status = 'pending'`)
        .all(...ids) as { id: number }[];
      for (const { id } of pending) state.transition(id, "failed", { errorCode: "device_deleted", reason: "the device was deleted before the message was sent" });
    },
  }, { allowPrivateTargets: config.allowPrivateWebhooks });

  const graph = createGraphClient({ baseUrl: config.chatapp.graphUrl, version: config.chatapp.graphVersion, fetch: deps.fetch, timeoutMs: deps.channelTimeoutMs });

  const cloud = createCloudAdapter({
    allowPrivateTargets: config.allowPrivateWebhooks,
    statusCallbackUrl: (device) => (config.publicUrl ? config.publicUrl + cloudCallbackPath(device.id) : null),
    fetch: deps.fetch,
    timeoutMs: deps.channelTimeoutMs,
  });

  const notifications = createNotificationService(sqlite, notificationRepo, state);
  const sending = createSendingService({
    sqlite,
    clock,
    devices: deviceRepo,
    templates: templateRepo,
    notifications: notificationRepo,
    state,
    credits,
    usage,
    idempotency,
    threads,
    log,
  });
  const events = createEventService(sqlite, clock);
  const chatapp = createChatappService({ sqlite, db, clock, config, graph, devices: deviceRepo, templates: templateRepo, threads, state, events, log });
  sending.addCheck("chatapp", chatapp.check);
  const chatappAdapter = createChatappAdapter({
    graph,
    templateById: (id) => templateRepo.byId(id),
    refreshTemplates: (device) => chatapp.refreshTemplates(device),
    preflight: (device) => chatapp.preflight(device),
  });
  const mobile = createMobileService({ sqlite, clock, devices: deviceRepo, state, threads, hub, events, secrets });
  const webhooks = createWebhookService({ sqlite, clock, events, secrets, allowPrivate: config.allowPrivateWebhooks, fetch: deps.fetch, log });

  // Every notification state change is an event, written in the same transaction (the outbox).
  state.onTransition((before, to) => {
    const after = state.get(before.id)!;
    events.emit(before.workspace_id, `notification.${to}`, presentNotification(after));
  });

  // A phone that may hold a copy of a cancelled message is told "Cancelling" until it confirms.
  const markCancelPending = sqlite.prepare("UPDATE notification SET cancel_pending = 1 WHERE id = ?");
  state.onTransition((before, to) => {
    if (to === "cancelled" && before.route === "sms" && before.dispatched_at !== null) markCancelPending.run(before.id);
  });
  notifications.onCancelled((n) => {
    if (n.route === "sms" && n.device_id !== null && n.external_id && n.dispatched_at !== null) {
      hub.notify(n.device_id, "MessageCancelled", { messageId: n.external_id });
    }
  });
  // Immediate phone messages: tell the phone now (scheduled ones are announced when due).
  sending.onAccepted((accepted) => {
    for (const a of accepted) if (a.prepared.device.kind === "sms" && a.prepared.scheduleAt === null) hub.enqueued(a.prepared.device.id);
  });

  return {
    ...deps,
    log,
    storage: createStorageMonitor(clock),
    secrets,
    accounts: createAccountsService(db, clock, secrets),
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
    notifications,
    threads,
    sending,
    hub,
    mobile,
    events,
    webhooks,
    threadsView: createThreadService(sqlite, clock),
    chatapp,
    dispatcher: createDispatcher({
      transaction: (fn) => sqlite.transaction(fn)(),
      clock,
      notifications: notificationRepo,
      devices: deviceRepo,
      state,
      adapters: { cloud, chatapp: chatappAdapter },
      tickMs: config.workerIntervalSeconds * 1000,
      onOutcome: (n, device, outcome) => {
        if (n.route === "chatapp") chatapp.afterOutcome(n, device, outcome);
      },
      log,
    }),
  };
}

export type Services = ReturnType<typeof createServices>;
