// Device rules: listing, health, usage, pacing window, batch registration and status changes.
import type { Clock } from "../../clock";
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { outboundTargetProblem } from "../../lib/net-safety";
import { toE164 } from "../../lib/phone";
import { DAY, iso, MINUTE, monthStart } from "../../lib/time";
import { nanoid, sha256Hex } from "../../lib/tokens";
import { DEFAULT_DEVICE_KIND, type ChannelTraits } from "../../core/kinds";
import type { PhoneHealth } from "./schema";
import type { Storage } from "../../db/storage";
import type { UsageStore } from "../notifications/ports";
import type { DeviceRepository, NewDevice } from "./repository";
import type { DeviceRow } from "./model";
import { appSettingsOf, COLUMN_KEYS, type AppSettings } from "./app-settings";

/** A device not heard from for this long is offline (spec section 7: 5 minutes; PIGEON_OFFLINE_AFTER). */
export const OFFLINE_AFTER_MS = 5 * MINUTE;

/**
 * How often a phone without an event stream calls: the app's periodic pull runs on WorkManager's
 * shortest period, 15 minutes. Such a phone is judged by this interval, plus the usual allowance.
 */
export const POLL_INTERVAL_MS = 15 * MINUTE;

/** What a polling-only phone's owner should do about it. */
export const POLLING_HINT =
  "This phone has no event stream (the app's notification channel is AUTO with a push token), so it only polls every 15 minutes: messages wait up to 15 minutes and received SMS are not reported until the app restarts. In the app choose Settings → Cloud Server → Notification channel → SSE Only, then restart the app.";

/**
 * How a device learns of new work: a paired phone with a push token and no event stream only
 * polls (the app opens its stream only when it has no Firebase token); other paired phones hold
 * an event stream. Null for devices Pigeon calls itself.
 */
/** The SIM numbers a paired phone reported (its app's `simCards`), in order; [] when it reported none. */
export function reportedSimNumbers(row: Pick<DeviceRow, "simCards">): number[] {
  const list = Array.isArray(row.simCards) ? row.simCards : [];
  return list.flatMap((raw) => {
    const n = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>).simNumber : null;
    return typeof n === "number" && Number.isInteger(n) ? [n] : [];
  });
}

export function notificationChannelOf(row: Pick<DeviceRow, "pushToken">, paired: boolean): "sse" | "polling" | null {
  if (!paired) return null;
  return row.pushToken !== null ? "polling" : "sse";
}

/** How long a device may stay silent and still count as online. */
export function allowedSilence(row: Pick<DeviceRow, "pushToken">, offlineAfterMs = OFFLINE_AFTER_MS): number {
  return row.pushToken !== null ? POLL_INTERVAL_MS + offlineAfterMs : offlineAfterMs;
}

/**
 * A device's pacing window. A channel whose platform limit is a rate (a chat-app number: 80 a
 * second by default, i.e. a send_limit_per_minute of 4,800) is paced per second, so a minute's
 * allowance never goes out in one burst; the others per minute.
 */
export function paceOf(device: Pick<DeviceRow, "sendLimitPerMinute">, perSecond: boolean): { window: number; limit: number } {
  return perSecond
    ? { window: 1000, limit: Math.max(1, Math.ceil(device.sendLimitPerMinute / 60)) }
    : { window: MINUTE, limit: device.sendLimitPerMinute };
}

/** One item of the register body: the common fields, and a channel's settings under its key. */
export type RegisterItem = { name: string; kind?: DeviceRow["kind"]; phone_number?: string; send_limit_per_minute?: number } & Record<
  string,
  unknown
>;

/**
 * What a phone's last health report does to its score, as a factor: the battery (under 15 % off
 * the charger ×0.5, under 25 % ×0.8), the connection (none ×0.5) and the app's own check of
 * messages that failed in the last hour (fail ×0.5, warn ×0.8) multiply.
 */
