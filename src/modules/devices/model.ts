import type { device } from "./schema";
import { t } from "elysia";
import { DEVICE_KINDS, DEVICE_KINDS_DESCRIPTION, type ChannelConfig } from "../../core/kinds";
import { Envelope, Pagination } from "../../http/envelope";
import { fieldError, IdParam, literalUnion, pageQuery } from "../../http/validation";

/**
 * The highest send_limit_per_minute: 60,000 (1,000 a second), the chat-app platform's highest
 * throughput tier for a business number.
 */
export const SEND_LIMIT_MAX = 60_000;

export const BATCH_REGISTER_MAX = 10;
export const BATCH_DELETE_MAX = 50;
export const BATCH_STATUS_MAX = 100;

const NotificationChannel = t.Nullable(t.Union([t.Literal("sse"), t.Literal("polling")]), {
  description:
    "Paired phones: how the phone learns of new messages. `sse`: it holds Pigeon's event stream and takes messages at once. `polling`: it registered a push token and opens no stream (the app's default AUTO notification channel with Play Services), so it only polls every 15 minutes. Null for other kinds.",
});
const ChannelHint = t.Nullable(
  t.String({ description: "For a `polling` phone: what is wrong and how to fix it in the app (choose SSE Only); null otherwise" }),
);

const Kind = literalUnion(DEVICE_KINDS, { description: DEVICE_KINDS_DESCRIPTION });
const Status = t.Union([t.Literal("active"), t.Literal("inactive")]);

export const Device = t.Object({
  device_id: t.Integer(),
  name: t.String(),
  status: Status,
  kind: Kind,
  phone_number: t.Nullable(t.String()),
  online: t.Boolean({
    description:
      "Heard from within the last 5 minutes (PIGEON_OFFLINE_AFTER); a paired phone that only polls (`notification_channel: polling`) within its 15-minute poll interval and 5 minutes more",
  }),
  last_sync: t.Nullable(t.String({ format: "date-time" })),
  blocked: t.Boolean(),
  blocked_code: t.Nullable(t.String()),
  blocked_reason: t.Nullable(t.String()),
  send_limit_per_minute: t.Integer(),
  send_interval_min: t.Integer({ description: "Paired phones: random pause between SMS, from…" }),
  send_interval_max: t.Integer({ description: "…to, seconds" }),
  encryption_passphrase_set: t.Boolean({
    description:
      "Paired phones: whether Pigeon pushes an encryption passphrase to the phone (set with POST /device/update); the passphrase itself is never shown",
  }),
  notification_channel: NotificationChannel,
  channel_hint: ChannelHint,
  sim_cards: t.Array(
    t.Object({
      sim_number: t.Integer({ description: "What a send's sim_number names (1-3)" }),
      slot_index: t.Nullable(t.Integer()),
      phone_number: t.Nullable(t.String({ description: "Redacted by the app: all but the last 4 characters masked" })),
      carrier_name: t.Nullable(t.String()),
      iccid: t.Nullable(t.String()),
    }),
    {
      description:
        "Paired phones: the SIM cards the app reported at pairing and on each start (empty for other kinds, or before the app reports them)",
    },
  ),
  created_at: t.String({ format: "date-time" }),
  updated_at: t.String({ format: "date-time" }),
});

export const DeviceIdParams = t.Object({ device_id: IdParam("device_id") });

export const DeviceListQuery = t.Object({
  ...pageQuery(20, 100),
  status: t.Optional(t.Union([t.Literal("active"), t.Literal("inactive")], fieldError("status", 'must be "active" or "inactive"'))),
});

export const DeviceListResponse = Envelope(t.Object({ devices: t.Array(Device), pagination: Pagination }));
export const DeviceResponse = Envelope(Device);

export const ExportQuery = t.Object({
  format: t.Optional(
    t.Union([t.Literal("csv"), t.Literal("json")], { default: "json", ...fieldError("format", 'must be "csv" or "json"') }),
  ),
  include_inactive: t.Optional(t.Boolean({ default: false, ...fieldError("include_inactive", "must be true or false") })),
});

export const DeviceExportResponse = Envelope(t.Object({ devices: t.Array(Device), count: t.Integer() }));

export const DeviceHealthResponse = Envelope(
  t.Object({
    device_id: t.Integer(),
    health_score: t.Integer({ minimum: 0, maximum: 100 }),
    last_sync: t.Nullable(t.String({ format: "date-time" })),
    online: t.Boolean(),
    failure_rate: t.Number({ description: "Failed share of finished notifications in the last 7 days" }),
    notification_channel: NotificationChannel,
    channel_hint: ChannelHint,
    reported: t.Nullable(
      t.Object(
        {
          status: t.Nullable(t.String({ description: "The app's overall verdict: pass, warn or fail" })),
          battery_level: t.Nullable(t.Integer({ minimum: 0, maximum: 100, description: "Percent" })),
          charging: t.Nullable(t.Boolean()),
          plugged: t.Nullable(t.Boolean({ description: "On AC or USB power (a full battery on a charger is plugged, not charging)" })),
          connected: t.Nullable(t.Boolean({ description: "The phone has an internet connection" })),
          cellular: t.Nullable(t.String({ description: "Cellular data network: none (e.g. on Wi-Fi), unknown, 2g, 3g, 4g or 5g" })),
          failed_messages: t.Nullable(t.Integer({ description: "Messages that failed on the phone in the last hour" })),
          failed_status: t.Nullable(t.String({ description: "The app's check of those: pass, warn (some failed) or fail (all failed)" })),
          app_version: t.Nullable(t.String()),
          unhealthy: t.Array(t.String(), { description: "While unhealthy: low_battery, no_connection; empty otherwise" }),
          reported_at: t.String({ format: "date-time" }),
        },
        { description: "Paired phones: the health the app last reported (its ping); null until it reports" },
      ),
    ),
  }),
);

