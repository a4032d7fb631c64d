// SMSGate's settings (GET/PUT/PATCH /settings), which SMSGate keeps per user and pushes to every
// phone. Pigeon keeps them per phone, so what is set here is applied to every paired phone of the
// workspace (each then gets SettingsUpdated and reads them from GET /mobile/v1/settings): every key
// the released app reads (devices/app-settings.ts), checked as the app checks it, and a key given
// as null cleared (the phone is then given null, which resets it to the app's default). The
// webhook signing key is the workspace's SMSGate key: it can be set here but, as in SMSGate, never
// read. The encryption passphrase is pushed to every paired phone (sealed in each phone's row),
// also never read back: a read says only whether one is set. Anything else is refused by name
// rather than stored and ignored.
import { AppError } from "../../core/errors";
import { randomBase62 } from "../../lib/tokens";
import {
  APP_SETTING_RULES,
  appSettingRule,
  isAppSettingSection,
  appSettingsOf,
  checkAppSetting,
  fitsColumn,
  type AppSettings,
  type AppSettingValue,
  type LimitPeriod,
  limitOf,
  userAppSettings,
} from "../devices/app-settings";
import type { DeviceRow } from "../devices/model";
import type { DeviceService } from "../devices/service";
import type { SmsGateWebhooks } from "./webhooks";

type Json = Record<string, unknown>;

const supported = () =>
  Object.entries(APP_SETTING_RULES)
    .flatMap(([s, keys]) => Object.keys(keys).map((k) => `${s}.${k}`))
    .concat("encryption.passphrase")
    .join(", ");

/** What a read says of the passphrase instead of it; given back in a write, it changes nothing. */
const PASSPHRASE_SET = "passphrase_set";

/**
 * The `encryption` section: the passphrase to push (null takes it back), or null when the body
 * leaves it alone. Kept apart from the app settings: it is sealed in the phone's own row.
 */
function passphraseOf(section: unknown): { value: string | null } | null {
  if (section === null || section === undefined) return null;
  if (typeof section !== "object" || Array.isArray(section))
    throw new AppError("validation_error", "Setting encryption must be an object", { field: "encryption", location: "body" });
  let given: { value: string | null } | null = null;
  for (const [key, value] of Object.entries(section as Json)) {
    const snake = snakeOf(key);
    if (snake === PASSPHRASE_SET) continue;
    if (snake !== "passphrase") {
      if (value === null) continue;
      refuse(`encryption.${key}`, "is not supported by Pigeon");
    }
    if (value !== null && (typeof value !== "string" || value.length < 1 || value.length > 256))
      throw new AppError("validation_error", "Setting encryption.passphrase must be 1 to 256 characters, or null", {
        field: "encryption.passphrase",
        location: "body",
      });
    given = { value: value as string | null };
  }
  return given;
}

function refuse(field: string, reason: string): never {
  throw new AppError("option_not_supported", `Setting ${field} ${reason}`, { field });
}

/** SMSGate's name (snake_case, as its server and the app use) for the npm client's camelCase. */
const snakeOf = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The settings given, checked: by section and snake_case key, null for a key to clear. */
function parse(body: Json): AppSettings {
  const given: AppSettings = {};
  for (const [section, value] of Object.entries(body)) {
    if (value === null || value === undefined) continue;
    if (!isAppSettingSection(section)) refuse(section, `is not supported by Pigeon; it applies ${supported()}`);
    if (typeof value !== "object" || Array.isArray(value))
      throw new AppError("validation_error", `Setting ${section} must be an object`, { field: section, location: "body" });
    for (const [key, raw] of Object.entries(value as Json)) {
      const snake = snakeOf(key);
      if (!appSettingRule(section, snake)) {
        // A null for a key Pigeon does not serve asks for nothing, so it is let through.
        if (raw === null) continue;
        refuse(`${section}.${key}`, unsupportedReason(section, snake));
      }
      if (section === "gateway" && raw === "AUTO")
        refuse(
          "gateway.notification_channel",
          "AUTO is not supported: Pigeon cannot reach a phone through Firebase, so a phone on AUTO would only poll every 15 minutes; Pigeon always gives SSE_ONLY",
        );
      given[section] ??= {};
      given[section][snake] = checkAppSetting(section, snake, raw);
    }
  }
  return given;
}

function unsupportedReason(section: string, key: string): string {
  if (section === "gateway" && (key === "cloud_url" || key === "private_token"))
    return "is not supported by Pigeon: the phone's server address and token are set when it is paired, never pushed";
  return "is not supported by Pigeon";
}

