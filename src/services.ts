// Builds every service from the database, config and clock. The HTTP app, the worker and the CLI
// share one services object, so each rule lives in one place.
import { createBackupSchedule } from "./modules/system/backups";
import { runSelf } from "./lib/self-command";
import { createSignals } from "./db/signals";
import { createCluster } from "./worker/cluster";
import { CHANNELS } from "./channels";
import type { Channel, ChannelAdapter, ChannelCore, ChannelRuntime } from "./channels/types";
import type { ChannelTraits, DeviceKind } from "./core/kinds";
import type { Deps, ChannelServices, Services } from "./services-type";
import type { Clock } from "./clock";
import type { Config } from "./config";
import type { Db } from "./db/client";
import { createPostgresStorage, type PostgresPool } from "./db/postgres-storage";
import { createSqliteStorage } from "./db/sqlite-storage";
import type { Storage } from "./db/storage";
import { createIdempotencyStore } from "./http/idempotency";
import { createLimits } from "./http/rate-limit";
import { createAccountsModule } from "./modules/accounts";
import { createCreditsModule } from "./modules/credits";
import { failForDeletedDevice } from "./modules/notifications/lifecycle";
import { inListeningOrder, MODULES } from "./modules";

import { createLiveHub } from "./dashboard/live";
import { createEventsModule } from "./modules/events";
import { createWebhookService } from "./modules/webhooks/service";
import { createInboundPipeline } from "./modules/inbound";
import { ruleWebhooks } from "./modules/rules/webhook-port";
import { createOwnAccordSender } from "./modules/sending/own-accord";
import { createSendingService } from "./modules/sending/service";
import { createDispatcher } from "./worker/dispatcher";
import { createSystemService } from "./modules/system/service";
import { createContactsModule } from "./modules/contacts";
import { createDevicesModule } from "./modules/devices";
import { createNotificationsModule } from "./modules/notifications";
import { createSafetyModule } from "./modules/safety";
import { createSmsGateModule } from "./modules/smsgate";
import { createTemplatesModule } from "./modules/templates";
import { createThreadsModule } from "./modules/threads";
import { createUsersModule } from "./modules/users";
import { dirname } from "node:path";
import { sealLegacySecrets } from "./db/secrets-at-rest";
import { createSecretBox } from "./lib/secrets";
import { createKeywordHook } from "./modules/safety/keywords";
import { createRulesModule } from "./modules/rules";
import { createTwilioModule } from "./modules/twilio";
import { createVerifyModule } from "./modules/verify";
import { outboundTargetProblem } from "./lib/net-safety";
import { createRetentionModule } from "./modules/retention";
import { createPrivacyModule } from "./modules/privacy";
import { createEmailModule } from "./modules/email";
import { createSmppModule } from "./modules/smpp/service";
import { createPoolsModule } from "./modules/pools";
import { isOnline as isDeviceOnline } from "./modules/devices/service";
import type { RequestDone } from "./http/foundation";
import { accessLog, createLogger, type LogFn, type Logger } from "./lib/log";
import { createMetricsService } from "./modules/metrics/service";

export type { Deps, Services } from "./services-type";

