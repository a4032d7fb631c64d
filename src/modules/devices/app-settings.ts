// The companion app's own settings a user may set for a paired phone (through SMSGate's
// /settings), checked as the app's importers read them: MessagesSettings.kt, WebhooksSettings.kt,
// PingSettings.kt, LogsSettings.kt and GatewaySettings.kt in capcom6/android-sms-gateway 1.68.0
// (each `import()` walks the keys it is given; a key given as null goes back to the app's default,
// a key left out keeps the phone's value, an unknown enum name throws).
//
// What a user set is kept per phone under `device.config.appSettings`, in the app's shape
// ({section: {key: value}}; null is a key the user cleared). The three sending settings Pigeon
// also shows in its own API stay in their columns (send_interval_min/max, send_limit_per_minute)
// while their value is one those columns can hold; appSettings holds only what they cannot: a
// cleared pause, or a limit in another period than a minute.
import { AppError } from "../../core/errors";
import { SEND_LIMIT_MAX } from "./model";
import type { DeviceRow } from "./model";

export const LIMIT_PERIODS = ["Disabled", "PerMinute", "Per30Minutes", "PerHour", "PerDay"] as const;
export type LimitPeriod = (typeof LIMIT_PERIODS)[number];

/** Each period's length, as the app's MessagesSettings.Period gives it (Disabled: none). */
export const PERIOD_MS: Record<LimitPeriod, number> = {
  Disabled: 0,
  PerMinute: 60_000,
  Per30Minutes: 1_800_000,
  PerHour: 3_600_000,
  PerDay: 86_400_000,
};

/** The first app version whose Period knows Per30Minutes (commit 11580ad, released in 1.67.0). */
export const PER_30_MINUTES_SINCE = "1.67.0";

export type AppSettingValue = string | number | boolean | null;
export type AppSettings = Record<string, Record<string, AppSettingValue>>;

/** The app's Int: its importers read a number with toFloat().toInt(). */
const INT_MAX = 2_147_483_647;

type Rule =
  | { kind: "int"; min: number; max: number; note?: string }
  | { kind: "enum"; values: readonly string[] }
  | { kind: "bool" }
  | { kind: "string"; min: number; max: number };

/**
 * Every key the released app imports from GET /mobile/v1/settings, with the values it accepts.
 * `encryption.passphrase` and `gateway.cloud_url`/`private_token` are not here: the passphrase
 * belongs to end-to-end encryption, and the server address and token would point the phone away
 * from Pigeon.
 */
export const APP_SETTING_RULES: Record<string, Record<string, Rule>> = {
  messages: {
    // Pigeon's own range for the pause (its device API's); the app takes any whole number.
    send_interval_min: { kind: "int", min: 0, max: 3600 },
    send_interval_max: { kind: "int", min: 0, max: 3600 },
    limit_period: { kind: "enum", values: LIMIT_PERIODS },
    // The app refuses a negative value ("Limit value must be >= 0"); 0 turns its limit off.
    limit_value: { kind: "int", min: 0, max: INT_MAX },
    sim_selection_mode: { kind: "enum", values: ["OSDefault", "RoundRobin", "Random"] },
    processing_order: { kind: "enum", values: ["LIFO", "FIFO"] },
    // "Log lifetime days must be >= 1".
    log_lifetime_days: { kind: "int", min: 1, max: INT_MAX },
  },
  webhooks: {
    // The app reads toString().toBoolean(); Pigeon takes a JSON boolean only.
    internet_required: { kind: "bool" },
    // "Retry count must be >= 1".
    retry_count: { kind: "int", min: 1, max: INT_MAX },
    // The SMSGate webhooks' key (the workspace's), never the phone's own: see smsgate/settings.ts.
    signing_key: { kind: "string", min: 1, max: 256 },
  },
  // The app keeps only a value above 0 (takeIf { it > 0 }); 0 turns the ping off.
  ping: { interval_seconds: { kind: "int", min: 0, max: INT_MAX } },
  // Likewise: 0 keeps the app's logs for ever.
  logs: { lifetime_days: { kind: "int", min: 0, max: INT_MAX } },
  // Only SSE_ONLY: Pigeon cannot reach a phone through Firebase, so AUTO is refused by name.
  gateway: { notification_channel: { kind: "enum", values: ["SSE_ONLY"] } },
};

function invalid(field: string, reason: string): never {
  throw new AppError("validation_error", `Setting ${field} ${reason}`, { field, location: "body", reason });
}

/**
 * Whether Pigeon serves the section, and the rule of one of its keys: own entries only, so a name
 * such as "constructor" is an unknown setting, not a property every object inherits.
 */
export const isAppSettingSection = (section: string): boolean => Object.hasOwn(APP_SETTING_RULES, section);
export const appSettingRule = (section: string, key: string): Rule | undefined =>
  isAppSettingSection(section) && Object.hasOwn(APP_SETTING_RULES[section], key) ? APP_SETTING_RULES[section][key] : undefined;