/** A phone's settings after `given`: the columns to write and the app settings to keep. */
function plan(phone: DeviceRow, given: AppSettings) {
  const app = appSettingsOf(phone);
  const m = given.messages ?? {};
  const change: { send_interval_min?: number; send_interval_max?: number; send_limit_per_minute?: number } = {};
  const keep = (section: string, key: string, value: AppSettingValue) => {
    app[section] ??= {};
    app[section][key] = value;
  };
  for (const key of ["send_interval_min", "send_interval_max"] as const) {
    if (!(key in m)) continue;
    const value = m[key] as number | null;
    if (value === null) keep("messages", key, null);
    else change[key] = value;
  }
  if ("limit_period" in m || "limit_value" in m) {
    const stored = app.messages ?? {};
    const current = limitOf(phone);
    const period = (
      "limit_period" in m ? m.limit_period : "limit_period" in stored ? stored.limit_period : "PerMinute"
    ) as LimitPeriod | null;
    const value = ("limit_value" in m ? m.limit_value : current.value) as number | null;
    if (fitsColumn(period, value)) {
      change.send_limit_per_minute = value;
      delete app.messages?.limit_period;
      delete app.messages?.limit_value;
    } else {
      keep("messages", "limit_period", period);
      keep("messages", "limit_value", value);
    }
  }
  for (const [section, keys] of Object.entries(given))
    for (const [key, value] of Object.entries(keys)) {
      if (section === "messages" && (key.startsWith("send_interval_") || key.startsWith("limit_"))) continue;
      // The signing key is the workspace's (SMSGate's webhooks); the phone's own is Pigeon's.
      if (section === "webhooks" && key === "signing_key") continue;
      // Pigeon gives SSE_ONLY whatever is set: nothing to keep.
      if (section === "gateway") continue;
      keep(section, key, value);
    }
  const min = change.send_interval_min ?? (app.messages?.send_interval_min === null ? null : phone.sendIntervalMin);
  const max = change.send_interval_max ?? (app.messages?.send_interval_max === null ? null : phone.sendIntervalMax);
  if ((change.send_interval_min !== undefined || change.send_interval_max !== undefined) && min !== null && max !== null && min > max)
    throw new AppError(
      "validation_error",
      `messages.send_interval_min (${min}) must not exceed send_interval_max (${max}) on phone ${phone.id}`,
      { field: "messages.send_interval_min", location: "body" },
    );
  return { device_id: phone.id, ...change, app_settings: app };
}

export function createSmsGateSettings(deps: { devices: DeviceService; isPhone: (d: DeviceRow) => boolean; webhooks: SmsGateWebhooks }) {
  const phones = async (workspaceId: number) => (await deps.devices.records(workspaceId, true)).filter(deps.isPhone);

  /**
   * The first phone's settings (all are set alike through this API): the pause and the limit
   * Pigeon applies, whether chosen or not, and every other key set (null when cleared).
   */
  async function get(workspaceId: number): Promise<AppSettings> {
    const all = await phones(workspaceId);
    const [first] = all;
    const encryption = { [PASSPHRASE_SET]: all.length > 0 && all.every((p) => p.encryptionPassphrase !== null) };
    if (!first) return { messages: {}, webhooks: {}, encryption };
    const set = userAppSettings(first, true);
    const limit = limitOf(first);
    const { signing_key: _, ...webhooks } = set.webhooks ?? {};
    return {
      ...set,
      messages: {
        send_interval_min: first.sendIntervalMin,
        send_interval_max: first.sendIntervalMax,
        limit_period: limit.period,
        limit_value: limit.value,
        ...set.messages,
      },
      webhooks,
      gateway: { notification_channel: "SSE_ONLY" },
      encryption,
    };
  }

  /** Checks every given setting on every phone, then applies them all: a refused one changes nothing. */
  async function update(workspaceId: number, body: Json) {
    const { encryption, ...rest } = body;
    const passphrase = passphraseOf(encryption);
    const given = parse(rest);
    const signingKey = given.webhooks && "signing_key" in given.webhooks ? given.webhooks.signing_key : undefined;
    const forPhones =
      passphrase !== null ||
      Object.entries(given).some(([section, keys]) =>
        Object.keys(keys).some((key) => !(section === "webhooks" && key === "signing_key") && section !== "gateway"),
      );
    const withPassphrase = passphrase === null ? {} : { encryption_passphrase: passphrase.value };
    const plans = forPhones ? (await phones(workspaceId)).map((phone) => ({ ...plan(phone, given), ...withPassphrase })) : [];
    // Cleared, a new random key signs from now on (the app, too, makes itself a new one).
    if (signingKey !== undefined) await deps.webhooks.setSigningKey(workspaceId, (signingKey as string | null) ?? randomBase62(32));
    for (const p of plans) await deps.devices.update(workspaceId, p);
    return get(workspaceId);
  }

  return { get, update };
}
