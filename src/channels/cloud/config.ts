// A cloud-number device's provider settings, stored in device.config. The provider speaks the
// Twilio Messages API; base_url points at Twilio or at anything compatible (a local fake in tests).
import { t } from "elysia";
import { AppError } from "../../core/errors";
import { toE164 } from "../../lib/phone";

export const DEFAULT_CLOUD_BASE_URL = "https://api.twilio.com";

export const CloudConfigInput = t.Object(
  {
    account_sid: t.String({ minLength: 1, maxLength: 64, description: "The provider account SID (AC…)" }),
    auth_token: t.String({ minLength: 1, maxLength: 128, description: "The provider auth token; stored, never shown again" }),
    from_number: t.Optional(t.String({ description: "The cloud number to send from, E.164" })),
    messaging_service_sid: t.Optional(t.String({ description: "Or a messaging service SID (MG…) instead of from_number" })),
    base_url: t.Optional(
      t.String({
        description: `The API base URL; default ${DEFAULT_CLOUD_BASE_URL}. Must reach a public address (not loopback, link-local or private) unless the server sets PIGEON_ALLOW_PRIVATE_WEBHOOKS=1`,
      }),
    ),
  },
  { description: "Required for kind `cloud`: the provider account the number belongs to" },
);

export interface CloudConfig {
  accountSid: string;
  authToken: string;
  from: string | null;
  messagingServiceSid: string | null;
  baseUrl: string;
}

/** Checks the API input and returns what is stored in device.config. */
export function cloudConfigFromInput(input: typeof CloudConfigInput.static, field: string): CloudConfig {
  let from: string | null = null;
  if (input.from_number !== undefined) {
    from = toE164(input.from_number);
    if (!from)
      throw new AppError("invalid_phone_number", `Invalid phone number in ${field}.from_number: "${input.from_number}" is not E.164`, {
        field: `${field}.from_number`,
      });
  }
  const messagingServiceSid = input.messaging_service_sid?.trim() || null;
  if (!from && !messagingServiceSid) {
    throw new AppError("validation_error", `Invalid body field '${field}': needs from_number or messaging_service_sid`, {
      field,
      location: "body",
      reason: "needs from_number or messaging_service_sid",
    });
  }
  const baseUrl = (input.base_url?.trim() || DEFAULT_CLOUD_BASE_URL).replace(/\/+$/, "");
  if (!/^https?:\/\/[^\s/]+/.test(baseUrl)) {
    throw new AppError("validation_error", `Invalid body field '${field}.base_url': must be an http(s) URL`, {
      field: `${field}.base_url`,
      location: "body",
      reason: "must be an http(s) URL",
    });
  }
  return { accountSid: input.account_sid.trim(), authToken: input.auth_token, from, messagingServiceSid, baseUrl };
}

export function cloudConfigOf(config: unknown): CloudConfig | null {
  const c = config as Partial<CloudConfig> | null;
  if (!c || typeof c.accountSid !== "string" || typeof c.authToken !== "string" || typeof c.baseUrl !== "string") return null;
  return {
    accountSid: c.accountSid,
    authToken: c.authToken,
    from: c.from ?? null,
    messagingServiceSid: c.messagingServiceSid ?? null,
    baseUrl: c.baseUrl,
  };
}