/** One setting checked against its rule; null passes (it clears the key). */
export function checkAppSetting(section: string, key: string, value: unknown): AppSettingValue {
  const rule = appSettingRule(section, key);
  const field = `${section}.${key}`;
  if (!rule) throw new AppError("option_not_supported", `Setting ${field} is not supported by Pigeon`, { field });
  if (value === null) return null;
  switch (rule.kind) {
    case "int":
      if (typeof value !== "number" || !Number.isInteger(value) || value < rule.min || value > rule.max)
        invalid(field, `must be a whole number from ${rule.min} to ${rule.max}`);
      return value;
    case "enum":
      if (typeof value !== "string" || !rule.values.includes(value)) invalid(field, `must be one of ${rule.values.join(", ")}`);
      return value;
    case "bool":
      if (typeof value !== "boolean") invalid(field, "must be true or false");
      return value;
    case "string":
      if (typeof value !== "string" || value.length < rule.min || value.length > rule.max)
        invalid(field, `must be ${rule.min} to ${rule.max} characters`);
      return value;
  }
}

/** What the user set for a phone beyond its columns (a copy the caller may change). */
export function appSettingsOf(device: Pick<DeviceRow, "config">): AppSettings {
  const stored = (device.config as { appSettings?: AppSettings } | null)?.appSettings;
  const out: AppSettings = {};
  if (stored && typeof stored === "object") for (const [section, keys] of Object.entries(stored)) out[section] = { ...keys };
  return out;
}

/** The limit a phone runs under: its period and value (value 0 or Disabled: no limit). */
export interface PhoneLimit {
  period: LimitPeriod;
  value: number;
  /** Whether the user chose it (else it is Pigeon's per-minute default, not given to the phone). */
  chosen: boolean;
}

/**
 * The phone's limit as the user chose it: a period kept in appSettings (with its value, null there
 * being the app's 0), else the per-minute column. A cleared period (null) gives the phone its own
 * default (no limit) while Pigeon falls back to its per-minute pacing.
 */
export function limitOf(device: Pick<DeviceRow, "config" | "sendLimitPerMinute" | "userSettings">): PhoneLimit {
  const m = appSettingsOf(device).messages ?? {};
  if (typeof m.limit_period === "string") {
    const value = "limit_value" in m ? (m.limit_value as number | null) : device.sendLimitPerMinute;
    return { period: m.limit_period as LimitPeriod, value: value ?? 0, chosen: true };
  }
  return { period: "PerMinute", value: device.sendLimitPerMinute, chosen: (device.userSettings ?? []).includes("send_limit_per_minute") };
}

/** Whether a limit can live in the per-minute column (so Pigeon's device API shows it as it is). */
export function fitsColumn(period: LimitPeriod | null, value: number | null): value is number {
  return period === "PerMinute" && value !== null && value >= 1 && value <= SEND_LIMIT_MAX;
}

/** The appSettings keys a column of Pigeon's device API stands for: set there, they are dropped. */
export const COLUMN_KEYS: Record<string, string[]> = {
  send_interval_min: ["send_interval_min"],
  send_interval_max: ["send_interval_max"],
  send_limit_per_minute: ["limit_period", "limit_value"],
};

const LIMIT_KEYS = ["limit_period", "limit_value"];

/**
 * What the user set for a phone, in the app's shape, as GET /mobile/v1/settings gives it: the pause
 * once either end was chosen, the limit once chosen (a period with its value), and each other key
 * set, null for one cleared. Keys never set are left out, so the phone keeps its own choice. An app
 * that does not know Per30Minutes (`knowsPer30Minutes` false) is given no limit at all: its
 * Period.valueOf would throw, which fails the whole settings import and makes the app retry it.
 */
export function userAppSettings(
  device: Pick<DeviceRow, "config" | "sendLimitPerMinute" | "sendIntervalMin" | "sendIntervalMax" | "userSettings">,
  knowsPer30Minutes: boolean,
): AppSettings {
  const app = appSettingsOf(device);
  const chosen = new Set(device.userSettings ?? []);
  const messages: Record<string, AppSettingValue> = {};
  // Pigeon shows the pause as one range, so choosing either end gives the phone the whole range.
  if (chosen.has("send_interval_min") || chosen.has("send_interval_max")) {
    messages.send_interval_min = device.sendIntervalMin;
    messages.send_interval_max = device.sendIntervalMax;
  }
  const stored = app.messages ?? {};
  if ("limit_period" in stored) {
    messages.limit_period = stored.limit_period;
    messages.limit_value = "limit_value" in stored ? stored.limit_value : device.sendLimitPerMinute;
  } else if (chosen.has("send_limit_per_minute")) {
    messages.limit_period = "PerMinute";
    messages.limit_value = device.sendLimitPerMinute;
  }
  for (const [key, value] of Object.entries(stored)) if (!LIMIT_KEYS.includes(key)) messages[key] = value;
  if (!knowsPer30Minutes && messages.limit_period === "Per30Minutes") for (const key of LIMIT_KEYS) delete messages[key];
  const out: AppSettings = {};
  if (Object.keys(messages).length > 0) out.messages = messages;
  for (const [section, keys] of Object.entries(app)) if (section !== "messages" && Object.keys(keys).length > 0) out[section] = keys;
  return out;
}
