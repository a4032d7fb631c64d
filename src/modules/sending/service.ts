// Accepting a message: every check of spec sections 4 and 7 that can be made before anything is
// written, then the writes (store the notification, debit its credits) inside the group commit's
// shared transaction. After commit, listeners wake whoever carries it. It answers with data; the
// routes present it, and src/http/idempotency keeps the reply for repeats.
import type { Database } from "bun:sqlite";
import type { Clock } from "../../clock";
import type { AuthContext } from "../../http/auth";
import { AppError } from "../../http/errors";
import type { GroupCommit } from "../../db/group-commit";
import { toE164 } from "../../lib/phone";
import { parseScheduleTime, isTimeZone } from "../../lib/schedule";
import { countSegments } from "../../lib/segments";
import { monthStart } from "../../lib/time";
import { nanoid } from "../../lib/tokens";
import { findUrl } from "../../lib/urls";
import type { CreditService } from "../credits/service";
import type { DeviceRepository, DeviceRow } from "../devices/repository";
import { isOnline as isDeviceOnline } from "../devices/service";
import type { NotificationRepository } from "../notifications/repository";
import type { NotificationState } from "../notifications/state";
import type { TemplateRepository, TemplateRow } from "../templates/repository";
import type { ThreadRepository } from "../threads/repository";
import { checkVariables, renderTemplate, type SuppliedVariables } from "../templates/variables";
import type { UsageRepository } from "../usage/repository";
import { TTL_MAX_SECONDS } from "./model";
import { DELIVERY_TYPES, type ChannelTraits, type DeliveryType, type DeviceKind } from "../../channels/kinds";

export type Channel = DeliveryType;

export interface SendInput {
  channel: Channel;
  recipient: unknown;
  message?: string | null;
  templateId?: string | number | null;
  variables?: SuppliedVariables;
  recipientName?: string | null;
  scheduleTime?: string | null;
  timezone?: string | null;
  deviceId?: string | number | null;
  /** What the channel needs at send time beyond the text (a chat-app template's header media). */
  channelPayload?: Record<string, unknown> | null;
  /** The paired phone's SIM, 1-3. */
  simNumber?: number | null;
  /** The companion app's priority, -128..127. */
  priority?: number | null;
  withDeliveryReport?: boolean | null;
  /** Seconds the message may wait, from its due time. */
  ttl?: number | null;
  /** ISO 8601 instant after which it must not go out. */
  validUntil?: string | null;
}

/** The companion app's priority from which its limits and delays are skipped (Message.PRIORITY_EXPEDITED). */
export const PRIORITY_EXPEDITED = 100;

export interface Prepared {
  channel: Channel;
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
  withDeliveryReport: boolean;
  /** Epoch ms after which it must not go out, or null. */
  validUntil: number | null;
}

export interface Accepted {
  notificationId: number;
  prepared: Prepared;
}

export type ItemResult = { ok: true; accepted: Accepted } | { ok: false; error: AppError };

/**
 * A check a channel adds to the common ones (the chat-app window, blocked numbers, …). It throws
 * an AppError to refuse, and returns what it changes (another device of the channel), if anything.
 */
export type ChannelCheck = (auth: AuthContext, prepared: Prepared, input: SendInput) => Partial<Pick<Prepared, "device">> | void;

/** A schedule_time up to this far behind the clock still counts as "now" (it has whole seconds). */
const PAST_GRACE_MS = 1000;

export interface SendingDeps {
  sqlite: Database;
  clock: Clock;
  devices: DeviceRepository;
  templates: TemplateRepository;
  notifications: NotificationRepository;
  state: NotificationState;
  credits: CreditService;
  usage: UsageRepository;
  /** The shared transaction accepts are written in. */
  commits: GroupCommit;
  threads: ThreadRepository;
  /** What each channel (device kind) asks of the send path. */
  channels: readonly ChannelTraits[];
  /** PIGEON_OFFLINE_AFTER in milliseconds: how long a phone with an event stream may be silent. */
  offlineAfterMs?: number;
}

