// SMSGate's settings (GET/PUT/PATCH /settings), which SMSGate keeps per user and pushes to every
// phone. Pigeon keeps sending settings per phone, so the ones it acts on are applied to every
// paired phone of the workspace: the pause between messages and the per-minute limit. The webhook
// signing key is the workspace's SMSGate key: it can be set here but, as in SMSGate, never read.
// The encryption passphrase is pushed to every paired phone (sealed in each phone's row), also never
// read back: a read says only whether one is set. Anything else is refused by name rather than
// stored and ignored.
import { AppError } from "../../core/errors";
import type { DeviceRow } from "../devices/model";
import type { DeviceService } from "../devices/service";
import type { SmsGateWebhooks } from "./webhooks";

type Json = Record<string, unknown>;

/** A setting by SMSGate's name (snake_case, as its server and the app use) or the npm client's camelCase. */
function pick(section: Json, snake: string): unknown {
  const camel = snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  return section[snake] ?? section[camel];
}

const KNOWN: Record<string, string[]> = {
  messages: ["send_interval_min", "send_interval_max", "limit_period", "limit_value"],
  webhooks: ["signing_key"],
  encryption: ["passphrase"],
};

/** What a read says of the passphrase instead of it; given back in a write, it changes nothing. */
const PASSPHRASE_SET = "passphrase_set";

function refuse(field: string, reason: string): never {
  throw new AppError("option_not_supported", `Setting ${field} ${reason}`, { field });
}

const positiveInt = (v: unknown, field: string, min: number) => {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > 3600)
    throw new AppError("validation_error", `Setting ${field} must be a whole number from ${min} to 3600`, { field, location: "body" });
  return v;
};

export function createSmsGateSettings(deps: { devices: DeviceService; isPhone: (d: DeviceRow) => boolean; webhooks: SmsGateWebhooks }) {
  const phones = async (workspaceId: number) => (await deps.devices.records(workspaceId, true)).filter(deps.isPhone);

  async function get(workspaceId: number): Promise<Record<string, Record<string, string | number | boolean>>> {
    const all = await phones(workspaceId);
    const [first] = all;
    return {
      messages: first
        ? {
            send_interval_min: first.sendIntervalMin,
            send_interval_max: first.sendIntervalMax,
            limit_period: "PerMinute",
            limit_value: first.sendLimitPerMinute,
          }
        : {},
      webhooks: {},
      encryption: { [PASSPHRASE_SET]: all.length > 0 && all.every((p) => p.encryptionPassphrase !== null) },
    };
  }

  /** Checks every given setting, then applies them all: a refused one changes nothing. */
  async function update(workspaceId: number, body: Json) {
    const change: { send_interval_min?: number; send_interval_max?: number; send_limit_per_minute?: number } = {};
    let signingKey: string | null = null;
    let passphrase: { value: string | null } | null = null;
    for (const [section, value] of Object.entries(body)) {
      if (value === null || value === undefined) continue;
      if (!KNOWN[section])
        refuse(
          section,
          `is not supported by Pigeon; it applies ${Object.entries(KNOWN)
            .flatMap(([s, keys]) => keys.map((k) => `${s}.${k}`))
            .join(", ")}`,
        );
      if (typeof value !== "object" || Array.isArray(value))
        throw new AppError("validation_error", `Setting ${section} must be an object`, { field: section, location: "body" });
      const fields = value as Json;
      for (const key of Object.keys(fields)) {
        const snake = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
        if (section === "encryption" && snake === PASSPHRASE_SET) continue;
        if (fields[key] !== null && !KNOWN[section].includes(snake)) refuse(`${section}.${key}`, "is not supported by Pigeon");
      }
      if (section === "messages") {
        const min = pick(fields, "send_interval_min");
        const max = pick(fields, "send_interval_max");
        const period = pick(fields, "limit_period");
        const limit = pick(fields, "limit_value");
        if (min != null) change.send_interval_min = positiveInt(min, "messages.send_interval_min", 0);
        if (max != null) change.send_interval_max = positiveInt(max, "messages.send_interval_max", 0);
        if (period != null && period !== "PerMinute")
          refuse("messages.limit_period", `${String(period)} is not supported: Pigeon limits each phone per minute (PerMinute)`);
        if (limit != null) change.send_limit_per_minute = positiveInt(limit, "messages.limit_value", 1);
      } else if (section === "encryption") {
        // null takes the passphrase back from every phone; a key left out changes nothing.
        if ("passphrase" in fields) {
          const value = fields.passphrase;
          if (value !== null && (typeof value !== "string" || value.length < 1 || value.length > 256))
            throw new AppError("validation_error", "Setting encryption.passphrase must be 1 to 256 characters, or null", {
              field: "encryption.passphrase",
              location: "body",
            });
          passphrase = { value: value as string | null };
        }
      } else {
        const key = pick(fields, "signing_key");
        if (key != null) {
          if (typeof key !== "string" || key.length < 1 || key.length > 256)
            throw new AppError("validation_error", "Setting webhooks.signing_key must be 1 to 256 characters", {
              field: "webhooks.signing_key",
              location: "body",
            });
          signingKey = key;
        }
      }
    }
    const targets = Object.keys(change).length > 0 || passphrase !== null ? await phones(workspaceId) : [];
    for (const phone of targets) {
      const min = change.send_interval_min ?? phone.sendIntervalMin;
      const max = change.send_interval_max ?? phone.sendIntervalMax;
      if (min > max)
        throw new AppError(
          "validation_error",
          `messages.send_interval_min (${min}) must not exceed send_interval_max (${max}) on phone ${phone.id}`,
          { field: "messages.send_interval_min", location: "body" },
        );
    }
    if (signingKey !== null) await deps.webhooks.setSigningKey(workspaceId, signingKey);
    const withPassphrase = passphrase === null ? {} : { encryption_passphrase: passphrase.value };
    for (const phone of targets) await deps.devices.update(workspaceId, { device_id: phone.id, ...change, ...withPassphrase });
    return get(workspaceId);
  }

  return { get, update };
}
