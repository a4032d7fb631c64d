// Schemas of the SMSGate-compatible API, named and shaped as SMSGate's (client-go's smsgateway
// package): they validate requests, type the handlers and describe the operations in /openapi.json.
import { t, type Static } from "elysia";
import { DATA_PORT_MAX, DATA_PORT_MIN, DATA_SMS_MAX_OCTETS } from "../../lib/data-sms";
import { SCOPES, TOKEN_TTL_MAX_SECONDS } from "./auth";
import { SMSGATE_WEBHOOK_EVENTS } from "./webhooks";

/**
 * SMSGate's processing states, in the order a message moves through them; Cancelling is a
 * message whose phone was asked to drop it and has not answered yet (the app's own state name).
 */
export const STATES = ["Pending", "Processed", "Sent", "Delivered", "Failed", "Cancelling", "Cancelled"] as const;
export type State = (typeof STATES)[number];

const nullable = <T extends Parameters<typeof t.Nullable>[0]>(schema: T) => t.Optional(t.Nullable(schema));

export const SendMessageBody = t.Object({
  id: nullable(t.String({ maxLength: 36, description: "The message's id; generated when absent. A repeated id answers 409." })),
  deviceId: nullable(
    t.String({ maxLength: 21, description: "The phone to send through (an id from GET /devices); any active one when absent" }),
  ),
  poolId: nullable(
    t.Integer({
      description:
        "Pigeon's own: the sender pool (POST /v1/api/pool/create) whose member sends it, chosen for the first recipient; the others go through the same phone. Not with deviceId. Without both, the workspace's default pool, if any",
    }),
  ),
  message: nullable(t.String({ description: "The text (older form of textMessage)" })),
  textMessage: nullable(t.Object({ text: t.String() })),
  dataMessage: nullable(
    t.Object(
      {
        data: t.String({
          description: `The payload, base64: 1 to ${DATA_SMS_MAX_OCTETS} bytes once decoded (one SMS beside its port header); else 400 invalid_data_encoding, data_message_empty or data_message_too_long. With isEncrypted: the encrypted value of that base64`,
        }),
        port: t.Integer({ description: `The application port, ${DATA_PORT_MIN} to ${DATA_PORT_MAX}; else 400 invalid_port` }),
      },
      {
        description:
          "A data SMS instead of text, sent by the phone as one SMS to the port (counted as one part). Not with message or textMessage (400 content_conflict). With isEncrypted, data is one encrypted value whose plaintext is the payload's base64 (at most 192 bytes of ciphertext, else 400 invalid_encrypted_value); the port stays plain",
      },
    ),
  ),
  phoneNumbers: t.Array(t.String({ minLength: 1 }), { minItems: 1, maxItems: 100 }),
  simNumber: nullable(t.Integer({ minimum: 1, maximum: 3 })),
  withDeliveryReport: nullable(t.Boolean()),
  priority: nullable(t.Integer({ minimum: -128, maximum: 127, description: "100 and above skips the phone's limits and delays" })),
  ttl: nullable(t.Integer({ minimum: 0, description: "Seconds the message may wait; not with validUntil" })),
  validUntil: nullable(t.String({ format: "date-time" })),
  scheduleAt: nullable(t.String({ format: "date-time", description: "When to send it (RFC 3339 with a zone)" })),
  isEncrypted: nullable(
    t.Boolean({
      description:
        "true: the text and each phone number are values in the app's format `$aes-256-cbc/pbkdf2-sha1$i=<iterations>$<base64 salt>$<base64 ciphertext>`, " +
        "which the phone decrypts with its passphrase. Pigeon checks their form (400 `invalid_encrypted_value`), stores them as given and reports each " +
        "recipient by its ciphertext; off until the workspace turns on `encrypted_sends` (403 `encrypted_sends_disabled`); only through a paired phone. " +
        "With dataMessage, `dataMessage.data` is encrypted the same way (its plaintext is the payload's base64) and the port is not",
    }),
  ),
});
export type SendMessageBody = Static<typeof SendMessageBody>;

export const SendQuery = t.Object({
  skipPhoneValidation: t.Optional(
    t.Boolean({
      description:
        "true skips SMSGate's stricter checks (valid, mobile), as Pigeon always does: a number needs only its country code. A number without it (short code, national form) answers 400 option_not_supported, as Pigeon prices and threads by E.164",
    }),
  ),
  deviceActiveWithin: t.Optional(t.Integer({ minimum: 0, description: "Without deviceId: use a phone seen within this many hours" })),
});

const StateName = t.UnionEnum([...STATES]);

export const MessageState = t.Object({
  id: t.String(),
  deviceId: t.String(),
  state: StateName,
  isHashed: t.Boolean(),
  isEncrypted: t.Boolean(),
  recipients: t.Array(t.Object({ phoneNumber: t.String(), state: StateName, error: t.Nullable(t.String()) })),
  states: t.Record(t.String(), t.String({ format: "date-time" }), { description: "When each state was first reached" }),
});

// Literal unions, not UnionEnum: Elysia fills an absent optional UnionEnum in a query with its first value.
const oneOf = (values: readonly string[]) => t.Union(values.map((v) => t.Literal(v)));

