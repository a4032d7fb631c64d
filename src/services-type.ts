// The services' type, written out: what the composition root (src/services.ts) builds, field by
// field, each typed by its module's own service. Route factories take a Pick of it. Kept apart
// from the root so that naming it imports no module's routes or descriptor (no import cycle).
import type { Channel, ChannelCore, ChannelRuntime } from "./channels/types";
import type { CHANNELS } from "./channels";
import type { Clock } from "./clock";
import type { Config } from "./config";
import type { Cluster } from "./core/cluster";
import type { ChannelTraits, DeviceKind } from "./core/kinds";
import type { Db } from "./db/client";
import type { PostgresPool } from "./db/postgres-storage";
import type { Signals } from "./db/signals";
import type { Storage } from "./db/storage";
import type { LiveHub } from "./dashboard/live";
import type { IdempotencyStore } from "./http/idempotency";
import type { RateLimiter, SignInThrottle } from "./http/rate-limit/types";
import type { RequestDone } from "./lib/request-done";
import type { LogFn, Logger } from "./lib/log";
import type { SecretBox } from "./lib/secrets";
import type { AccountsService } from "./modules/accounts/service";
import type { ContactService } from "./modules/contacts/service";
import type { CreditService } from "./modules/credits/service";
import type { AnyElysia } from "elysia";
import type { TObject } from "@sinclair/typebox";
import type { Task } from "./core/task";
import type { FastRoute } from "./http/fast-route";
import type { ForeignApi, ModuleListeners, NetworkListener } from "./modules/descriptor";
import type { DeviceService } from "./modules/devices/service";
import type { EventService } from "./modules/events/service";
import type { MetricsService } from "./modules/metrics/service";
import type { Approval } from "./modules/notifications/approval";
import type { Expiry } from "./modules/notifications/expiry";
import type { NotificationService } from "./modules/notifications/service";
import type { NotificationState } from "./modules/notifications/state";
import type { PoolService } from "./modules/pools/service";
import type { PrivacyService } from "./modules/privacy/service";
import type { EmailForwarding } from "./modules/email/forward";
import type { EmailSettingsService } from "./modules/email/settings";
import type { SmppService } from "./modules/smpp/service";
import type { Retention } from "./modules/retention/service";
import type { RuleService } from "./modules/rules/service";
import type { SafetyService } from "./modules/safety/service";
import type { SendingService } from "./modules/sending/service";
import type { SmsGateAuth } from "./modules/smsgate/auth";
import type { SmsGateService } from "./modules/smsgate/service";
import type { createSmsGateSettings } from "./modules/smsgate/settings";
import type { SmsGateWebhooks } from "./modules/smsgate/webhooks";
import type { createBackupSchedule } from "./modules/system/backups";
import type { SystemService } from "./modules/system/service";
import type { TemplateService } from "./modules/templates/service";
import type { ThreadService } from "./modules/threads/service";
import type { TwilioPosts } from "./modules/twilio/posts";
import type { TwilioService } from "./modules/twilio/service";
import type { UserService } from "./modules/users/service";
import type { VerifyService } from "./modules/verify/service";
import type { WebhookService } from "./modules/webhooks/service";
import type { Dispatcher } from "./worker/dispatcher";

/** What the composition root is built from. */
export interface Deps {
  /** The SQLite database (the default); null when the server runs on PostgreSQL. */
  db: Db | null;
  /** The PostgreSQL pool, when the server runs on PostgreSQL instead of SQLite. */
  postgres?: PostgresPool;
  config: Config;
  clock: Clock;
  /** Where modules report problems (src/lib/log.ts); by default the logger's `log`. Tests pass their own. */
  log?: LogFn;
  /** Where every log line goes; by default stdout and stderr, as PIGEON_LOG_LEVEL and PIGEON_LOG_FORMAT say. */
  logger?: Logger;
  /** The HTTP client channels use; tests may wrap it. */
  fetch?: typeof fetch;
  /** How long channels wait for a provider's answer (default 15 s). */
  channelTimeoutMs?: number;
  /** The channels to carry (default CHANNELS); tests add a throwaway one. */
  channels?: readonly Channel[];
  /** The modules to run (default MODULES); tests add a throwaway one. */
  modules?: readonly ModuleDescriptor[];
  /** Also told of every answered request (tests watch the pipeline through it). */
  requestFinished?: (done: RequestDone) => void;
}

/** Each channel's own service, under its name (`services.chatapp`, `services.phone`). */
export type ChannelServices = { [C in (typeof CHANNELS)[number] as C["name"]]: ReturnType<C["create"]>["service"] };

