// Builds every service from the database, config and clock. The HTTP app, the worker and the CLI
// share one container, so each rule lives in one place.
import { CHANNELS } from "./channels";
import type { Channel, ChannelAdapter, ChannelCore, ChannelRuntime } from "./channels/types";
import type { ChannelTraits, DeliveryType, DeviceKind } from "./channels/kinds";
import type { Clock } from "./clock";
import type { Config } from "./config";
import type { Db } from "./db/client";
import { createGroupCommit } from "./db/group-commit";
import { createIdempotencyStore } from "./http/idempotency";
import { createRateLimiter } from "./http/rate-limit";
import { createAccountsService } from "./modules/accounts/service";
import { createContactRepository } from "./modules/contacts/repository";
import { createContactService } from "./modules/contacts/service";
import { createCreditService } from "./modules/credits/service";
import { createDeviceRepository } from "./modules/devices/repository";
import { createDeviceService } from "./modules/devices/service";
import { createNotificationRepository } from "./modules/notifications/repository";
import { createExpiry } from "./modules/notifications/expiry";
import { createNotificationService } from "./modules/notifications/service";
import { failForDeletedDevice, wireNotificationLifecycle } from "./modules/notifications/lifecycle";
import { createEventService } from "./modules/events/service";
import { createWebhookService } from "./modules/webhooks/service";
import { createThreadService } from "./modules/threads/service";
import { createNotificationState } from "./modules/notifications/state";
import { createSendingService } from "./modules/sending/service";
import { createTemplateRepository } from "./modules/templates/repository";
import { createTemplateService } from "./modules/templates/service";
import { createThreadRepository } from "./modules/threads/repository";
import { createUserRepository } from "./modules/users/repository";
import { createUserService } from "./modules/users/service";
import { createUsageRepository } from "./modules/usage/repository";
import { createDispatcher } from "./worker/dispatcher";
import { createSystemService } from "./modules/system/service";
import { dirname, join } from "node:path";
import { sealLegacySecrets } from "./db/secrets-at-rest";
import { createSecretBox, KEY_FILE } from "./lib/secrets";
import { createSmsGateAuth } from "./modules/smsgate/auth";
import { createSmsGateRepository } from "./modules/smsgate/repository";
import { createSmsGateService } from "./modules/smsgate/service";
import { createSmsGateSettings } from "./modules/smsgate/settings";
import { createSmsGateWebhooks } from "./modules/smsgate/webhooks";
import { createSafetyRepository } from "./modules/safety/repository";
import { createSafetyService } from "./modules/safety/service";
import { createKeywordHook } from "./modules/safety/keywords";

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
  /** The channels to carry (default CHANNELS); tests add a throwaway one. */
  channels?: readonly Channel[];
}

/** Each channel's own service, under its name (`services.chatapp`, `services.phone`). */
type ChannelServices = { [C in (typeof CHANNELS)[number] as C["name"]]: ReturnType<C["create"]>["service"] };