export function conditionOf(h: PhoneHealth): number {
  const onPower = h.charging === true || h.plugged === true;
  let factor = 1;
  if (h.batteryLevel !== null && !onPower) factor *= h.batteryLevel < 15 ? 0.5 : h.batteryLevel < 25 ? 0.8 : 1;
  if (h.connected === false) factor *= 0.5;
  if (h.failedStatus === "fail") factor *= 0.5;
  else if (h.failedStatus === "warn") factor *= 0.8;
  return factor;
}

/** A phone's last health report as GET /device/:id/health shows it. */
function presentHealth(h: PhoneHealth, unhealthy: string[] | null) {
  return {
    status: h.status,
    battery_level: h.batteryLevel,
    charging: h.charging,
    plugged: h.plugged,
    connected: h.connected,
    cellular: h.cellular,
    failed_messages: h.failedMessages,
    failed_status: h.failedStatus,
    app_version: h.appVersion,
    unhealthy: unhealthy ?? [],
    reported_at: iso(h.reportedAt)!,
  };
}

/**
 * The sending settings a user can choose for a device. The ones chosen (device.userSettings) are
 * what a paired phone is given; the others stay as the phone's own settings have them.
 */
export const USER_SETTINGS = ["send_limit_per_minute", "send_interval_min", "send_interval_max", "encryption_passphrase"] as const;

export function isOnline(row: Pick<DeviceRow, "lastSeenAt" | "pushToken">, now: number, offlineAfterMs = OFFLINE_AFTER_MS): boolean {
  return row.lastSeenAt !== null && now - row.lastSeenAt <= allowedSilence(row, offlineAfterMs);
}

export interface DeviceHooks {
  /** Runs inside the delete's unit of work, before the devices disappear. */
  beforeRemove?: (ids: number[]) => Promise<void>;
  /** After a device's sending settings changed (a paired phone is told to fetch them again). */
  settingsChanged?: (device: DeviceRow) => void;
}