export type Services = ChannelServices & {
  // What it was built from.
  db: Db | null;
  postgres?: PostgresPool;
  config: Config;
  clock: Clock;
  fetch?: typeof fetch;
  channelTimeoutMs?: number;
  /** Where modules report problems. */
  log: LogFn;
  /** The log itself: levels, fields and the format (src/lib/log.ts). */
  logger: Logger;
  /** Every answered request, from the HTTP pipeline: the access log and the metrics. */
  requestFinished(done: RequestDone): void;

  // The ground every module stands on.
  /** The storage seam: the executor and unit of work every repository writes through. */
  storage: Storage;
  secrets: SecretBox;
  /** This server among those sharing the database (alone on SQLite): its id, leases, leadership. */
  cluster: Cluster;
  /** Hints to and from the other servers (phones' event streams, dashboards' live badges). */
  signals: Signals;
  /** Health, server info and the full-disk monitor. */
  system: SystemService;
  /** Whether writes fail for a full disk (the system module's monitor). */
  disk: SystemService["disk"];
  /** Scheduled backups (SQLite with PIGEON_BACKUP_DIR), else null. */
  backups: ReturnType<typeof createBackupSchedule> | null;
  /** Retention (PIGEON_RETENTION_DAYS, `pigeon prune`). */
  retention: Retention;
  metrics: MetricsService;
  /** Request limits, in the database when servers share it. */
  rateLimiter: RateLimiter;
  /** The dashboard's sign-in throttle, shared as the limits are. */
  signInThrottle: SignInThrottle;
  idempotency: IdempotencyStore;

  // Who calls.
  accounts: AccountsService;
  /** A request's API key, checked (the accounts module's). */
  authenticate: AccountsService["authenticate"];
  users: UserService;

  // The modules' services.
  devices: DeviceService;
  contacts: ContactService;
  safety: SafetyService;
  templates: TemplateService;
  credits: CreditService;
  /** The notifications' state machine: every change goes through it. */
  state: NotificationState;
  notifications: NotificationService;
  expiry: Expiry;
  /** Approval before a send: the list, the decisions and the expiry of what awaits approval. */
  approval: Approval;
  /** Conversations: the thread routes' reads, and the worker's catch-up of sends into their threads. */
  threads: ThreadService;
  sending: SendingService;
  events: EventService;
  webhooks: WebhookService;
  pools: PoolService;
  rules: RuleService;
  /** One person's data: export and erasure (GDPR articles 15 and 17). */
  privacy: PrivacyService;
  /** Twilio's Messages API: credentials, messages as Twilio shows them, and its posts. */
  twilio: TwilioService & { posts: TwilioPosts };
  /** One-time codes: Twilio's Verify and Pigeon's /v1/api/verify. */
  verify: VerifyService;
  smsgate: SmsGateService;
  /** SMSGate's third-party API: its Basic and Bearer credentials and its tokens. */
  smsgateAuth: SmsGateAuth;
  smsgateWebhooks: SmsGateWebhooks;
  smsgateSettings: ReturnType<typeof createSmsGateSettings>;

  // The channels and the worker.
  /** What every channel is built from: the shared repositories and rules. */
  channelCore: ChannelCore;
  /** The channels this server carries, for the modules that take a rule from each. */
  channels: readonly ChannelTraits[];
  /** Each channel's hooks (the app's before-body checks, shutdown). */
  channelRuntimes: ChannelRuntime[];
  /** Each channel with its runtime, in order: the app mounts their routes, the worker runs their tasks. */
  builtChannels: { channel: Channel; runtime: ChannelRuntime }[];
  /** The channel carrying a route (device kind), if this server carries it. */
  channelOf: (kind: DeviceKind) => ChannelRuntime | undefined;
  /** Shutting down: the channels close their long-lived connections. */
  closeChannels(): void;
  /** The worker's dispatcher: hands due notifications to their channels. */
  dispatcher: Dispatcher;
  /** The modules this server is made of (src/modules/index.ts): the app, the worker and serve iterate them. */
  modules: readonly ModuleDescriptor[];
  /** The dashboard's live status badges: one hub per server. */
  dashboardLive: LiveHub;
  /** The email bridge's settings per workspace: content, default country, the secret address. */
  email: EmailSettingsService;
  /** SMS to email: forwards of received messages, queued and sent through the relay. */
  emailForward: EmailForwarding;
  /** The SMPP listener's service: credentials, the outbox of receipts and received SMS, its ports. */
  smpp: SmppService;
};

/**
 * What a module tells the rest of the server about itself, beyond its service: the routes it
 * serves, by audience, the periodic work it runs, what it hears of other modules' changes, and any
 * network listener of its own. Each module's index.ts exports one; src/modules/index.ts lists them
 * in order, and the app, the worker and `pigeon serve` iterate that list (as they iterate the
 * channels), so adding a module touches none of them. Building a module's service stays explicit in
 * the composition root (src/services.ts), where each module is handed exactly the deps it names.
 */
/** The app a module's routes are mounted in: its own request handler, every route and check included. */
export interface AppSelf {
  handle(request: Request): Promise<Response>;
}

export interface ModuleDescriptor {
  /** The module's folder under src/modules. */
  name: string;
  /**
   * Its routes, mounted in list order, each group under its audience. `app` is the app they are
   * mounted in, for a module that calls the API in process as a client would (MCP's tools).
   */
  routes?: (
    s: Services,
    app: AppSelf,
  ) => {
    /** Pigeon's own API (/v1/api, /health, /metrics). */
    api?: AnyElysia[];
    /** Routes of an API Pigeon imitates (see `foreign`), mounted before the module's own. */
    foreign?: AnyElysia[];
  };
  /** POST routes that skip the framework on their hot path (src/http/fast-route.ts); each also has its framework route. */
  fastRoutes?: (s: Services) => FastRoute<TObject>[];
  /** The foreign API this module imitates, if any. */
  foreign?: (s: Services) => ForeignApi;
  /** Periodic work, run by the worker (on the cluster's leader unless a task says every server). */
  tasks?: (s: Services) => Task[];
  /** What it hears of the notifications' lifecycle (see LISTENING for the order). */
  listeners?: (s: Services) => ModuleListeners;
  /** At the worker's start (and on a cluster's leader, every few seconds): takes back what a stopped server left claimed; returns a line to warn with, if any. */
  recover?: (s: Services) => Promise<string | null>;
  /** At shutdown, before the worker waits for work in flight: nothing new is started. */
  stop?: (s: Services) => void;
  /** A network listener of its own, started by `pigeon serve` after the HTTP server (null when its setting is off). */
  listen?: (s: Services, app: AppSelf) => Promise<NetworkListener | null>;
}