export function createServices(deps: Deps): Services {
  const { db, clock, config } = deps;
  const sqlite = db?.$client ?? null;
  if (!sqlite && !deps.postgres) throw new Error("createServices needs a database: SQLite's or a PostgreSQL pool");
  const channels = deps.channels ?? CHANNELS;
  const modules = deps.modules ?? MODULES;
  const logger = deps.logger ?? createLogger({ level: config.logLevel, format: config.logFormat });
  const log = deps.log ?? logger.log;
  const logRequest = accessLog(logger);

  // PIGEON_KEY_FILE (pigeon.key beside the database by default); ":memory:" keeps it in memory.
  const secrets = createSecretBox(config.keyFile === ":memory:" ? null : config.keyFile);
  // Secrets stored in the clear by an older release are sealed at start (SQLite only: a PostgreSQL
  // database was made by a release that seals them, or copied with them sealed).
  if (sqlite) sealLegacySecrets(sqlite, secrets);

  /**
   * The storage seam every module writes through: one executor and unit of work, built here. On
   * SQLite each commit tells the full-disk monitor (`disk`, built just below from this storage)
   * that the disk took a write; no commit happens before both exist.
   */
  const storage: Storage = deps.postgres
    ? createPostgresStorage(deps.postgres, { log })
    : createSqliteStorage(sqlite!, { onCommit: () => disk.markWritten(), log });
  const system = createSystemService({
    storage,
    sqlite,
    clock,
    dataDir: sqlite && config.dbPath !== ":memory:" ? dirname(config.dbPath) : null,
  });
  /** Whether writes fail for a full disk (the system module's monitor). */
  const disk = system.disk;
  /**
   * Scheduled backups, on SQLite when PIGEON_BACKUP_DIR is set: each one `pigeon backup` run as a
   * child process, so the copy never holds this server's event loop.
   */
  const backups =
    sqlite && config.backup.dir
      ? createBackupSchedule({
          ...config.backup,
          dir: config.backup.dir,
          clock,
          log,
          take: async (out) => void (await runSelf(["backup", "--out", out, "--json"])),
        })
      : null;
  /** Retention (PIGEON_RETENTION_DAYS, `pigeon prune`): what finished long ago, removed in small pieces. */
  const retentionModule = createRetentionModule({ storage, sqlite, clock, days: config.retentionDays, log });
  const retention = retentionModule.service;
  // Accepted sends and their idempotent replies are written in one shared transaction.

  /** This server among those sharing the database (alone on SQLite): its id, leases, leadership. */
  const cluster = createCluster(storage, clock, { log: (message) => log(message) });
  /** Hints to and from the other servers (phones' event streams, dashboards' live badges). */
  const signals = createSignals(deps.postgres ?? null, cluster.id, log);
  const offlineAfterMs = config.offlineAfterSeconds * 1000;
  const dispatchedRoutes = channels.filter((c) => c.dispatched).map((c) => c.kind);
  /** GET /metrics: this process's counters, and the queue, devices and outbox read at each scrape. */
  const metrics = createMetricsService({
    storage,
    clock,
    routes: channels.map((c) => c.kind),
    dispatchedRoutes,
    offlineAfterMs,
    backups: () => backups?.status() ?? null,
  });
  const credits = createCreditsModule({ storage, clock }).service;
  const notificationsModule = createNotificationsModule({
    storage,
    clock,
    credits,
    dispatchedRoutes,
    offlineAfterMs,
    // The channels are built below; the cancel asks the one carrying the notification when it runs.
    asksDevice: async (n) => (await runtimeOf(n.route)?.asksDevice?.(n)) ?? false,
    keyName: async (keyId) => (await accounts.keyById(keyId))?.name ?? null,
    approvalTtlSeconds: config.approvalTtlSeconds,
    emit: async (workspaceId, type, data) => void (await events.emit(workspaceId, type, data)),
    announceApproved: (approved) => {
      for (const route of new Set(approved.map((n) => n.route))) {
        Promise.resolve(runtimeOf(route)?.approved?.(approved.filter((n) => n.route === route))).catch((error: unknown) =>
          log("an approval announcement failed", error),
        );
      }
    },
  });
  const { repository: notificationRepo, usage, state, service: notifications } = notificationsModule;
  const templatesModule = createTemplatesModule({ storage, clock });
  const templateRepo = templatesModule.repository;
  const idempotency = createIdempotencyStore(storage, clock);
  const threadsModule = createThreadsModule({
    storage,
    clock,
    caps: config.mmsCaps,
    onReceived: (received, kept) => metrics.attachmentsReceived(received, kept),
  });
  const threadRepo = threadsModule.repository;

  // Each channel's runtime, by device kind; filled in below, read by the hooks at run time.
  const runtimes = new Map<DeviceKind, ChannelRuntime>();
  const runtimeOf = (kind: DeviceKind) => runtimes.get(kind);

  const devicesModule = createDevicesModule({
    storage,
    secrets,
    clock,
    usage,
    hooks: {
      settingsChanged: (device) => runtimeOf(device.kind)?.settingsChanged?.(device),
      beforeRemove: async (ids) => failForDeletedDevice(state, await notificationRepo.pendingOnDevices(ids)),
    },
    options: { channels, allowPrivateTargets: config.allowPrivateWebhooks, offlineAfterMs },
  });
  const { repository: deviceRepo, service: devices } = devicesModule;

  const events = createEventsModule({ storage, clock }).service;
  const accounts = createAccountsModule({ storage, clock, secrets }).service;
  // Contacts show who opted out; safe sending reads a contact's time zone: each asks the other.
  const contacts = createContactsModule({ storage, clock, optOutOf: (workspaceId, phone) => safety.status(workspaceId, phone) });
  // An erased number's opt-out is kept under this digest (src/modules/privacy), keyed with pigeon.key.
  const optOutDigest = (phone: string) => secrets.digest(`opt-out:${phone}`);
  const safety = createSafetyModule({
    storage,
    clock,
    cluster,
    dispatchedRoutes,
    state,
    events,
    contactOf: contacts.contactOf,
    digest: optOutDigest,
  });
  /** Sender pools: which member an SMS goes out through (src/modules/pools). */
  const pools = createPoolsModule({
    storage,
    clock,
    cluster,
    device: (workspaceId, id) => deviceRepo.get(workspaceId, id),
    devicesOf: (workspaceId) => deviceRepo.all(workspaceId, true),
    kindOf: (kind) => {
      const t = channels.find((c) => c.kind === kind);
      return t ? { sms: t.deliveryType === "sms", needsPresence: t.needsPresence === true, dataSms: t.sendsDataSms === true } : null;
    },
    isOnline: (device, now) => isDeviceOnline(device, now, offlineAfterMs),
    emit: async (workspaceId, type, data) => void (await events.emit(workspaceId, type, data)),
  });
  const sending = createSendingService({
    log,
    pools,
    storage,
    clock,
    devices: deviceRepo,
    templates: templateRepo,
    notifications: notificationRepo,
    state,
    credits,
    usage,
    threads: threadRepo,
    channels,
    offlineAfterMs,
    safety,
    callerFor: (workspaceId) => accounts.callerFor(workspaceId),
    contactTags: (workspaceId, phone) => contacts.tagsOf(workspaceId, phone),
    keyDays: { hold: accounts.holdKeyDay, add: accounts.addKeyDaySends, sent: accounts.keyDaySendsOn },
    storeTogether: storage.dialect === "postgres",
  });
  // A failing notification on a failover order moves to its next route instead.
  state.setFailover((before, failure) => sending.failover(before, failure));
  const webhooks = createWebhookService({
    storage,
    clock,
    events,
    secrets,
    allowPrivate: config.allowPrivateWebhooks,
    onDelivery: metrics.webhookDelivery,
    fetch: deps.fetch,
    log,
    cluster,
  });

  /** Messages Pigeon sends by itself (src/modules/sending/own-accord.ts). */
  const replyOnOwnAccord = createOwnAccordSender({
    storage,
    sending,
    callerFor: (workspaceId) => accounts.callerFor(workspaceId),
    log,
    logger,
  });
  const keywordHook = createKeywordHook({
    safety,
    reply: (to, text, why) => replyOnOwnAccord([{ to: { ...to, simNumber: null }, content: { text }, why }]),
  });
  /** Inbound rules: what Pigeon does by itself with a message that comes in (src/modules/rules). */
  const rules = createRulesModule({
    storage,
    clock,
    log,
    timeZoneOf: async (workspaceId) => (await safety.settings(workspaceId)).timeZone,
    optedOut: async (workspaceId, phone) => (await safety.status(workspaceId, phone)).opted_out,
    ownNumbers: async (workspaceId) => new Set((await pools.ownNumbers(workspaceId)).map((o) => o.number)),
    addTag: (workspaceId, phone, tag, name) => contacts.service.addTag(workspaceId, phone, tag, name),
    contactName: async (workspaceId, phone) => (await contacts.nameOf(workspaceId, phone)) ?? null,
    templateExists: async (workspaceId, id) => (await templateRepo.get(workspaceId, id)) !== null,
    deviceExists: async (workspaceId, id) => (await deviceRepo.get(workspaceId, id)) !== null,
    webhooks: ruleWebhooks(webhooks, events),
    email: (m, stored, mail) => emailForward.queue(m, stored, mail),
    emailConfigured: () => config.smtp.relay !== null,
    send: replyOnOwnAccord,
  });
  const core: ChannelCore = {
    signals,
    serverId: cluster.id,
    shared: cluster.shared,
    storage,
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
    threads: threadRepo,
    events,
    rehomeTarget: (workspaceId, deviceId) => pools.rehomeTarget(workspaceId, deviceId),
    // What every inbound message goes through before it is announced, in order (src/modules/inbound).
    onInbound: createInboundPipeline({
      keywords: keywordHook,
      rules: (m, stored) => rules.onInbound(m, stored),
      heardFrom: (workspaceId, deviceId, sender, simNumber) => pools.heardFrom(workspaceId, deviceId, sender, simNumber),
      twilioIncoming: (m, stored) => twilio.posts.received(m, stored),
      email: (m, stored) => emailForward.onInbound(m, stored),
      smpp: (m, stored) => smpp.onInbound(m, stored),
    }),
  };
  const adapters: Partial<Record<DeviceKind, ChannelAdapter>> = {};
  const channelServices = {} as Record<string, unknown>;
  const builtChannels: { channel: Channel; runtime: ChannelRuntime }[] = [];
  for (const channel of channels) {
    const runtime: ChannelRuntime = channel.create(core);
    builtChannels.push({ channel, runtime });
    runtimes.set(channel.kind, runtime);
    channelServices[channel.name] = runtime.service;
    // The worker claims exactly the routes declared dispatched, so each must bring its adapter.
    if ((channel.dispatched === true) !== (runtime.adapter !== undefined))
      throw new Error(`channel ${channel.name}: dispatched and adapter disagree`);
    if (runtime.adapter) adapters[channel.kind] = runtime.adapter;
    if (runtime.check) sending.addCheck(channel.deliveryType, runtime.check);
  }

  const { authenticate } = accounts;
  /** Request limits and sign-in throttles: in the database when servers share it, else in memory. */
  const limits = createLimits({ storage, clock, shared: cluster.shared, generation: accounts.cacheGeneration });
  const services = {
    ...deps,
    log,
    /** The log itself: levels, fields and the format (src/lib/log.ts). */
    logger,
    system,
    disk,
    /** The storage seam: the executor and unit of work the moved modules write through. */
    storage,
    secrets,
    accounts,
    users: createUsersModule({ storage, clock, accounts, secrets }),
    authenticate,
    // Limits hold for every server sharing a PostgreSQL database; SQLite's one server counts in memory.
    // SQLite's requests read the cache generation (migrations/0034) to use what is kept in memory.
    rateLimiter: limits.rateLimiter,
    /** The dashboard's sign-in throttle, shared on PostgreSQL as the limits are. */
    signInThrottle: limits.signInThrottle,
    idempotency,
    devices,
    contacts: contacts.service,
    safety,
    templates: templatesModule.service,
    credits,
    state,
    notifications,
    expiry: notificationsModule.expiry,
    approval: notificationsModule.approval,
    /** Conversations: the thread routes' reads, and the worker's catch-up of sends into their threads. */
    threads: threadsModule.service,
    sending,
    events,
    webhooks,
    ...(channelServices as ChannelServices),
    /** What every channel is built from: the shared repositories and rules (ChannelCore). */
    channelCore: core,
    /** The channels this server carries, for the modules that take a rule from each. */
    channels: channels as readonly ChannelTraits[],
    /** Each channel's hooks, by device kind (the app's before-body checks, shutdown). */
    channelRuntimes: [...runtimes.values()],
    /** Each channel with its runtime, in order: the app mounts their routes, the worker runs their tasks. */
    builtChannels,
    /** The channel carrying a route (device kind), if this server carries it. */
    channelOf: runtimeOf,
    /** The modules this server is made of (src/modules/index.ts): the app, the worker and serve iterate them. */
    modules,
    /** Shutting down: the channels close their long-lived connections. */
    closeChannels() {
      for (const runtime of runtimes.values()) runtime.close?.();
    },
    dispatcher: createDispatcher({
      storage,
      clock,
      notifications: notificationRepo,
      devices: deviceRepo,
      state,
      adapters,
      paceOf: (device) => devices.pace(device),
      tickMs: config.workerIntervalSeconds * 1000,
      onOutcomes: async (outcomes) => {
        for (const route of new Set(outcomes.map((o) => o.n.route)))
          await runtimeOf(route)?.afterOutcomes?.(outcomes.filter((o) => o.n.route === route));
      },
      log,
      logger,
      cluster,
      onCall: metrics.dispatched,
    }),
    cluster,
    signals,
    backups,
    metrics,
    retention,
    pools,
    rules,
    /** One person's data: export and erasure (GDPR articles 15 and 17). */
    privacy: createPrivacyModule({
      storage,
      clock,
      removal: retentionModule.repository,
      notifications,
      safety,
      digest: optOutDigest,
    }),
    /** Every answered request, from the HTTP pipeline (src/http/foundation.ts): the access log and the metrics. */
    requestFinished(done: RequestDone): void {
      metrics.requestFinished(done);
      logRequest(done);
      deps.requestFinished?.(done);
    },
  };
  const smsgate = createSmsGateModule({
    ...services,
    requestInboxExport: (device, since, until) => services.phone.requestInboxExport(device, since, until),
  });
  /** Twilio's Messages API: the workspace's account SID and token, and messages as Twilio shows them. */
  const twilio = createTwilioModule({
    storage,
    clock,
    secrets,
    accounts,
    authenticate,
    sending,
    ownNumbers: (workspaceId) => pools.ownNumbers(workspaceId),
    optedOut: async (workspaceId, phone) => (await safety.status(workspaceId, phone)).opted_out,
    urlProblem: (url) => outboundTargetProblem(url, config.allowPrivateWebhooks),
    allowPrivate: config.allowPrivateWebhooks,
    cluster,
    log,
    fetch: deps.fetch,
    poolExists: (workspaceId, id) => pools.exists(workspaceId, id),
    cancel: (workspaceId, id) => notifications.cancel(workspaceId, id),
    remove: (id) => storage.transaction(async () => void (await retentionModule.repository.removeNotifications([id]))),
  });
  /** One-time codes: Twilio's Verify and Pigeon's /v1/api/verify (src/modules/verify). */
  const verify = createVerifyModule({
    storage,
    clock,
    secrets,
    sending,
    log,
    poolExists: (workspaceId, id) => pools.exists(workspaceId, id),
    templates: {
      get: (workspaceId, id) => templateRepo.get(workspaceId, id),
      ofChannel: async (workspaceId, channel) => (await templateRepo.list(workspaceId, { channel, offset: 0, limit: 500 })).rows,
    },
  });
  const dashboardLive = createLiveHub(state, signals);
  const emailModule = createEmailModule({ storage, clock, secrets, accounts });
  const email = emailModule.settings;
  /** SMS to email: the outbox of forwards and the task that sends them through the relay. */
  const emailForward = emailModule.forwarding({
    clock,
    relay: config.smtp.relay,
    from: config.smtp.from,
    log,
    contactName: async (workspaceId, phone) => (await contacts.nameOf(workspaceId, phone)) ?? null,
  });
  /** SMPP: credentials per workspace and the outbox of deliver_sm PDUs (src/modules/smpp). */
  const smpp = createSmppModule({
    storage,
    clock,
    secrets,
    logger,
    serverId: cluster.id,
    accounts,
    ownNumbers: (workspaceId) => pools.ownNumbers(workspaceId),
  });
  const built: Services = {
    ...services,
    twilio,
    verify,
    smsgate: smsgate.service,
    /** SMSGate's third-party API: its Basic and Bearer credentials and its tokens. */
    smsgateAuth: smsgate.auth,
    smsgateWebhooks: smsgate.webhooks,
    smsgateSettings: smsgate.settings,
    /** The dashboard's live status badges: one hub per server, hearing each change after the modules do. */
    dashboardLive,
    /** The email bridge's settings per workspace (src/modules/email). */
    email,
    emailForward,
    smpp,
  };
  // What each module hears of the notifications' lifecycle, in the order src/modules/index.ts states.
  for (const module of inListeningOrder(modules)) {
    const heard = module.listeners?.(built);
    if (!heard) continue;
    if (heard.transitions) state.onTransitions(heard.transitions);
    if (heard.transition) state.onTransition(heard.transition);
    if (heard.stored) sending.onStored(heard.stored);
    if (heard.accepted) sending.onAccepted(heard.accepted);
    if (heard.cancelled) notifications.onCancelled(heard.cancelled);
  }
  return built;
}