export function createDeviceService(
  storage: Storage,
  repo: DeviceRepository,
  usage: UsageStore,
  clock: Clock,
  hooks: DeviceHooks = {},
  options: {
    /** What each device kind needs at registration and for pacing. */
    channels: readonly ChannelTraits[];
    /** PIGEON_ALLOW_PRIVATE_WEBHOOKS: an address a device's settings name may then be loopback or private. */
    allowPrivateTargets?: boolean;
    /** PIGEON_OFFLINE_AFTER in milliseconds. */
    offlineAfterMs?: number;
  },
) {
  const offlineAfterMs = options.offlineAfterMs ?? OFFLINE_AFTER_MS;
  const traitsOf = (kind: DeviceRow["kind"]): ChannelTraits => {
    const traits = options.channels.find((c) => c.kind === kind);
    if (!traits) throw new Error(`no channel carries devices of kind ${kind}`);
    return traits;
  };
  const pace = (device: DeviceRow) => paceOf(device, traitsOf(device.kind).pacedPerSecond === true);
  /** The SIM cards a paired phone reported (redacted by the app), in the API's field names; [] for other kinds. */
  function simCardsOf(row: DeviceRow) {
    const list = Array.isArray(row.simCards) ? row.simCards : [];
    return list.flatMap((raw) => {
      if (typeof raw !== "object" || raw === null) return [];
      const c = raw as Record<string, unknown>;
      const str = (v: unknown) => (typeof v === "string" ? v : null);
      const int = (v: unknown) => (typeof v === "number" && Number.isInteger(v) ? v : null);
      const simNumber = int(c.simNumber);
      if (simNumber === null) return [];
      return [
        {
          sim_number: simNumber,
          slot_index: int(c.slotIndex),
          phone_number: str(c.phoneNumber),
          carrier_name: str(c.carrierName),
          iccid: str(c.iccid),
        },
      ];
    });
  }

  function present(row: DeviceRow) {
    const channel = notificationChannelOf(row, traitsOf(row.kind).needsPresence === true);
    return {
      device_id: row.id,
      name: row.name,
      status: row.status,
      kind: row.kind,
      phone_number: row.phoneNumber,
      online: isOnline(row, clock.now(), offlineAfterMs),
      notification_channel: channel,
      channel_hint: channel === "polling" ? POLLING_HINT : null,
      last_sync: iso(row.lastSeenAt),
      blocked: row.blockedCode !== null,
      blocked_code: row.blockedCode,
      blocked_reason: row.blockedReason,
      send_limit_per_minute: row.sendLimitPerMinute,
      send_interval_min: row.sendIntervalMin,
      send_interval_max: row.sendIntervalMax,
      encryption_passphrase_set: row.encryptionPassphrase !== null,
      sim_cards: simCardsOf(row),
      created_at: iso(row.createdAt),
      updated_at: iso(row.updatedAt),
    };
  }

  async function require(workspaceId: number, id: number): Promise<DeviceRow> {
    const row = await repo.get(workspaceId, id);
    if (!row) throw new AppError("not_found", `device ${id} not found`);
    return row;
  }

  /**
   * 0–100: 60 % contact and 40 % the success rate of the last 7 days' finished notifications.
   * Contact is full while the device is online (heard from within 5 minutes, or for a phone that
   * only polls within its 15-minute poll interval and 5 minutes more); once offline it starts at half
   * and falls to nothing at 24 hours. A blocked device scores 0. A phone that reports its health has
   * that score multiplied by its condition (conditionOf).
   */
  async function health(workspaceId: number, id: number) {
    const row = await require(workspaceId, id);
    const now = clock.now();
    const { finished, failed } = await repo.outcomesSince(row.id, now - 7 * DAY);
    const failureRate = finished === 0 ? 0 : failed / finished;
    const online = isOnline(row, now, offlineAfterMs);
    const silence = allowedSilence(row, offlineAfterMs);
    let contact = 0;
    if (online) contact = 100;
    else if (row.lastSeenAt !== null) contact = Math.max(0, 50 * (1 - (now - row.lastSeenAt - silence) / (DAY - silence)));
    const channel = notificationChannelOf(row, traitsOf(row.kind).needsPresence === true);
    const condition = row.health ? conditionOf(row.health) : 1;
    const score = row.blockedCode !== null ? 0 : Math.round((0.6 * contact + 0.4 * 100 * (1 - failureRate)) * condition);
    return {
      device_id: row.id,
      health_score: score,
      last_sync: iso(row.lastSeenAt),
      online,
      failure_rate: Math.round(failureRate * 1000) / 1000,
      notification_channel: channel,
      channel_hint: channel === "polling" ? POLLING_HINT : null,
      reported: row.health ? presentHealth(row.health, row.unhealthyReasons) : null,
    };
  }

  async function stats(workspaceId: number, id: number) {
    const row = await require(workspaceId, id);
    const c = await repo.statusCounts(row.id);
    return {
      device_id: row.id,
      sent: (c.sent ?? 0) + (c.delivered ?? 0),
      failed: c.failed ?? 0,
      pending: c.pending ?? 0,
    };
  }

  async function usageOf(auth: AuthContext, id: number) {
    const row = await require(auth.workspaceId, id);
    const since = monthStart(clock.now());
    const used = await repo.smsCountSince(row.id, since);
    const limit = auth.plan.monthlySmsLimit;
    if (limit === null) {
      return { device_id: row.id, period_start: iso(since), used, limit: -1, remaining: -1, unlimited: true };
    }
    const accountUsed = await usage.accountSmsSince(auth.accountId, since);
    return { device_id: row.id, period_start: iso(since), used, limit, remaining: Math.max(0, limit - accountUsed), unlimited: false };
  }

  /** The device's pacing window: how many more messages it may be handed now. */
  async function rateLimit(workspaceId: number, id: number) {
    const row = await require(workspaceId, id);
    const now = clock.now();
    const { window, limit } = pace(row);
    const windowStart = now - (now % window);
    const handed = await repo.dispatchedSince(row.id, windowStart);
    return {
      device_id: row.id,
      limit,
      window_seconds: window / 1000,
      requests_remaining: Math.max(0, limit - handed),
      reset_at: iso(windowStart + window),
    };
  }

  async function list(workspaceId: number, q: { page?: number; limit?: number; status?: "active" | "inactive" }) {
    const page = q.page ?? 1;
    const limit = q.limit ?? 20;
    const { rows, total } = await repo.list(workspaceId, { status: q.status, offset: (page - 1) * limit, limit });
    return { devices: rows.map(present), pagination: { page, limit, total } };
  }

  async function exportRows(workspaceId: number, includeInactive: boolean) {
    return (await repo.all(workspaceId, includeInactive)).map(present);
  }

  async function register(workspaceId: number, devices: RegisterItem[]) {
    const now = clock.now();
    // Validate every item before writing any, so a bad item stores nothing.
    const prepared = devices.map((d, i) => {
      let phone: string | null = null;
      if (d.phone_number !== undefined) {
        phone = toE164(d.phone_number);
        if (!phone) {
          throw new AppError(
            "invalid_phone_number",
            `Invalid phone number in devices[${i}].phone_number: "${d.phone_number}" is not E.164`,
            {
              field: `devices.${i}.phone_number`,
            },
          );
        }
      }
      const kind = d.kind ?? DEFAULT_DEVICE_KIND;
      const traits = traitsOf(kind);
      let config: object | null = null;
      let outbound: { url: string; field: string } | null = null;
      if (traits.config) {
        const { key } = traits.config;
        if (d[key] === undefined) {
          throw new AppError("validation_error", `Invalid body field 'devices.${i}.${key}': is required for kind "${kind}"`, {
            field: `devices.${i}.${key}`,
            location: "body",
            reason: `is required for kind "${kind}"`,
          });
        }
        const settings = traits.config.fromInput(d[key], `devices.${i}.${key}`);
        config = settings.stored;
        outbound = settings.outbound;
        phone ??= settings.phoneNumber;
      }
      const token = traits.issuesToken ? nanoid(21) : null;
      const row: NewDevice = {
        workspaceId,
        name: d.name.trim(),
        kind,
        status: "active",
        externalId: nanoid(21),
        tokenHash: token ? sha256Hex(token) : null,
        phoneNumber: phone,
        config,
        sendLimitPerMinute: d.send_limit_per_minute ?? traits.defaultSendLimit,
        userSettings: d.send_limit_per_minute !== undefined ? ["send_limit_per_minute"] : null,
        createdAt: now,
        updatedAt: now,
      };
      return { row, token, outbound };
    });
    // A provider is called with the server's network position: its URL must be public.
    for (const p of prepared) {
      if (!p.outbound) continue;
      const problem = await outboundTargetProblem(p.outbound.url, options.allowPrivateTargets === true);
      if (problem) {
        const field = p.outbound.field;
        throw new AppError("validation_error", `Invalid body field '${field}': ${problem}`, { field, location: "body", reason: problem });
      }
    }
    const rows = await storage.transaction(() => repo.insertMany(prepared.map((p) => p.row)));
    return rows.map((row, i) => ({ ...present(row), device_token: prepared[i].token, external_id: row.externalId }));
  }

  /** All ids must be this workspace's devices, or nothing changes. */
  async function requireAll(workspaceId: number, ids: number[]): Promise<number[]> {
    const unique = [...new Set(ids)];
    const found = new Set((await repo.getMany(workspaceId, unique)).map((d) => d.id));
    const missing = unique.filter((id) => !found.has(id));
    if (missing.length > 0) {
      throw new AppError("not_found", `device ${missing.join(", ")} not found; nothing was changed`, { not_found: missing });
    }
    return unique;
  }

  async function remove(workspaceId: number, ids: number[]) {
    const unique = await requireAll(workspaceId, ids);
    await storage.transaction(async () => {
      await hooks.beforeRemove?.(unique);
      await repo.softDelete(workspaceId, unique, clock.now());
    });
    return { deleted: unique, count: unique.length };
  }

  async function setStatus(workspaceId: number, ids: number[], status: "active" | "inactive") {
    const unique = await requireAll(workspaceId, ids);
    const rows = await repo.setStatus(workspaceId, unique, status, clock.now());
    return { devices: rows.map(present), count: rows.length };
  }

  async function update(
    workspaceId: number,
    input: {
      device_id: number;
      name?: string;
      send_limit_per_minute?: number;
      send_interval_min?: number;
      send_interval_max?: number;
      /** A paired phone's app settings as the user now has them (app-settings.ts); absent: unchanged. */
      app_settings?: AppSettings;
      /** Paired phones: the passphrase pushed to the phone for encrypted messages; null takes it back. */
      encryption_passphrase?: string | null;
    },
  ) {
    // Read and written in one unit: the config also holds what the phone channel keeps there.
    const updated = await storage.transaction(async () => {
      const row = await require(workspaceId, input.device_id);
      if (input.encryption_passphrase !== undefined && traitsOf(row.kind).needsPresence !== true)
        throw new AppError(
          "option_not_supported",
          `encryption_passphrase applies to paired phones; device ${row.id} is a ${row.kind} device`,
          {
            field: "encryption_passphrase",
            device_id: row.id,
          },
        );
      const min = input.send_interval_min ?? row.sendIntervalMin;
      const max = input.send_interval_max ?? row.sendIntervalMax;
      if (min > max) {
        throw new AppError("validation_error", "Invalid body field 'send_interval_min': must not exceed send_interval_max", {
          field: "send_interval_min",
          location: "body",
          reason: "must not exceed send_interval_max",
        });
      }
      const chosen = new Set(row.userSettings ?? []);
      for (const field of USER_SETTINGS) if (input[field] !== undefined) chosen.add(field);
      // A value set in a column replaces what appSettings held for the same key (a cleared pause, a
      // limit in another period), so the newest choice is the one served.
      const app = input.app_settings ?? appSettingsOf(row);
      for (const field of USER_SETTINGS)
        if (input[field] !== undefined) for (const key of COLUMN_KEYS[field] ?? []) if (app.messages) delete app.messages[key];
      for (const section of Object.keys(app)) if (Object.keys(app[section]).length === 0) delete app[section];
      const before = appSettingsOf(row);
      const appChanged = JSON.stringify(app) !== JSON.stringify(before);
      return repo.update(row.id, {
        ...(appChanged ? { config: { ...(row.config ?? {}), appSettings: app } } : {}),
        name: input.name?.trim() ?? row.name,
        userSettings: [...chosen].sort(),
        sendLimitPerMinute: input.send_limit_per_minute ?? row.sendLimitPerMinute,
        sendIntervalMin: min,
        sendIntervalMax: max,
        ...(input.encryption_passphrase !== undefined ? { encryptionPassphrase: input.encryption_passphrase } : {}),
        updatedAt: clock.now(),
      });
    });
    hooks.settingsChanged?.(updated);
    return present(updated);
  }

  return {
    present,
    pace,
    require,
    /** A device of the workspace as stored, or null. */
    find: (workspaceId: number, id: number): Promise<DeviceRow | null> => repo.get(workspaceId, id),
    /** The workspace's devices as stored (the inactive ones too, with `includeInactive`). */
    records: (workspaceId: number, includeInactive: boolean): Promise<DeviceRow[]> => repo.all(workspaceId, includeInactive),
    update,
    list,
    exportRows,
    health,
    stats,
    usage: usageOf,
    rateLimit,
    register,
    remove,
    setStatus,
  };
}

export type DeviceService = ReturnType<typeof createDeviceService>;
