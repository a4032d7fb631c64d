// What the send path takes and gives: a send's input, a prepared message, what was stored, the
// port a channel adds its own checks through, and what the sending service is built from. The
// service itself is put together in service.ts.
import type { Clock } from "../../clock";
import type { DataMessage } from "../../lib/data-sms";
import type { AuthContext } from "../../core/caller";
import type { AppError } from "../../core/errors";
import type { ChannelTraits, DeliveryType, DeviceKind } from "../../core/kinds";
import type { Storage } from "../../db/storage";
import type { CreditService } from "../credits/service";
import type { DeviceStore } from "../devices/ports";
import type { DeviceRow } from "../devices/model";
import type { NotificationStore } from "../notifications/ports";
import type { NotificationState } from "../notifications/state";
import type { PoolPick, PoolService } from "../pools/service";
import type { SafetyMemo, SafetyService } from "../safety/service";
import type { TemplateStore } from "../templates/ports";
import type { TemplateRow } from "../templates/model";
import type { ThreadStore } from "../threads/ports";
import type { SuppliedVariables } from "../templates/variables";
import type { UsageStore } from "../notifications/ports";

export interface SendInput {
  channel: DeliveryType;
  recipient: unknown;
  message?: string | null;
  templateId?: string | number | null;
  variables?: SuppliedVariables;
  recipientName?: string | null;
  scheduleTime?: string | null;
  timezone?: string | null;
  deviceId?: string | number | null;
  /** The sender pool to choose the device from (else the workspace's default pool, if it has one). */
  poolId?: number | null;
  /** What the channel needs at send time beyond the text (a chat-app template's header media). */
  channelPayload?: Record<string, unknown> | null;
  /** The paired phone's SIM, 1-3. */
  simNumber?: number | null;
  /** The companion app's priority, -128..127. */
  priority?: number | null;
  /** Bits of NOTIFICATION_HOOKS: what must hear of its changes. */
  hooks?: number;
  withDeliveryReport?: boolean | null;
  /** Seconds the message may wait, from its due time. */
  ttl?: number | null;
  /** ISO 8601 instant after which it must not go out. */
  validUntil?: string | null;
  /** Failover order, in route names ("phone", "cloud", "chatapp"); else the workspace default. */
  routes?: readonly string[] | null;
  /** The chat-app template a chat-app route sends when the 24-hour window is closed (with `variables`). */
  chatappTemplateId?: string | number | null;
  /** A message the recipient asked for (a code, a receipt): quiet hours do not hold it. */
  transactional?: boolean | null;
  /** A reply Pigeon sends on its own (an opt-out confirmation): neither opt-outs nor quiet hours apply. */
  system?: boolean;
  /** A data SMS instead of text: base64 bytes to a port (paired phones only; see data-message.ts). */
  dataMessage?: { data?: unknown; port?: unknown } | null;
  /** How the caller's API names the data SMS and the text, for its refusals (data_message, dataMessage). */
  dataMessageField?: string;
  messageField?: string;
  /**
   * End-to-end encrypted: `recipient` and `message` are the companion app's ciphertext, checked for
   * their form only and handed to a paired phone as they are (src/modules/sending/encrypted.ts).
   */
  encrypted?: boolean | null;
  /** Why it is sent (at most 500 characters): shown to whoever approves it, when the key needs approval. */
  reason?: string | null;
}

/** The companion app's priority from which its limits and delays are skipped (Message.PRIORITY_EXPEDITED). */
export const PRIORITY_EXPEDITED = 100;

export interface Prepared {
  channel: DeliveryType;
  device: DeviceRow;
  recipient: string;
  recipientName: string | null;
  template: TemplateRow | null;
  templateVars: Record<string, string> | null;
  message: string;
  scheduleAt: number | null;
  timezone: string | null;
  segments: number;
  cost: number;
  /** What the channel needs at send time beyond the text (a chat-app template's header media). */
  channelPayload?: Record<string, unknown> | null;
  simNumber: number | null;
  priority: number;
  hooks: number;
  withDeliveryReport: boolean;
  /** Epoch ms after which it must not go out, or null. */
  validUntil: number | null;
  /** The failover order (device kinds) this message follows, or null. */
  routes: DeviceKind[] | null;
  /** Routes of that order that could not take it at all, with why. */
  skipped: { route: DeviceKind; error: AppError }[];
  /** Held by the recipient's quiet hours: scheduleAt is when they end. */
  quietHold: { until: number; zone: string } | null;
  /** What a later route needs (the chat-app template for a closed window). */
  fallback: Fallback | null;
  /** The sender pool's choice, for the log: which member took it and why the others did not. */
  poolNote?: string | null;
  /** The pool member that sends it (its caps count it once it is accepted). */
  poolMemberId?: number | null;
  /** Every pool member was at a cap: it waits for the first reset (and fails quota_exhausted at its ttl). */
  poolHeld?: boolean;
  /** A data SMS: its payload and port (`message` is empty, one segment). */
  dataMessage?: DataMessage | null;
  /** Recipient and message are ciphertext only the paired phone can read. */
  encrypted?: boolean;
  /** The sender's stated reason (SendInput.reason). */
  reason?: string | null;
  /** Stored awaiting approval (its key needs approval): set by accept. */
  awaitingApproval?: boolean;
}