export function createSendingService(deps: SendingDeps) {
  const { sqlite, clock, devices, templates, notifications, state, credits, usage, commits, threads } = deps;
  const channelChecks = Object.fromEntries(DELIVERY_TYPES.map((d) => [d, [] as ChannelCheck[]])) as Record<Channel, ChannelCheck[]>;
  /** The kinds of device that carry each delivery type, and each kind's traits. */
  const CARRIERS = Object.fromEntries(DELIVERY_TYPES.map((d) => [d, deps.channels.filter((c) => c.deliveryType === d).map((c) => c.kind)])) as Record<Channel, DeviceKind[]>;
  const traits = new Map(deps.channels.map((c) => [c.kind, c]));
  const needsPresence = (device: DeviceRow) => traits.get(device.kind)?.needsPresence === true;
  const isOnline = (device: DeviceRow, now: number) => isDeviceOnline(device, now, deps.offlineAfterMs);
  const acceptedListeners: ((accepted: Accepted[]) => void)[] = [];

  function resolveTemplate(workspaceId: number, ref: string | number, channel: Channel): TemplateRow {
    const text = String(ref).trim();
    let row: TemplateRow | null = null;
    if (/^\d+$/.test(text)) row = templates.get(workspaceId, Number(text));
    else if (text) row = templates.visibleByCode(workspaceId, text);
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
      throw new AppError("template_inactive", `template ${row.id} is ${row.status} and cannot be sent`, { template_id: row.id, status: row.status }, platformCode);
    }
    return row;
  }

  /** The device to send through: the one named, or the first active one that can carry it now. */
  function chooseDevice(workspaceId: number, channel: Channel, ref: string | number | null | undefined, immediate: boolean): DeviceRow {
    const now = clock.now();
    if (ref !== undefined && ref !== null && String(ref).trim() !== "") {
      const text = String(ref).trim();
      const device = /^\d+$/.test(text) ? devices.get(workspaceId, Number(text)) : null;
      if (!device) throw new AppError("not_found", `device ${text} not found`, { field: "device_id" });
      if (!CARRIERS[channel].includes(device.kind)) {
        throw new AppError("invalid_device", `device ${device.id} is a ${device.kind} device and cannot carry ${channel} messages`, {
          device_id: device.id,
          kind: device.kind,
        });
      }
      if (device.status !== "active") throw new AppError("device_inactive", `device ${device.id} is inactive`, { device_id: device.id });
      if (needsPresence(device) && immediate && !isOnline(device, now)) throw offline(device);
      return device;
    }
    const candidates = devices.all(workspaceId, false).filter((d) => CARRIERS[channel].includes(d.kind));
    if (candidates.length === 0) {
      throw new AppError("no_active_device", `No active ${channel === "sms" ? "SMS (phone or cloud number)" : "chat-app"} device in this workspace`, {
        channel,
      });
    }
    const usable = candidates.find((d) => d.blockedCode === null && (!needsPresence(d) || !immediate || isOnline(d, now)));
    if (usable) return usable;
    // Everything is blocked or offline: answer with the first device's reason.
    const first = candidates[0];
    if (needsPresence(first) && immediate) throw offline(first);
    return first;
  }

  function offline(device: DeviceRow) {
    return new AppError(
      "device_offline",
      `Device ${device.id} is offline: the paired phone has not reported for more than 5 minutes`,
      { device_id: device.id, last_sync: device.lastSeenAt === null ? null : new Date(device.lastSeenAt).toISOString() },
    );
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
      throw new AppError("invalid_valid_until", `valid_until "${raw}" is not an ISO 8601 instant with a zone, e.g. 2026-12-24T09:00:00Z`, { field: "valid_until" });
    }
    if (at <= clock.now()) {
      throw new AppError("invalid_valid_until", `valid_until ${raw} is in the past`, { field: "valid_until", valid_until: new Date(at).toISOString() });
    }
    if (at < due) {
      throw new AppError("invalid_valid_until", `valid_until ${raw} is before schedule_time`, {
        field: "valid_until",
        schedule_at: new Date(due).toISOString(),
      });
    }
    if (at - due > TTL_MAX_SECONDS * 1000) {
      throw new AppError("invalid_valid_until", `valid_until ${raw} is more than 30 days after the message is due`, { field: "valid_until" });
    }
    return at;
  }

  /** Every check that needs no write. Throws the first problem as an AppError. */
  function prepare(auth: AuthContext, input: SendInput): Prepared {
    const recipient = toE164(input.recipient);
    if (!recipient) {
      throw new AppError("invalid_phone_number", `Invalid phone number "${String(input.recipient)}": recipient_contact must be E.164, e.g. +14155552671`, {
        field: "recipient_contact",
      });
    }

    let template: TemplateRow | null = null;
    let templateVars: Record<string, string> | null = null;
    let message: string;
    const hasTemplate = input.templateId !== undefined && input.templateId !== null && String(input.templateId).trim() !== "";
    if (hasTemplate) {
      template = resolveTemplate(auth.workspaceId, input.templateId!, input.channel);
      templateVars = checkVariables(template.id, template.variables, template.channel, input.variables);
      message = renderTemplate(template.body, templateVars);
    } else {
      if (typeof input.message !== "string" || input.message.trim() === "") {
        throw new AppError("message_required", "message is required unless template_id is set", { field: "message" });
      }
      message = input.message;
    }

    const length = [...message].length;
    if (input.channel === "sms" && length > auth.smsLengthCap) {
      throw new AppError("message_too_long", `Message is ${length} characters; the account's cap is ${auth.smsLengthCap} characters`, {
        cap: auth.smsLengthCap,
        length,
      });
    }
    if (!auth.plan.allowUrls) {
      const url = findUrl(message);
      if (url) throw new AppError("urls_not_allowed", `Your plan does not allow URLs in messages (found "${url}"); remove it or upgrade`, { url });
    }

    const timezone = input.timezone?.trim() || null;
    if (timezone && !isTimeZone(timezone)) {
      throw new AppError("invalid_timezone", `timezone "${timezone}" is not an IANA time zone name (e.g. Europe/Berlin)`, { field: "timezone" });
    }
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

    const validUntil = expiryOf(input, scheduleAt);
    const device = chooseDevice(auth.workspaceId, input.channel, input.deviceId, scheduleAt === null);
    const simNumber = input.simNumber ?? null;
    // Only a paired phone has SIMs to choose from; a cloud number would silently send from its own.
    if (simNumber !== null && !traits.get(device.kind)?.needsPresence) {
      throw new AppError("option_not_supported", `sim_number applies to paired phones; device ${device.id} is a ${device.kind} device`, {
        field: "sim_number",
        device_id: device.id,
        kind: device.kind,
      });
    }
    const segments = input.channel === "sms" ? countSegments(message).segments : 1;
    let prepared: Prepared = {
      channel: input.channel,
      device,
      recipient,
      recipientName: input.recipientName?.trim() || null,
      template,
      templateVars,
      message,
      scheduleAt,
      timezone,
      segments,
      // Only cloud numbers cost credits: one per segment.
      cost: traits.get(device.kind)?.charges ? segments : 0,
      channelPayload: input.channelPayload ?? null,
      simNumber,
      priority: input.priority ?? 0,
      withDeliveryReport: input.withDeliveryReport ?? true,
      validUntil,
    };
    for (const check of channelChecks[input.channel]) {
      const change = check(auth, prepared, input);
      if (change) prepared = { ...prepared, ...change };
    }
    return prepared;
  }

  /** Plan and credit checks that must see the rows written just before, then the writes. */
  function store(auth: AuthContext, p: Prepared): number {
    const now = clock.now();
    if (p.channel === "sms" && auth.plan.monthlySmsLimit !== null) {
      const used = usage.accountSmsSince(auth.accountId, monthStart(now));
      if (used >= auth.plan.monthlySmsLimit) {
        throw new AppError(
          "free_tier_exhausted",
          `The ${auth.plan.code} plan allows ${auth.plan.monthlySmsLimit} SMS a month and all are used; it renews on the 1st (UTC)`,
          { limit: auth.plan.monthlySmsLimit, used },
        );
      }
    }
    const id = notifications.insert({
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
      externalId: traits.get(p.device.kind)?.choosesExternalId ? nanoid(21) : null,
      channelPayload: p.channelPayload ?? null,
      simNumber: p.simNumber,
      priority: p.priority,
      withDeliveryReport: p.withDeliveryReport,
      validUntil: p.validUntil,
      createdAt: now,
    });
    credits.debit(auth.workspaceId, p.cost, id);
    threads.add({
      workspaceId: auth.workspaceId,
      channel: p.channel,
      threadDeviceId: p.channel === "chatapp" ? p.device.id : 0,
      peer: p.recipient,
      peerName: p.recipientName,
      direction: "outbound",
      body: p.message,
      notificationId: id,
      deviceId: p.device.id,
      at: p.scheduleAt ?? now,
    });
    state.log(id, p.scheduleAt ? "scheduled" : "accepted", {
      status: "pending",
      detail: p.scheduleAt
        ? `scheduled for ${new Date(p.scheduleAt).toISOString()}${p.timezone ? ` (${p.timezone})` : ""} via device ${p.device.id}`
        : `queued for device ${p.device.id} (${p.device.kind})`,
    });
    return id;
  }

  /**
   * Stores each prepared item, each in its own savepoint (an item that fails its plan or credit
   * check is rolled back alone), and returns every item's result. It runs inside a job of the group
   * commit (`commits.submit`), so the caller may write what belongs with it (an idempotent reply)
   * in the same transaction; the accept listeners hear of the stored items once that commits.
   */
  function accept(auth: AuthContext, items: (Prepared | AppError)[]): ItemResult[] {
    const results: ItemResult[] = items.map((item) => {
      if (item instanceof AppError) return { ok: false, error: item };
      try {
        const id = sqlite.transaction(() => store(auth, item))();
        return { ok: true, accepted: { notificationId: id, prepared: item } };
      } catch (error) {
        if (error instanceof AppError) return { ok: false, error };
        throw error;
      }
    });
    const accepted = results.flatMap((r) => (r.ok ? [r.accepted] : []));
    if (accepted.length > 0) {
      commits.afterCommit(() => {
        for (const listener of acceptedListeners) listener(accepted);
      });
    }
    return results;
  }

  return {
    prepare,
    accept,
    /** Adds a channel's own check to the ones every send goes through. */
    addCheck(channel: Channel, check: ChannelCheck) {
      channelChecks[channel].push(check);
    },
    onAccepted(listener: (accepted: Accepted[]) => void) {
      acceptedListeners.push(listener);
    },
  };
}

export type SendingService = ReturnType<typeof createSendingService>;
