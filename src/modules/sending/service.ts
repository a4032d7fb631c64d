// Accepting a message: every check of spec sections 4 and 7 that can be made before anything is
// written, then the writes (store the notification, debit its credits) in the caller's unit of
// work (batched with its turn's others: the group commit). After commit, listeners wake whoever carries it. It answers with data; the
// routes present it, and src/http/idempotency keeps the reply for repeats.
import type { Clock } from "../../clock";
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import type { Storage } from "../../db/storage";
import { toE164 } from "../../lib/phone";
import { parseScheduleTime, requireTimeZone } from "../../core/schedule";
import { countSegments } from "../../lib/segments";
import { monthStart } from "../../lib/time";
import { timeOrderedId } from "../../lib/tokens";
import { findUrl } from "../../lib/urls";
import type { CreditService } from "../credits/service";
import type { DeviceRepository, DeviceRow } from "../devices/repository";
import { allowedSilence, isOnline as isDeviceOnline, OFFLINE_AFTER_MS, reportedSimNumbers } from "../devices/service";
import type { NewNotification, NotificationRecord, NotificationRepository } from "../notifications/repository";
import type { LogFields, NotificationState } from "../notifications/state";
import type { TemplateRepository, TemplateRow } from "../templates/repository";
import type { ThreadRepository } from "../threads/repository";
import { checkVariables, renderTemplate, type SuppliedVariables } from "../templates/variables";
import type { UsageRepository } from "../usage/repository";
import { TTL_MAX_SECONDS } from "./model";
import { DELIVERY_TYPES, ROUTE_DESCRIPTION, ROUTE_NAMES, type ChannelTraits, type DeliveryType, type DeviceKind } from "../../core/kinds";
import type { SafetyMemo, SafetyService } from "../safety/service";
import { parseRoutes } from "../safety/settings";
import { createBatcher } from "../../lib/batcher";
import { createGenerationCache } from "../../lib/generation-cache";
import type { PoolChoice, PoolPick, PoolService } from "../pools/service";

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
}

/** Kept with a failover send: the chat-app template a chat-app route falls back to, and its variables. */
export interface Fallback {
  chatappTemplateId?: string | number | null;
  variables?: SuppliedVariables;
}

/** What every route of a send shares: checked once, before a route is chosen. */
type Common = Pick<
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

/**
 * Failures no other route changes: the recipient opted out, the message expired or was cancelled,
 * the chat-app user stopped marketing messages, a cloud number's recipient unsubscribed there.
 */
const FINAL_FAILURES = new Set(["recipient_opted_out", "expired", "outcome_unknown", "cancelled", "131050", "21610"]);

/** Stranded messages looked at per worker tick. */
const STRANDED_BATCH = 100;

/** A schedule_time up to this far behind the clock still counts as "now" (it has whole seconds). */
const PAST_GRACE_MS = 1000;

export interface SendingDeps {
  /** The unit of work a stranded message's failover runs in. */
  storage: Storage;
  clock: Clock;
  /** Where a listener that fails after a commit is reported. */
  log?: (message: string, error?: unknown) => void;
  devices: DeviceRepository;
  templates: TemplateRepository;
  notifications: NotificationRepository;
  state: NotificationState;
  credits: CreditService;
  usage: UsageRepository;
  threads: ThreadRepository;
  /** What each channel (device kind) asks of the send path. */
  channels: readonly ChannelTraits[];
  /** PIGEON_OFFLINE_AFTER in milliseconds: how long a phone with an event stream may be silent. */
  offlineAfterMs?: number;
  /** Opt-outs, quiet hours and the workspace's default routes. */
  safety: Pick<SafetyService, "refusal" | "readOptOuts" | "quietHold" | "settings">;
  /** Sender pools: the member an SMS without a device goes out through. */
  pools?: Pick<PoolService, "choose">;
  /** The caller a failover re-checks a message as (its workspace's terms). */
  callerFor: (workspaceId: number) => Promise<AuthContext>;
  /**
   * Whether concurrent sends of one key are stored together (acceptTogether): on PostgreSQL, where
   * each statement is a round trip and each unit a commit of its own. SQLite's units of one turn
   * already share a commit, and its statements cost no round trip.
   */
  storeTogether?: boolean;
}