/** Kept with a failover send: the chat-app template a chat-app route falls back to, and its variables. */
export interface Fallback {
  chatappTemplateId?: string | number | null;
  variables?: SuppliedVariables;
}

/** What every route of a send shares: checked once, before a route is chosen. */
export type Common = Pick<
  Prepared,
  | "recipient"
  | "recipientName"
  | "template"
  | "templateVars"
  | "message"
  | "scheduleAt"
  | "timezone"
  | "validUntil"
  | "quietHold"
  | "fallback"
  | "dataMessage"
>;

export interface Accepted {
  notificationId: number;
  prepared: Prepared;
}

export type ItemResult = { ok: true; accepted: Accepted } | { ok: false; error: AppError };

/**
 * A check a channel adds to the common ones (the chat-app window, blocked numbers, …). It throws
 * an AppError to refuse, and returns what it changes (another device of the channel), if anything.
 */
export type ChannelCheck = (
  auth: AuthContext,
  prepared: Prepared,
  input: SendInput,
) => Partial<Pick<Prepared, "device">> | undefined | Promise<Partial<Pick<Prepared, "device">> | undefined>;

export interface SendingDeps {
  /** The unit of work a stranded message's failover runs in. */
  storage: Storage;
  clock: Clock;
  /** Where a listener that fails after a commit is reported. */
  log?: (message: string, error?: unknown) => void;
  devices: DeviceStore;
  templates: TemplateStore;
  notifications: NotificationStore;
  state: NotificationState;
  credits: CreditService;
  usage: UsageStore;
  threads: ThreadStore;
  /** What each channel (device kind) asks of the send path. */
  channels: readonly ChannelTraits[];
  /** PIGEON_OFFLINE_AFTER in milliseconds: how long a phone with an event stream may be silent. */
  offlineAfterMs?: number;
  /** Opt-outs, quiet hours and the workspace's default routes. */
  safety: Pick<SafetyService, "refusal" | "readOptOuts" | "quietHold" | "settings">;
  /** Sender pools: the member an SMS without a device goes out through. */
  pools?: Pick<PoolService, "choose">;
  /** The tags of the workspace's contact with this number, or null when there is none (a key's recipient policy). */
  contactTags: (workspaceId: number, phone: string) => Promise<string[] | null>;
  /** A key's daily send counter (src/core/scopes.ts): held and read, then added to, in the accept's unit of work. */
  keyDays: {
    hold(keyId: number, now: number): Promise<number>;
    add(keyId: number, now: number, count: number): Promise<void>;
    /** The key's sends so far today, read without holding the row (a preview). */
    sent(keyId: number, now: number): Promise<number>;
  };
  /** The caller a failover re-checks a message as (its workspace's terms). */
  callerFor: (workspaceId: number) => Promise<AuthContext>;
  /**
   * Whether concurrent sends of one key are stored together (acceptTogether): on PostgreSQL, where
   * each statement is a round trip and each unit a commit of its own. SQLite's units of one turn
   * already share a commit, and its statements cost no round trip.
   */
  storeTogether?: boolean;
}

/** Reads the items of one request share while they are prepared (see `prepare`). */
export interface PrepareCache {
  devices: Map<number, DeviceRow[]>;
  /** Each workspace's safety settings and, read up front (sending.readAhead), its recipients' opt-outs. */
  safety: Map<number, SafetyMemo>;
  /** Sender-pool members chosen for the request's earlier items, not stored yet: they count as load and toward caps. */
  poolPicks?: Map<number, PoolPick>;
}

export const newPrepareCache = (): PrepareCache => ({ devices: new Map(), safety: new Map(), poolPicks: new Map() });