export const ListQuery = t.Object({
  from: t.Optional(t.String({ format: "date-time" })),
  to: t.Optional(t.String({ format: "date-time" })),
  state: t.Optional(oneOf(STATES)),
  deviceId: t.Optional(t.String()),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 50 })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0 })),
  sort: t.Optional(oneOf(["createdAt_desc", "createdAt_asc"])),
});

export const Device = t.Object({
  id: t.String(),
  name: t.String(),
  createdAt: t.String({ format: "date-time" }),
  updatedAt: t.String({ format: "date-time" }),
  lastSeen: t.String({ format: "date-time" }),
  deletedAt: t.Nullable(t.String({ format: "date-time" })),
});

export const TokenRequest = t.Object({
  ttl: nullable(t.Integer({ minimum: 0, maximum: TOKEN_TTL_MAX_SECONDS, description: "Seconds; 0 or absent: one hour" })),
  scopes: t.Array(t.UnionEnum([...SCOPES]), { minItems: 1 }),
});

export const TokenResponse = t.Object({
  id: t.String({ description: "The access token's id (jti), for DELETE /auth/token/{jti}" }),
  token_type: t.Literal("Bearer"),
  access_token: t.String(),
  refresh_token: t.String(),
  expires_at: t.String({ format: "date-time" }),
});

const Check = t.Object({
  status: t.UnionEnum(["pass", "warn", "fail"]),
  description: t.String(),
  observedValue: t.Number(),
  observedUnit: t.String(),
});
export const Health = t.Object({
  status: t.UnionEnum(["pass", "warn", "fail"]),
  version: t.String(),
  releaseId: t.Integer(),
  checks: t.Record(t.String(), Check),
});

export const InboxRefreshBody = t.Object({
  deviceId: t.String({ minLength: 1, description: "The phone (an id from GET /devices)" }),
  since: t.String({ format: "date-time" }),
  until: t.String({ format: "date-time" }),
  messageTypes: nullable(t.Array(t.String(), { description: "Accepted for compatibility; the phone re-posts its SMS" })),
  triggerWebhooks: nullable(t.Boolean({ description: "Accepted for compatibility; re-posted SMS reach webhooks once, as new ones do" })),
});

export const WebhookBody = t.Object({
  id: nullable(t.String({ maxLength: 36, description: "The webhook's id; generated when absent. An existing id is replaced." })),
  url: t.String({
    minLength: 1,
    maxLength: 2048,
    description: "Where to POST; must reach a public address (PIGEON_ALLOW_PRIVATE_WEBHOOKS aside)",
  }),
  event: t.String({
    description: `One of ${Object.keys(SMSGATE_WEBHOOK_EVENTS).join(", ")}; other SMSGate events answer 400 option_not_supported`,
  }),
  deviceId: nullable(t.String({ description: "Only this phone's events; all phones' when absent" })),
});

export const Webhook = t.Object({ id: t.String(), url: t.String(), event: t.String(), deviceId: t.Nullable(t.String()) });

const SettingValue = t.Union([t.String(), t.Number(), t.Boolean(), t.Null()]);
export const Settings = t.Record(t.String(), t.Record(t.String(), SettingValue), {
  description:
    "SMSGate's settings by section, as the app reads them: `messages.send_interval_min`/`send_interval_max` (0-3600 s), `limit_period` (Disabled, PerMinute, Per30Minutes, PerHour, PerDay), `limit_value` (0 or more; 0 is no limit), `sim_selection_mode` (OSDefault, RoundRobin, Random), `processing_order` (LIFO, FIFO), `log_lifetime_days` (1 or more); `webhooks.internet_required` (boolean), `retry_count` (1 or more); `ping.interval_seconds` and `logs.lifetime_days` (0 or more; 0 is off); `gateway.notification_channel` (SSE_ONLY only). Applied to every paired phone and served to it; null clears a key (the phone goes back to the app's default). `webhooks.signing_key` keys the SMSGate webhooks and is never returned. camelCase names work too. `encryption.passphrase` is pushed to every paired phone for encrypted messages, sealed and never returned (a read gives `encryption.passphrase_set`; null takes it back): once Pigeon holds it, encrypted messages are no longer end-to-end against this server. A bad value answers 400 validation_error naming the key; other settings answer 400 option_not_supported.",
});

export const INCOMING_TYPES = ["SMS", "DATA_SMS", "MMS", "MMS_DOWNLOADED"] as const;

export const InboxQuery = t.Object({
  type: t.Optional(oneOf(INCOMING_TYPES)),
  from: t.Optional(t.String({ format: "date-time" })),
  to: t.Optional(t.String({ format: "date-time" })),
  deviceId: t.Optional(t.String({ description: "Only what this phone received" })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, default: 50 })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0 })),
});

export const IncomingMessage = t.Object({
  id: t.String({ description: "The thread message's id" }),
  type: t.UnionEnum([...INCOMING_TYPES], {
    description: "MMS: only its headers so far; MMS_DOWNLOADED: its content arrived; DATA_SMS: a data SMS to the app's port 53739",
  }),
  sender: t.String({ description: "E.164 when the sender has a number" }),
  contentPreview: t.String({ description: "The text; an MMS's body, else its subject, else [MMS]; a data SMS's payload in base64" }),
  createdAt: t.String({ format: "date-time", description: "When the phone received it" }),
});