export const DeviceStatsResponse = Envelope(
  t.Object({ device_id: t.Integer(), sent: t.Integer(), failed: t.Integer(), pending: t.Integer() }),
);

export const DeviceUsageResponse = Envelope(
  t.Object({
    device_id: t.Integer(),
    period_start: t.String({ format: "date-time" }),
    used: t.Integer({ description: "SMS this device carried this calendar month (UTC)" }),
    limit: t.Integer({ description: "The plan's monthly SMS allowance; -1 when unlimited" }),
    remaining: t.Integer({ description: "What the account may still send this month; -1 when unlimited" }),
    unlimited: t.Boolean(),
  }),
);

export const DeviceRateLimitResponse = Envelope(
  t.Object({
    device_id: t.Integer(),
    limit: t.Integer({ description: "Messages this device may be handed per window" }),
    window_seconds: t.Integer({ description: "60 (per minute); 1 for chat-app numbers, paced per second" }),
    requests_remaining: t.Integer(),
    reset_at: t.String({ format: "date-time" }),
  }),
);

/** The register body: the common fields, and each channel's settings under its own key. */
export function batchRegisterBody(configs: readonly ChannelConfig[]) {
  const RegisterDevice = t.Object({
    name: t.String({ minLength: 1, maxLength: 128 }),
    kind: t.Optional(Kind),
    phone_number: t.Optional(t.String({ description: "E.164 number of the device, if known" })),
    send_limit_per_minute: t.Optional(t.Integer({ minimum: 1, maximum: SEND_LIMIT_MAX })),
    ...Object.fromEntries(configs.map((c) => [c.key, t.Optional(c.schema)])),
  });
  return t.Object(
    {
      devices: t.Array(RegisterDevice, {
        minItems: 1,
        maxItems: BATCH_REGISTER_MAX,
        description: `1 to ${BATCH_REGISTER_MAX} devices`,
      }),
    },
    { examples: [{ devices: [{ name: "Front desk phone" }, ...configs.map((c) => c.example)] }] },
  );
}

export const RegisteredDevice = t.Object({
  ...Device.properties,
  device_token: t.Nullable(t.String({ description: "Shown once, for sms devices: the Bearer token a companion app authenticates with" })),
  external_id: t.String({ description: "The device id in the companion-app protocol" }),
});

export const BatchRegisterResponse = Envelope(t.Object({ devices: t.Array(RegisteredDevice) }));

const DeviceIds = (max: number) =>
  t.Array(t.Integer({ minimum: 1 }), { minItems: 1, maxItems: max, description: `1 to ${max} device ids` });

export const BatchDeleteBody = t.Object({ device_ids: DeviceIds(BATCH_DELETE_MAX) });
export const BatchDeleteResponse = Envelope(t.Object({ deleted: t.Array(t.Integer()), count: t.Integer() }));

export const UpdateDeviceBody = t.Object({
  device_id: t.Integer({ minimum: 1 }),
  name: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
  send_limit_per_minute: t.Optional(
    t.Integer({ minimum: 1, maximum: SEND_LIMIT_MAX, description: "Messages the device is handed per minute" }),
  ),
  send_interval_min: t.Optional(
    t.Integer({ minimum: 0, maximum: 3600, description: "Paired phones: shortest pause between two SMS, seconds" }),
  ),
  send_interval_max: t.Optional(
    t.Integer({ minimum: 0, maximum: 3600, description: "Paired phones: longest pause between two SMS, seconds" }),
  ),
  encryption_passphrase: t.Optional(
    t.Nullable(
      t.String({
        minLength: 1,
        maxLength: 256,
        description:
          "Paired phones: the passphrase the app decrypts encrypted messages with, pushed to it in its settings (`encryption.passphrase`); null takes it back " +
          "(the phone then has none). Sealed at rest and never returned (`encryption_passphrase_set` says whether one is set). " +
          "Once Pigeon holds it, the encryption is no longer end-to-end against this server: leave it unset and type it into the app to keep it so.",
      }),
    ),
  ),
});

export const BatchStatusBody = t.Object({ device_ids: DeviceIds(BATCH_STATUS_MAX), status: Status });
export const BatchStatusResponse = Envelope(t.Object({ devices: t.Array(Device), count: t.Integer() }));

/** A device as the domain sees it: the schema's record (camelCase, JSON parsed, real booleans). */
export type DeviceRow = typeof device.$inferSelect;