export function createServices(deps: Deps) {
  const { db, clock, config } = deps;
  const sqlite = db.$client;
  const channels = deps.channels ?? CHANNELS;
  const log = deps.log ?? ((message: string, error?: unknown) => console.error(formatLogLine(message, error, config.logLevel === "debug")));

  // pigeon.key lives beside the database; an in-memory database keeps its key in memory.
  const secrets = createSecretBox(config.dbPath === ":memory:" ? null : join(dirname(config.dbPath), KEY_FILE));
  sealLegacySecrets(sqlite, secrets);

  const usage = createUsageRepository(db);
  const deviceRepo = createDeviceRepository(db, secrets);
  const templateRepo = createTemplateRepository(db);
  const dispatchedRoutes = channels.filter((c) => c.dispatched).map((c) => c.kind);
  const notificationRepo = createNotificationRepository(sqlite, dispatchedRoutes);
  const credits = createCreditService(sqlite, clock);
  const state = createNotificationState(sqlite, clock, credits);
  const system = createSystemService({ db, clock, dataDir: config.dbPath === ":memory:" ? null : dirname(config.dbPath) });
  const { storage } = system;
  // Accepted sends and their idempotent replies are written in one shared transaction.
  const commits = createGroupCommit(sqlite, log, () => storage.markWritten());
  const idempotency = createIdempotencyStore(sqlite, clock, commits);
  const threads = createThreadRepository(sqlite);

  // Each channel's runtime, by device kind; filled in below, read by the hooks at run time.
  const runtimes = new Map<DeviceKind, ChannelRuntime>();
  const runtimeOf = (kind: DeviceKind) => runtimes.get(kind);

  const devices = createDeviceService(
    deviceRepo,
    usage,
    clock,
    {
      settingsChanged: (device) => runtimeOf(device.kind)?.settingsChanged?.(device),
      beforeRemove: (ids) => failForDeletedDevice(state, notificationRepo.pendingOnDevices(ids)),
    },
    { channels, allowPrivateTargets: config.allowPrivateWebhooks, offlineAfterMs: config.offlineAfterSeconds * 1000 },
  );

  const notifications = createNotificationService(sqlite, notificationRepo, state);
  const events = createEventService(sqlite, clock);
  const accounts = createAccountsService(db, clock, secrets);
  const contactRepo = createContactRepository(db);
  const safety = createSafetyService({
    sqlite,
    clock,
    repo: createSafetyRepository(sqlite, dispatchedRoutes),
    state,
    events,
    contactOf: (workspaceId, phone) => {
      const row = contactRepo.byPhone(workspaceId, phone);
      return row ? { id: row.id, timezone: row.timezone } : null;
    },
  });
  const sending = createSendingService({
    sqlite,
    clock,
    devices: deviceRepo,
    templates: templateRepo,
    notifications: notificationRepo,
    state,
    credits,
    usage,
    commits,
    threads,
    channels,
    offlineAfterMs: config.offlineAfterSeconds * 1000,
    safety,
    callerFor: (workspaceId) => accounts.callerFor(workspaceId),
  });
  // A failing notification on a failover order moves to its next route instead.
  state.setFailover((before, failure) => sending.failover(before, failure));
  const webhooks = createWebhookService({
    sqlite,
    clock,
    events,
    secrets,
    allowPrivate: config.allowPrivateWebhooks,
    fetch: deps.fetch,
    log,
  });

  const core: ChannelCore = {
    db,
    sqlite,
    clock,
    config,
    secrets,
    log,
    fetch: deps.fetch,
    channelTimeoutMs: deps.channelTimeoutMs,
    devices: deviceRepo,
    templates: templateRepo,
    notifications: notificationRepo,
    state,
    threads,
    events,
    // The opt-out keywords, matched on every inbound message before it is announced.
    onInbound: createKeywordHook({ safety, reply: replyOnOwnAccord }),
  };
  const adapters: Partial<Record<DeviceKind, ChannelAdapter>> = {};
  const channelServices = {} as Record<string, unknown>;
  const built: { channel: Channel; runtime: ChannelRuntime }[] = [];
  for (const channel of channels) {
    const runtime: ChannelRuntime = channel.create(core);
    built.push({ channel, runtime });
    runtimes.set(channel.kind, runtime);
    channelServices[channel.name] = runtime.service;
    // The worker claims exactly the routes declared dispatched, so each must bring its adapter.
    if ((channel.dispatched === true) !== (runtime.adapter !== undefined))
      throw new Error(`channel ${channel.name}: dispatched and adapter disagree`);
    if (runtime.adapter) adapters[channel.kind] = runtime.adapter;
    if (runtime.check) sending.addCheck(channel.deliveryType, runtime.check);
  }
  wireNotificationLifecycle({ state, notifications, sending, events, channelOf: runtimeOf });

  /**
   * A reply Pigeon sends by itself (a keyword's confirmation), through the device the message came
   * in on, once the transaction that stored the inbound message is over. One that cannot go (the
   * device went away, the account is suspended) is logged and dropped.
   */
  function replyOnOwnAccord(
    to: { workspaceId: number; channel: DeliveryType; deviceId: number; recipient: string },
    text: string,
    why: string,
  ) {
    queueMicrotask(() => {
      try {
        const caller = accounts.callerFor(to.workspaceId);
        const prepared = sending.prepare(caller, {
          channel: to.channel,
          recipient: to.recipient,
          message: text,
          deviceId: to.deviceId,
          system: true,
        });
        commits
          .submit(() => sending.accept(caller, [prepared]))
          .then(([result]) => {
            if (!result.ok) log(`no ${why} reply to ${to.recipient}: ${result.error.message}`);
          })
          .catch((error) => log(`no ${why} reply to ${to.recipient}`, error));
      } catch (error) {
        log(`no ${why} reply to ${to.recipient}`, error);
      }
    });
  }

  const { authenticate } = accounts;
  const smsgateRepo = createSmsGateRepository(sqlite);
  const services = {
    ...deps,
    log,
    system,
    storage,
    secrets,
    accounts,
    users: createUserService({ repo: createUserRepository(sqlite), clock, accounts }),
    authenticate,
    /** SMSGate's third-party API: its Basic and Bearer credentials and its tokens. */
    smsgateAuth: createSmsGateAuth({ clock, secrets, authenticate, accounts, repo: smsgateRepo }),
    rateLimiter: createRateLimiter(clock),
    idempotency,
    /** Group commit: sends are accepted under it (their durable write shares an fsync). */
    commits,
    devices,
    contacts: createContactService(contactRepo, clock, (workspaceId, phone) => safety.status(workspaceId, phone)),
    safety,
    templates: createTemplateService(templateRepo, clock),
    credits,
    state,
    notifications,
    expiry: createExpiry({ clock, notifications: notificationRepo, state, offlineAfterMs: config.offlineAfterSeconds * 1000 }),
    threads,
    sending,
    events,
    webhooks,
    threadsView: createThreadService(threads, clock),
    ...(channelServices as ChannelServices),
    /** What every channel is built from: the shared repositories and rules (ChannelCore). */
    channelCore: core,
    /** The channels this server carries, for the modules that take a rule from each. */
    channels: channels as readonly ChannelTraits[],
    /** Each channel's hooks, by device kind (the app's before-body checks, shutdown). */
    channelRuntimes: [...runtimes.values()],
    /** Each channel with its runtime, in order: the app mounts their routes, the worker runs their tasks. */
    builtChannels: built,
    /** Shutting down: the channels close their long-lived connections. */
    closeChannels() {
      for (const runtime of runtimes.values()) runtime.close?.();
    },
    dispatcher: createDispatcher({
      transaction: (fn) => sqlite.transaction(fn)(),
      submit: (fn) => commits.submit(fn),
      clock,
      notifications: notificationRepo,
      devices: deviceRepo,
      state,
      adapters,
      paceOf: (device) => devices.pace(device),
      tickMs: config.workerIntervalSeconds * 1000,
      onOutcome: (n, device, outcome) => runtimeOf(n.route)?.afterOutcome?.(n, device, outcome),
      log,
    }),
  };
  const smsgate = createSmsGateService(
    { ...services, requestInboxExport: (device, since, until) => services.phone.requestInboxExport(device, since, until) },
    smsgateRepo,
  );
  const smsgateWebhooks = createSmsGateWebhooks({ clock, secrets, webhooks, repo: smsgateRepo, devices });
  const phoneKinds = new Set<string>(channels.filter((c) => c.needsPresence).map((c) => c.kind));
  const smsgateSettings = createSmsGateSettings({ devices, isPhone: (d) => phoneKinds.has(d.kind), webhooks: smsgateWebhooks });
  return { ...services, smsgate, smsgateWebhooks, smsgateSettings };
}

export type Services = ReturnType<typeof createServices>;