export function createSendingService(deps: SendingDeps) {
  const { storage, clock, devices, templates, notifications, state, credits, usage, threads } = deps;
  const channelChecks = Object.fromEntries(DELIVERY_TYPES.map((d) => [d, [] as ChannelCheck[]])) as Record<DeliveryType, ChannelCheck[]>;
  /** The kinds of device that carry each delivery type, and each kind's traits. */
  const CARRIERS = Object.fromEntries(
    DELIVERY_TYPES.map((d) => [d, deps.channels.filter((c) => c.deliveryType === d).map((c) => c.kind)]),
  ) as Record<DeliveryType, DeviceKind[]>;
  const traits = new Map(deps.channels.map((c) => [c.kind, c]));
  const needsPresence = (device: DeviceRow) => traits.get(device.kind)?.needsPresence === true;
  const isOnline = (device: DeviceRow, now: number) => isDeviceOnline(device, now, deps.offlineAfterMs);
  const acceptedListeners: ((accepted: Accepted[]) => void | Promise<void>)[] = [];
  const storeListeners: ((accepted: Accepted[]) => Promise<void>)[] = [];
  /** After commit: every listener hears of what was stored; one that fails is reported and does not stop the others. */
  const announceAccepted = (accepted: Accepted[]) => {
    for (const listener of acceptedListeners) {
      Promise.resolve()
        .then(() => listener(accepted))
        .catch((error: unknown) => (deps.log ?? console.error)("an accept listener failed", error));
    }
  };

  async function resolveTemplate(workspaceId: number, ref: string | number, channel: DeliveryType): Promise<TemplateRow> {
    const text = String(ref).trim();
    let row: TemplateRow | null = null;
    if (/^\d+$/.test(text)) row = await templates.get(workspaceId, Number(text));
    else if (text) row = await templates.visibleByCode(workspaceId, text);
    if (!row) throw new AppError("not_found", `template ${text || "(empty)"} not found`, { field: "template_id" });
    if (row.channel !== channel) {
      throw new AppError("validation_error", `template ${row.id} is a ${row.channel} template and cannot be sent as ${channel}`, {
        field: "template_id",
        location: "body",
        reason: `must be a ${channel} template`,
      });
    }
    if (row.status !== "active") {
      // A chat-app template the platform paused or disabled answers with the platform's own code.
      const platformCode = channel === "chatapp" ? ({ paused: 132015, disabled: 132016 } as Record<string, number>)[row.status] : undefined;
      throw new AppError(
        "template_inactive",
        `template ${row.id} is ${row.status} and cannot be sent`,
        { template_id: row.id, status: row.status },
        platformCode,
      );
    }
    return row;
  }

  // Each workspace's devices are also kept between requests (src/lib/generation-cache.ts),
  // at most a second, and only while every phone among them looks online: a phone's last contact,
  // which says whether it is, is written about once a second and leaves the cache generation
  // alone, so a phone that looks offline is read again (it may have called in since).
  const keptDevices = createGenerationCache<number, { rows: DeviceRow[]; at: number }>();

  /**
   * The workspace's devices, read once per request: a bulk request's items share one read (the
   * `seen` of its prepare calls) instead of a read per item; and once a second while
   * nothing about them changes.
   */
  async function activeDevices(workspaceId: number, seen: PrepareCache | undefined, generation: number | undefined): Promise<DeviceRow[]> {
    const cached = seen?.devices.get(workspaceId);
    if (cached) return cached;
    const now = clock.now();
    const kept = keptDevices.get(workspaceId, generation);
    // A phone that looks offline in what is kept may have called in since: read again then.
    const current = kept && now >= kept.at && now - kept.at < 1000 && kept.rows.every((d) => !needsPresence(d) || isOnline(d, now));
    const rows = current ? kept.rows : await devices.all(workspaceId, false);
    if (rows !== kept?.rows) keptDevices.set(workspaceId, { rows, at: now }, generation);
    seen?.devices.set(workspaceId, rows);
    return rows;
  }

  /**
   * The device to send through: the one named, or the first active one that can carry it now.
   * `kind` narrows the choice to one route's devices (a failover send); a named device of another
   * kind is then left for its own route.
   */
  async function chooseDevice(
    workspaceId: number,
    channel: DeliveryType,
    ref: string | number | null | undefined,
    immediate: boolean,
    kind: DeviceKind | null,
    seen: PrepareCache | undefined,
    generation: number | undefined,
  ): Promise<DeviceRow> {
    const now = clock.now();
    const carries = (k: DeviceKind) => (kind === null ? CARRIERS[channel].includes(k) : k === kind);
    if (ref !== undefined && ref !== null && String(ref).trim() !== "") {
      const text = String(ref).trim();
      const device = /^\d+$/.test(text) ? await devices.get(workspaceId, Number(text)) : null;
      if (!device) throw new AppError("not_found", `device ${text} not found`, { field: "device_id" });
      if (kind === null || device.kind === kind) {
        if (!carries(device.kind)) {
          throw new AppError("invalid_device", `device ${device.id} is a ${device.kind} device and cannot carry ${channel} messages`, {
            device_id: device.id,
            kind: device.kind,
          });
        }
        if (device.status !== "active") throw new AppError("device_inactive", `device ${device.id} is inactive`, { device_id: device.id });
        if (needsPresence(device) && immediate && !isOnline(device, now)) throw offline(device);
        return device;
      }
    }
    const candidates = (await activeDevices(workspaceId, seen, generation)).filter((d) => carries(d.kind));
    if (candidates.length === 0) {
      const what = kind !== null ? ROUTE_DESCRIPTION[kind] : channel === "sms" ? "SMS (phone or cloud number) device" : "chat-app device";
      throw new AppError("no_active_device", `No active ${what} in this workspace`, { channel, ...(kind !== null ? { route: kind } : {}) });
    }
    const usable = candidates.find((d) => d.blockedCode === null && (!needsPresence(d) || !immediate || isOnline(d, now)));
    if (usable) return usable;
    // Everything is blocked or offline: answer with the first device's reason.
    const first = candidates[0];
    if (needsPresence(first) && immediate) throw offline(first);
    return first;
  }

  /**
   * The sender pool's member for an SMS that names no device: from `pool_id`, else the workspace's
   * default pool. Not on a failover route (its devices are the route's), nor for a send that picks a
   * SIM itself without a pool. Null: no pool applies, the device is chosen as without pools.
   */
  async function poolChoice(
    auth: AuthContext,
    input: SendInput,
    common: Common,
    channel: DeliveryType,
    kind: DeviceKind | null,
    segments: number,
    picks?: Map<number, PoolPick>,
  ): Promise<PoolChoice | null> {
    const named = input.poolId !== undefined && input.poolId !== null;
    const device = input.deviceId !== undefined && input.deviceId !== null && String(input.deviceId).trim() !== "";
    if (named && device) throw new AppError("validation_error", "Give pool_id or device_id, not both", { field: "pool_id" });
    if (named && input.simNumber !== undefined && input.simNumber !== null)
      throw new AppError("validation_error", "sim_number needs device_id: a pool's member names its own SIM", { field: "sim_number" });
    if (named && (channel !== "sms" || kind !== null))
      throw new AppError("validation_error", "pool_id applies to SMS sends without a failover order (routes)", { field: "pool_id" });
    if (!deps.pools || channel !== "sms" || kind !== null || device) return null;
    if (!named && input.simNumber !== undefined && input.simNumber !== null) return null;
    return deps.pools.choose(
      auth.workspaceId,
      named ? Number(input.poolId) : null,
      common.recipient,
      common.scheduleAt === null,
      auth.cacheGeneration,
      segments,
      picks,
    );
  }

  function offline(device: DeviceRow) {
    return new AppError("device_offline", `Device ${device.id} is offline: the paired phone has not reported for more than 5 minutes`, {
      device_id: device.id,
      last_sync: device.lastSeenAt === null ? null : new Date(device.lastSeenAt).toISOString(),
    });
  }

  /**
   * The instant the message expires, from `ttl` (counted from when it is due) or `valid_until`;
   * null without either. Both at once is ambiguous and refused, as the app's own server does.
   */
  function expiryOf(input: SendInput, scheduleAt: number | null): number | null {
    const ttl = input.ttl ?? null;
    const raw = typeof input.validUntil === "string" ? input.validUntil.trim() : null;
    if (ttl !== null && raw) {
      throw new AppError("ttl_with_valid_until", "Give either ttl or valid_until, not both", { fields: ["ttl", "valid_until"] });
    }
    const due = scheduleAt ?? clock.now();
    if (ttl !== null) return due + ttl * 1000;
    if (!raw) return null;
    // A bare local time would be read in the server's zone: an instant needs its zone.
    const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i.test(raw) ? Date.parse(raw) : Number.NaN;
    if (Number.isNaN(at)) {
      throw new AppError("invalid_valid_until", `valid_until "${raw}" is not an ISO 8601 instant with a zone, e.g. 2026-12-24T09:00:00Z`, {
        field: "valid_until",
      });
    }
    if (at <= clock.now()) {
      throw new AppError("invalid_valid_until", `valid_until ${raw} is in the past`, {
        field: "valid_until",
        valid_until: new Date(at).toISOString(),
      });
    }
    if (at < due) {
      throw new AppError("invalid_valid_until", `valid_until ${raw} is before schedule_time`, {
        field: "valid_until",
        schedule_at: new Date(due).toISOString(),
      });
    }
    if (at - due > TTL_MAX_SECONDS * 1000) {
      throw new AppError("invalid_valid_until", `valid_until ${raw} is more than 30 days after the message is due`, {
        field: "valid_until",
      });
    }
    return at;
  }

  /** The text a template or `message` makes, for one channel. */
  async function contentFor(
    auth: AuthContext,
    channel: DeliveryType,
    templateRef: string | number | null | undefined,
    variables: SuppliedVariables | undefined,
    message: unknown,
  ) {
    const hasTemplate = templateRef !== undefined && templateRef !== null && String(templateRef).trim() !== "";
    if (hasTemplate) {
      const template = await resolveTemplate(auth.workspaceId, templateRef!, channel);
      const templateVars = checkVariables(template.id, template.variables, template.channel, variables);
      return { template, templateVars, message: renderTemplate(template.body, templateVars) };
    }
    if (typeof message !== "string" || message.trim() === "") {
      throw new AppError("message_required", "message is required unless template_id is set", { field: "message" });
    }
    return { template: null, templateVars: null, message };
  }

  function checkLength(auth: AuthContext, channel: DeliveryType, message: string) {
    const length = [...message].length;
    if (channel === "sms" && length > auth.smsLengthCap) {
      throw new AppError("message_too_long", `Message is ${length} characters; the account's cap is ${auth.smsLengthCap} characters`, {
        cap: auth.smsLengthCap,
        length,
      });
    }
  }

  /** The failover order a send follows: its own `routes`, else the workspace's default for its channel, else none. */
  async function routeOrder(auth: AuthContext, input: SendInput, memo: SafetyMemo): Promise<DeviceKind[] | null> {
    if (input.routes !== undefined && input.routes !== null) {
      const kinds = parseRoutes("routes", input.routes);
      const named = input.deviceId !== undefined && input.deviceId !== null && String(input.deviceId).trim() !== "";
      if (named && /^\d+$/.test(String(input.deviceId).trim())) {
        const device = await devices.get(auth.workspaceId, Number(String(input.deviceId).trim()));
        if (device && !kinds.includes(device.kind)) {
          throw new AppError("invalid_device", `device ${device.id} is a ${device.kind} device, a route this send does not name`, {
            device_id: device.id,
            kind: device.kind,
          });
        }
      }
      return kinds;
    }
    if (input.system || (input.deviceId !== undefined && input.deviceId !== null && String(input.deviceId).trim() !== "")) return null;
    const fallbackOrder = (await deps.safety.settings(auth.workspaceId, memo)).defaultRoutes;
    // A default order applies to the channels it names: a chat-app send keeps its channel under an SMS-only order.
    if (!fallbackOrder?.some((k) => CARRIERS[input.channel].includes(k))) return null;
    return fallbackOrder;
  }

  /**
   * Reads what the items of one request will each ask, at once, into `seen`: their recipients'
   * opt-outs (on PostgreSQL a read for them all instead of one an item).
   */
  async function readAhead(auth: AuthContext, inputs: SendInput[], seen: PrepareCache): Promise<void> {
    const phones = inputs.flatMap((input) => {
      const phone = input.system ? null : toE164(input.recipient);
      return phone ? [phone] : [];
    });
    await deps.safety.readOptOuts(auth.workspaceId, phones, safetyMemo(seen, auth));
  }

  /**
   * Every check that needs no write. Throws the first problem as an AppError. The items of one
   * request pass the same `seen` (newPrepareCache), so they share the reads that cannot differ.
   */
  async function prepare(auth: AuthContext, input: SendInput, seen: PrepareCache = newPrepareCache()): Promise<Prepared> {
    const memo = safetyMemo(seen, auth);
    const recipient = toE164(input.recipient);
    if (!recipient) {
      throw new AppError(
        "invalid_phone_number",
        `Invalid phone number "${String(input.recipient)}": recipient_contact must be E.164, e.g. +14155552671`,
        {
          field: "recipient_contact",
        },
      );
    }
    if (!input.system) {
      const refused = await deps.safety.refusal(auth.workspaceId, recipient, memo);
      if (refused) throw refused;
    }
    const routes = await routeOrder(auth, input, memo);
    const { template, templateVars, message } = await contentFor(auth, input.channel, input.templateId, input.variables, input.message);
    if (routes === null) checkLength(auth, input.channel, message);
    if (!auth.plan.allowUrls) {
      const url = findUrl(message);
      if (url)
        throw new AppError("urls_not_allowed", `Your plan does not allow URLs in messages (found "${url}"); remove it or upgrade`, { url });
    }
    const chatappTemplateId = input.chatappTemplateId ?? null;
    if (chatappTemplateId !== null && String(chatappTemplateId).trim() !== "") {
      // Checked now, so a mistake is a 400 today rather than a failure when the route is reached.
      const fallbackTemplate = await resolveTemplate(auth.workspaceId, chatappTemplateId, "chatapp");
      checkVariables(fallbackTemplate.id, fallbackTemplate.variables, "chatapp", input.variables);
    }

    const timezone = input.timezone?.trim() || null;
    if (timezone) requireTimeZone(timezone);
    let scheduleAt: number | null = null;
    if (input.scheduleTime !== undefined && input.scheduleTime !== null && input.scheduleTime !== "") {
      scheduleAt = parseScheduleTime(input.scheduleTime, timezone ?? "UTC");
      if (scheduleAt + PAST_GRACE_MS < clock.now()) {
        throw new AppError("schedule_time_in_past", `schedule_time ${input.scheduleTime} (${timezone ?? "UTC"}) is in the past`, {
          field: "schedule_time",
          schedule_at: new Date(scheduleAt).toISOString(),
        });
      }
      if (scheduleAt <= clock.now()) scheduleAt = null;
    }
    // Quiet hours: a message that would arrive at night waits until they end (urgent ones and
    // the recipient's own transactions excepted).
    let quietHold: Common["quietHold"] = null;
    if (!input.system && input.transactional !== true && (input.priority ?? 0) < PRIORITY_EXPEDITED) {
      quietHold = await deps.safety.quietHold(auth.workspaceId, recipient, scheduleAt ?? clock.now(), memo);
      if (quietHold) scheduleAt = quietHold.until;
    }

    const common: Common = {
      recipient,
      recipientName: input.recipientName?.trim() || null,
      template,
      templateVars,
      message,
      scheduleAt,
      timezone,
      validUntil: expiryOf(input, scheduleAt),
      quietHold,
      fallback: routes !== null && chatappTemplateId !== null ? { chatappTemplateId, variables: input.variables } : null,
    };
    if (routes === null) return prepareRoute(auth, input, common, null, null, seen);

    // Failover: the first route that can take it; the ones that cannot at all are skipped.
    const skipped: Prepared["skipped"] = [];
    for (const kind of routes) {
      try {
        return { ...(await prepareRoute(auth, input, common, kind, routes, seen)), skipped };
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        skipped.push({ route: kind, error });
      }
    }
    const first = skipped[0].error;
    throw new AppError(
      first.code,
      `No route can take this message: ${skipped.map((x) => `${ROUTE_NAMES[x.route]}: ${x.error.message}`).join("; ")}`,
      {
        ...first.data,
        routes: skipped.map((x) => ({
          route: ROUTE_NAMES[x.route],
          error_code: x.error.publicCode ?? x.error.code,
          message: x.error.message,
        })),
      },
      first.publicCode,
    );
  }

  /**
   * One route's part of a send: its device, and the text in its channel's form. On a route of
   * another channel than the send's, an SMS route sends the text as it is; a chat-app route sends
   * it freeform while the 24-hour window is open, else the fallback chat-app template.
   */
  async function prepareRoute(
    auth: AuthContext,
    input: SendInput,
    common: Common,
    kind: DeviceKind | null,
    routes: DeviceKind[] | null,
    seen?: PrepareCache,
  ): Promise<Prepared> {
    const channel: DeliveryType = kind === null ? input.channel : traits.get(kind)!.deliveryType;
    let content = { template: common.template, templateVars: common.templateVars, message: common.message };
    if (channel !== input.channel) content = { template: null, templateVars: null, message: common.message };
    checkLength(auth, channel, content.message);
    const pool = await poolChoice(auth, input, common, channel, kind, countSegments(content.message).segments, seen?.poolPicks);
    const device =
      pool?.device ??
      (await chooseDevice(auth.workspaceId, channel, input.deviceId, common.scheduleAt === null, kind, seen, auth.cacheGeneration));
    // On a failover send the SIM is the phone's business; other routes leave it out. A pool's member names its own.
    const simNumber = pool ? pool.simNumber : kind === null || traits.get(kind)?.needsPresence ? (input.simNumber ?? null) : null;
    // Only a paired phone has SIMs to choose from; a cloud number would silently send from its own.
    if (simNumber !== null && !traits.get(device.kind)?.needsPresence) {
      throw new AppError("option_not_supported", `sim_number applies to paired phones; device ${device.id} is a ${device.kind} device`, {
        field: "sim_number",
        device_id: device.id,
        kind: device.kind,
      });
    }
    // A phone that told us its SIMs has only those; one that did not (an app before 1.65) is left to choose.
    const sims = simNumber !== null ? reportedSimNumbers(device) : [];
    if (simNumber !== null && sims.length > 0 && !sims.includes(simNumber)) {
      throw new AppError("invalid_sim_number", `Device ${device.id} has no SIM ${simNumber}; its SIMs are ${sims.join(", ")}`, {
        field: "sim_number",
        device_id: device.id,
        sim_numbers: sims,
      });
    }
    const build = (c: typeof content): Prepared => {
      const segments = channel === "sms" ? countSegments(c.message).segments : 1;
      return {
        channel,
        device,
        recipient: common.recipient,
        recipientName: common.recipientName,
        template: c.template,
        templateVars: c.templateVars,
        message: c.message,
        // Every pool member at a cap: it waits for the first cap to reset.
        scheduleAt: pool?.holdUntil && (common.scheduleAt ?? 0) < pool.holdUntil ? pool.holdUntil : common.scheduleAt,
        timezone: common.timezone,
        segments,
        // Only cloud numbers cost credits: one per segment.
        cost: traits.get(device.kind)?.charges ? segments : 0,
        channelPayload: channel === input.channel ? (input.channelPayload ?? null) : null,
        simNumber,
        priority: input.priority ?? 0,
        hooks: input.hooks ?? 0,
        withDeliveryReport: input.withDeliveryReport ?? true,
        validUntil: common.validUntil,
        routes,
        skipped: [],
        quietHold: common.quietHold,
        fallback: common.fallback,
        poolNote: pool?.note ?? null,
        poolMemberId: pool?.memberId ?? null,
        poolHeld: pool?.holdUntil != null,
      };
    };
    const runChecks = async (p: Prepared): Promise<Prepared> => {
      for (const check of channelChecks[channel]) {
        const change = await check(
          auth,
          p,
          input.deviceId !== undefined && kind !== null && p.device.kind !== kind ? { ...input, deviceId: null } : input,
        );
        if (change) p = { ...p, ...change };
      }
      return p;
    };
    let prepared: Prepared;
    try {
      prepared = await runChecks(build(content));
    } catch (error) {
      // A closed chat-app window on a failover route: the fallback template, if the send named one.
      const fallbackRef = common.fallback?.chatappTemplateId;
      if (!(error instanceof AppError) || error.code !== "window_closed" || channel !== "chatapp" || content.template || !fallbackRef)
        throw error;
      const fallback = await contentFor(auth, "chatapp", fallbackRef, common.fallback?.variables, null);
      prepared = await runChecks(build(fallback));
    }
    // A route that cannot pay is a route that cannot take it (a later one may); one that is used pays in store().
    if (kind !== null) {
      const short = await credits.shortfall(auth.workspaceId, prepared.cost);
      if (short) throw short;
    }
    return prepared;
  }

  /** The sent message in its conversation: chat-app threads are per business number. */
  async function addToThread(workspaceId: number, p: Prepared, notificationId: number, at: number): Promise<void> {
    await threads.add({
      workspaceId,
      channel: p.channel,
      threadDeviceId: p.channel === "chatapp" ? p.device.id : 0,
      peer: p.recipient,
      peerName: p.recipientName,
      direction: "outbound",
      body: p.message,
      notificationId,
      deviceId: p.device.id,
      at,
    });
  }

  /** A preview's check of the plan's monthly SMS allowance (accept checks a request's items at once). */
  async function refusedByPlan(auth: AuthContext, p: Prepared, now: number): Promise<AppError | null> {
    if (p.channel !== "sms" || auth.plan.monthlySmsLimit === null) return null;
    if (storage.inTransaction) await usage.holdAllowance(auth.accountId);
    const used = await usage.accountSmsSince(auth.accountId, monthStart(now));
    return used < auth.plan.monthlySmsLimit ? null : allowanceSpent(auth, used);
  }

  /** The 402 of a plan whose monthly SMS allowance is used up. */
  function allowanceSpent(auth: AuthContext, used: number): AppError {
    return new AppError(
      "free_tier_exhausted",
      `The ${auth.plan.code} plan allows ${auth.plan.monthlySmsLimit} SMS a month and all are used; it renews on the 1st (UTC)`,
      { limit: auth.plan.monthlySmsLimit, used },
    );
  }

  /**
   * What a send would do, writing nothing: the prepared message (route, device, cost, quiet-hour
   * hold) and the refusal a real send would answer with, if any (an opt-out, an offline phone,
   * the plan or the balance).
   */
  async function preview(auth: AuthContext, input: SendInput): Promise<{ prepared: Prepared | null; refusal: AppError | null }> {
    try {
      const prepared = await prepare(auth, input);
      const refusal = (await refusedByPlan(auth, prepared, clock.now())) ?? (await credits.shortfall(auth.workspaceId, prepared.cost));
      return { prepared, refusal };
    } catch (error) {
      if (error instanceof AppError) return { prepared: null, refusal: error };
      throw error;
    }
  }

  /** The notification row a prepared send is stored as. */
  function rowOf(auth: AuthContext, p: Prepared, now: number): NewNotification {
    return {
      workspaceId: auth.workspaceId,
      apiKeyId: auth.keyId,
      deliveryType: p.channel,
      route: p.device.kind,
      deviceId: p.device.id,
      recipient: p.recipient,
      recipientName: p.recipientName,
      templateId: p.template?.id ?? null,
      templateVars: p.templateVars,
      message: p.message,
      scheduleAt: p.scheduleAt,
      timezone: p.timezone,
      nextAttemptAt: p.scheduleAt ?? now,
      segments: p.segments,
      cost: p.cost,
      // A paired phone knows each message by an id of ours (the companion-app protocol's "id").
      externalId: traits.get(p.device.kind)?.choosesExternalId ? timeOrderedId(now) : null,
      channelPayload: p.channelPayload ?? null,
      simNumber: p.simNumber,
      priority: p.priority,
      hooks: p.hooks,
      withDeliveryReport: p.withDeliveryReport,
      validUntil: p.validUntil,
      routes: p.routes,
      fallback: p.fallback,
      createdAt: now,
    };
  }

  /**
   * What a stored send's log says at once besides its first line (accepted or scheduled, made from
   * the notification's columns when read: firstLine in the notification repository): the routes
   * skipped, the pool's choice, a quiet-hours hold. Most sends have none.
   */
  function acceptedLines(id: number, p: Prepared): { id: number; event: string; fields: LogFields }[] {
    const lines: { id: number; event: string; fields: LogFields }[] = [];
    for (const skip of p.skipped) {
      lines.push({
        id,
        event: "route_skipped",
        fields: {
          status: "pending",
          errorCode: String(skip.error.publicCode ?? skip.error.code),
          detail: `route ${ROUTE_NAMES[skip.route]} skipped: ${skip.error.message}`,
        },
      });
    }
    if (p.poolNote) lines.push({ id, event: p.poolHeld ? "pool_held" : "pool", fields: { status: "pending", detail: p.poolNote } });
    if (p.quietHold) {
      lines.push({
        id,
        event: "quiet_hours",
        fields: {
          status: "pending",
          detail: `held for the recipient's quiet hours (${p.quietHold.zone}) until ${new Date(p.quietHold.until).toISOString()}`,
        },
      });
    }
    return lines;
  }

  /**
   * Stores the prepared items and returns every item's result, in order. The plan's monthly SMS
   * allowance and the credit balance are read once (their rows held for the unit where the dialect
   * has row locks) and each item is checked against what the items before it used, so an item
   * refused by its plan or its credits leaves nothing, and the others stand. Then the writes, each
   * kind at once: the notifications, the debits and the log lines (on PostgreSQL a statement each,
   * whatever the number of items; on SQLite a statement a row, as before). Anything that fails
   * after a write fails the whole unit. Called inside a unit of work (`storage.transaction`), so
   * the caller may write what belongs with it (an idempotent reply) in the same one; the accept
   * listeners hear of the stored items once it commits.
   */
  async function accept(auth: AuthContext, items: (Prepared | AppError)[]): Promise<ItemResult[]> {
    if (!storage.inTransaction) throw new Error("sending.accept runs inside a unit of work (storage.transaction)");
    const now = clock.now();
    const prepared = items.filter((item): item is Prepared => !(item instanceof AppError));
    const limit = auth.plan.monthlySmsLimit;
    let smsUsed = 0;
    if (limit !== null && prepared.some((p) => p.channel === "sms")) {
      await usage.holdAllowance(auth.accountId);
      smsUsed = await usage.accountSmsSince(auth.accountId, monthStart(now));
    }
    let balance = prepared.some((p) => p.cost > 0) ? await credits.holdBalance(auth.workspaceId) : 0;

    const results: ItemResult[] = [];
    const stored: { at: number; prepared: Prepared }[] = [];
    for (const item of items) {
      if (item instanceof AppError) {
        results.push({ ok: false, error: item });
        continue;
      }
      if (item.channel === "sms" && limit !== null && smsUsed >= limit) {
        results.push({ ok: false, error: allowanceSpent(auth, smsUsed) });
        continue;
      }
      if (item.cost > 0 && balance < item.cost) {
        results.push({ ok: false, error: credits.insufficientFor(item.cost, balance) });
        continue;
      }
      if (item.channel === "sms") smsUsed++;
      balance -= item.cost;
      stored.push({ at: results.length, prepared: item });
      // Filled in once the rows are written.
      results.push({ ok: true, accepted: { notificationId: 0, prepared: item } });
    }
    if (stored.length === 0) return results;

    const ids = await notifications.insertMany(stored.map((s) => rowOf(auth, s.prepared, now)));
    await credits.debitMany(
      auth.workspaceId,
      stored.map((s, i) => ({ amount: s.prepared.cost, notificationId: ids[i] })),
    );
    // Each outbound thread message follows from its notification (threads.catchUp).
    const lines = stored.flatMap((s, i) => acceptedLines(ids[i], s.prepared));
    if (lines.length > 0) await state.logMany(lines);
    const accepted = stored.map((s, i) => ({ notificationId: ids[i], prepared: s.prepared }));
    stored.forEach((s, i) => {
      results[s.at] = { ok: true, accepted: accepted[i] };
    });
    // What must be written with them (a pool member's usage), in this unit of work.
    for (const listener of storeListeners) await listener(accepted);
    storage.afterCommit(() => announceAccepted(accepted));
    return results;
  }

  /**
   * The single sends of one key that come while an earlier one is being stored, stored together
   * (src/lib/batcher.ts): one unit of work and one `accept` for all their items, each request's
   * items in its own order after those that came before it, so each is checked against the
   * allowance and the balance the ones before it left, as if they had come one by one. Each
   * request gets its own items' results. A unit that fails fails every request in it, as a unit of
   * a request alone would. Without `storeTogether`, one unit a request.
   */
  const storeTogether = createBatcher<{ auth: AuthContext; items: (Prepared | AppError)[] }, ItemResult[]>(
    (asks) =>
      storage.transaction(async () => {
        const results = await accept(
          asks[0].auth,
          asks.flatMap((a) => a.items),
        );
        let at = 0;
        return asks.map((a) => {
          const own = results.slice(at, at + a.items.length);
          at += a.items.length;
          return own;
        });
      }),
    // Two at a time: while one unit waits for its commit, the next gathers and writes.
    { parallel: 2 },
  );

  /** Stores a request's prepared items in a unit of work (a single send's with others' under load, see storeTogether). */
  function acceptTogether(auth: AuthContext, items: (Prepared | AppError)[]): Promise<ItemResult[]> {
    // A bulk request is already a batch: its unit runs beside the others instead of after them.
    if (!deps.storeTogether || items.length > 1) return storage.transaction(() => accept(auth, items));
    return storeTogether(`${auth.workspaceId}|${auth.keyId}|${auth.accountId}|${auth.plan.id}`, { auth, items });
  }

  /**
   * Failover: called inside the transaction that would fail a notification. When it follows a
   * route order and the failure is one another route could avoid, the same notification moves to
   * the next route that can take it now (its device chosen, the text in that channel's form, the
   * credits moved from the old route's cost to the new one's) and true is returned: it is not
   * failed. A failure that says the message may have gone out, or that no route can change (an
   * opt-out, an expiry), is left to fail.
   */
  async function failover(
    n: NotificationRecord,
    failure: { errorCode: string | null; reason: string | null; mayHaveGone?: boolean; stranded?: boolean },
  ): Promise<boolean> {
    if (n.routes === null || failure.mayHaveGone === true) return false;
    if (failure.errorCode !== null && FINAL_FAILURES.has(failure.errorCode)) return false;
    const routes = n.routes;
    const rest = routes.slice(routes.indexOf(n.route) + 1);
    if (rest.length === 0) return false;
    let auth: AuthContext;
    try {
      auth = await deps.callerFor(n.workspaceId);
    } catch {
      return false;
    }
    const fallback = n.fallback as Fallback | null;
    const input: SendInput = {
      channel: n.deliveryType,
      recipient: n.recipient,
      message: n.message,
      simNumber: n.simNumber,
      priority: n.priority,
      withDeliveryReport: n.withDeliveryReport,
    };
    const common: Common = {
      recipient: n.recipient,
      recipientName: n.recipientName,
      template: null,
      templateVars: null,
      message: n.message,
      scheduleAt: null,
      timezone: n.timezone,
      validUntil: n.validUntil,
      quietHold: null,
      fallback,
    };
    const why = `${ROUTE_NAMES[n.route]} failed (${failure.errorCode ?? "error"}: ${failure.reason ?? "no reason given"})`;
    // Written when the message moves or fails now; a stranded one that stays where it is logs nothing.
    const skips: { code: string; detail: string }[] = [];
    const writeSkips = async () => {
      for (const skip of skips) await state.log(n.id, "route_skipped", { status: "pending", errorCode: skip.code, detail: skip.detail });
    };
    for (const kind of rest) {
      let p: Prepared;
      try {
        // In a savepoint: a debit that fails leaves nothing behind for the next route.
        p = await storage.transaction(async () => {
          const next = await prepareRoute(auth, input, common, kind, routes);
          await credits.debit(n.workspaceId, next.cost, n.id);
          return next;
        });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        skips.push({
          code: String(error.publicCode ?? error.code),
          detail: `after ${why}, route ${ROUTE_NAMES[kind]} skipped: ${error.message}`,
        });
        continue;
      }
      const now = clock.now();
      await credits.refund(n.workspaceId, n.cost, n.id, `failover from ${ROUTE_NAMES[n.route]}`);
      const moved = await notifications.reroute(
        n.id,
        {
          route: kind,
          deliveryType: p.channel,
          deviceId: p.device.id,
          templateId: p.template?.id ?? null,
          templateVars: p.templateVars,
          message: p.message,
          segments: p.segments,
          cost: p.cost,
          externalId: traits.get(kind)?.choosesExternalId ? timeOrderedId(now) : null,
          simNumber: p.simNumber,
        },
        now,
      );
      if (!moved) return false;
      await writeSkips();
      if (p.channel !== n.deliveryType || (p.channel === "chatapp" && p.device.id !== n.deviceId)) {
        await threads.removeOutbound(n.id);
        await addToThread(n.workspaceId, p, n.id, now);
      }
      await state.log(n.id, "failover", {
        status: "pending",
        errorCode: failure.errorCode,
        detail: `${why}; moved to route ${ROUTE_NAMES[kind]} via device ${p.device.id}`,
      });
      // The new route's channel hears of it as of a new message once this unit of work commits.
      const accepted = [{ notificationId: n.id, prepared: { ...p, scheduleAt: null } }];
      storage.afterCommit(() => announceAccepted(accepted));
      return true;
    }
    if (!failure.stranded) await writeSkips();
    return false;
  }

  // Stranded messages no route could take: not looked at again before this instant.
  const strandedRetry = new Map<number, number>();

  /**
   * notifications:failover — a message on a failover order that waits on a paired phone which has
   * been offline for `graceMs` moves to its next route. One the phone took up stays with it (it
   * may still send it); one no other route can take now waits, and is looked at again a grace
   * period later.
   */
  async function failoverStranded(graceMs: number): Promise<number> {
    const now = clock.now();
    const offlineAfter = deps.offlineAfterMs ?? OFFLINE_AFTER_MS;
    const streamCut = now - allowedSilence({ pushToken: null }, offlineAfter) - graceMs;
    const pollCut = now - allowedSilence({ pushToken: "polling" }, offlineAfter) - graceMs;
    let moved = 0;
    for (const [id, at] of strandedRetry) if (at <= now) strandedRetry.delete(id);
    for (const id of await notifications.stranded(now, streamCut, pollCut, STRANDED_BATCH)) {
      if (strandedRetry.has(id)) continue;
      const done = await storage.transaction(async () => {
        const n = await state.get(id);
        if (n?.status !== "pending" || n.stage !== "queued" || n.dispatchedAt !== null) return true;
        const silent = n.deviceId === null ? null : ((await devices.byId(n.deviceId))?.lastSeenAt ?? null);
        const reason = `device ${n.deviceId} has been offline ${silent === null ? "since it was paired" : `since ${new Date(silent).toISOString()}`}`;
        return failover(n, { errorCode: "device_offline", reason, stranded: true });
      });
      if (done) moved++;
      else strandedRetry.set(id, now + graceMs);
    }
    return moved;
  }

  return {
    prepare,
    readAhead,
    preview,
    accept,
    acceptTogether,
    /** SMS the account has sent this calendar month (UTC): what its plan's allowance counts. */
    smsUsedThisMonth: async (accountId: number): Promise<number> => usage.accountSmsSince(accountId, monthStart(deps.clock.now())),
    failover,
    failoverStranded,
    /** Adds a channel's own check to the ones every send goes through. */
    addCheck(channel: DeliveryType, check: ChannelCheck) {
      channelChecks[channel].push(check);
    },
    onAccepted(listener: (accepted: Accepted[]) => void | Promise<void>) {
      acceptedListeners.push(listener);
    },
    /** Runs `listener` with what a send stores, inside its unit of work (so it commits, or not, with the rows). */
    onStored(listener: (accepted: Accepted[]) => Promise<void>) {
      storeListeners.push(listener);
    },
  };
}

export type SendingService = ReturnType<typeof createSendingService>;

/** Reads the items of one request share while they are prepared (see `prepare`). */
export interface PrepareCache {
  devices: Map<number, DeviceRow[]>;
  /** Each workspace's safety settings and, read up front (sending.readAhead), its recipients' opt-outs. */
  safety: Map<number, SafetyMemo>;
  /** Sender-pool members chosen for the request's earlier items, not stored yet: they count as load and toward caps. */
  poolPicks?: Map<number, PoolPick>;
}

export const newPrepareCache = (): PrepareCache => ({ devices: new Map(), safety: new Map(), poolPicks: new Map() });

function safetyMemo(seen: PrepareCache, auth: AuthContext): SafetyMemo {
  let memo = seen.safety.get(auth.workspaceId);
  if (!memo) {
    memo = { cacheGeneration: auth.cacheGeneration };
    seen.safety.set(auth.workspaceId, memo);
  }
  return memo;
}
