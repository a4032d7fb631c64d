// The one shape every channel has (a Channel: its kind, config schema, send traits, adapter, hooks,
// routes and tasks), and the adapter the worker calls: hand a notification over, and (after an
// attempt whose outcome is unknown) ask the channel whether it already has it.
import type { Signals } from "../db/signals";
import type { AnyElysia } from "elysia";
import type { TObject } from "@sinclair/typebox";
import type { FastRoute } from "../http/fast-route";
import type { Clock } from "../clock";
import type { Config } from "../config";
import type { Storage } from "../db/storage";
import type { SignInGuard } from "../http/foundation";
import type { LogFn } from "../lib/log";
import type { SecretBox } from "../lib/secrets";
import type { DeviceStore } from "../modules/devices/ports";
import type { DeviceRow } from "../modules/devices/model";
import type { EventService } from "../modules/events/service";
import type { NotificationStore } from "../modules/notifications/ports";
import type { NotificationHooks } from "../modules/notifications/lifecycle";
import type { NotificationRecord, NotificationState } from "../modules/notifications/state";
import type { ChannelCheck } from "../modules/sending/types";
import type { TemplateStore } from "../modules/templates/ports";
import type { InboundHook } from "../modules/threads/inbound";
import type { ThreadStore } from "../modules/threads/ports";
import type { Task } from "../core/task";
import type { AccountsService } from "../modules/accounts/service";
import type { DeviceService } from "../modules/devices/service";
import type { IdempotencyStore } from "../http/idempotency";
import type { RateLimiter } from "../http/rate-limit";
import type { SendingService } from "../modules/sending/service";
import type { ChannelTraits } from "../core/kinds";

export type DispatchOutcome =
  /** The channel took it: the notification is sent, with the channel's id for it. */
  | { kind: "accepted"; externalId: string; detail?: string }
  /** Transient (network, overload, the provider's rate limit): retry with backoff. */
  | { kind: "retryable"; code: string; reason: string; reconcile?: boolean }
  /** The carrier or device asks us to slow down: try again next tick, not counted as an attempt. */
  | { kind: "throttled"; reason: string }
  /** Will never work as it is: fail now. `block` marks the device blocked (chat-app account problems). */
  | { kind: "permanent"; code: string; reason: string; block?: boolean }
  /** Cut off mid-call (timeout): the channel may or may not have it; ask before sending again. */
  | { kind: "uncertain"; reason: string };

export interface ChannelAdapter {
  send(n: NotificationRecord, device: DeviceRow): Promise<DispatchOutcome>;
  /**
   * After an uncertain attempt: the channel's ids of every message it holds that could be this one
   * (same recipient and text, in the attempt's time window); empty if it surely has none. Several
   * identical notifications may match the same messages, so the dispatcher claims one that no
   * other notification owns. Throws when it cannot tell (the dispatcher then waits and asks again).
   */
  reconcile?(n: NotificationRecord, device: DeviceRow): Promise<string[]>;
  /**
   * Before the calls of a claimed batch: reads what they will need in one go, kept for those calls
   * only (each call that finds nothing kept reads its own). A failure here only costs those reads.
   */
  prepare?(batch: readonly NotificationRecord[]): Promise<void>;
}

/** What the composition root hands every channel when it builds it: the shared repositories and rules. */
export interface ChannelCore {
  /** The storage seam: the executor and unit of work repositories that moved to it run through. */
  storage: Storage;
  clock: Clock;
  config: Config;
  secrets: SecretBox;
  log: LogFn;
  /** The HTTP client channels use; tests may wrap it. */
  fetch?: typeof fetch;
  /** How long a channel waits for its provider's answer. */
  channelTimeoutMs?: number;
  devices: DeviceStore;
  templates: TemplateStore;
  notifications: NotificationStore;
  state: NotificationState;
  threads: ThreadStore;
  events: EventService;
  /** What every inbound message goes through before it is announced (the opt-out keywords). */
  onInbound?: InboundHook;
  /**
   * Where a phone's waiting messages go when it went offline, if its sender pool says (another
   * usable phone member, and that member's SIM); null leaves the choice to the channel.
   */
  rehomeTarget?: (workspaceId: number, deviceId: number) => Promise<{ deviceId: number; simNumber: number | null } | null>;
  /** Hints to the other servers sharing the database (LISTEN/NOTIFY on PostgreSQL; none on SQLite). */
  signals: Signals;
  /** This server's id among those sharing the database (its leases, its claims). */
  serverId: string;
  /** Whether other servers may share the database (cluster.shared). */
  shared: boolean;
}

/** An attempt's notification, its device and what came of it. */
export interface AttemptOutcome {
  n: NotificationRecord;
  device: DeviceRow;
  outcome: DispatchOutcome;
}

/**
 * A built channel: its own service (reachable as `services[name]`) and the hooks through which the
 * shared modules reach it (a notification's among them: NotificationHooks). Every hook is
 * optional; a channel implements what it needs.
 */
export interface ChannelRuntime<S = unknown> extends NotificationHooks {
  service: S;
  /** Present when the worker hands this channel's notifications over (cloud, chat-app). */
  adapter?: ChannelAdapter;
  /** A send rule of its own, run after the common ones for its delivery type. */
  check?: ChannelCheck;
  /**
   * Inside the unit that recorded them: the outcomes of attempts on its devices, those the worker
   * recorded together (one or many).
   */
  afterOutcomes?(outcomes: readonly AttemptOutcome[]): void | Promise<void>;
  /** One of its devices had its settings changed. */
  settingsChanged?(device: DeviceRow): void;
  /** Checks a request may need before its body is read (sign-in throttling of phone registration). */
  beforeBody?(method: string, path: string, headers: Headers, signIn: SignInGuard): void | Promise<void>;
  /** Shutting down: close long-lived connections (event streams). */
  close?(): void;
}

/**
 * What a channel's routes may use of the services, named here so that no channel imports the
 * composition root (which imports every channel).
 */
export interface ChannelRouteContext {
  config: Config;
  secrets: SecretBox;
  rateLimiter: RateLimiter;
  accounts: AccountsService;
  devices: DeviceService;
  state: NotificationState;
  sending: SendingService;
  idempotency: IdempotencyStore;
}

/** One channel: everything the rest of Pigeon knows about it. `name` is its key in the services. */
export interface Channel<N extends string = string, S = unknown> extends ChannelTraits {
  name: N;
  create(core: ChannelCore): ChannelRuntime<S>;
  /** Its HTTP routes (callbacks, webhooks, the phone's API), given its own service. */
  routes(service: S, s: ChannelRouteContext): AnyElysia[];
  /**
   * Those of its routes that are also served outside the framework (src/http/fast-route.ts): its
   * send routes, declared among `routes` too, for the API document and as the fast handlers' fallback.
   */
  fastRoutes?(service: S, s: ChannelRouteContext): FastRoute<TObject>[];
  /** Its periodic work, named domain:verb, given its own service. */
  tasks(service: S, config: Config): Task[];
}
