import { t } from "elysia";
import { Envelope } from "../../http/envelope";

export const BULK_MAX = 100;

const Recipient = t.String({ description: "E.164 phone number, e.g. +14155552671", examples: ["+14155552671"] });
const Message = t.String({ description: "The text; at most the account's cap (1600 by default). Not needed with template_id.", examples: ["Your order is ready for pickup."] });
const TemplateRef = t.Union([t.String(), t.Number()], { description: "A template id (or its code, e.g. OTP); message is then built from it", examples: ["3"] });
const Variables = t.Union([t.Record(t.String(), t.Any()), t.Array(t.Any())], {
  description: "Template variables by name (case-sensitive); for chat-app templates also an array of the {{1}}..{{n}} values",
  examples: [{ name: "Ada", order_id: "A-1001" }],
});
const DeviceRef = t.Union([t.String(), t.Number()], { description: "Device to send through; default: the first active device that can carry it", examples: ["1"] });

/** The longest time to live a send may ask for: 30 days. */
export const TTL_MAX_SECONDS = 30 * 24 * 3600;

/** How long a message may wait to go out; every channel honours it (chat-app sends too). */
export const expiryFields = {
  ttl: t.Optional(
    t.Nullable(
      t.Integer({
        minimum: 1,
        maximum: TTL_MAX_SECONDS,
        description:
          `Seconds the message may wait to go out, counted from its due time (now, or schedule_time), 1 to ${TTL_MAX_SECONDS} (30 days). ` +
          "Not sent by then, it becomes `failed` with error_code `expired` (credits refunded). Not with valid_until.",
        examples: [300],
      }),
    ),
  ),
  valid_until: t.Optional(
    t.Nullable(
      t.String({
        description:
          "ISO 8601 instant with a zone (e.g. 2026-12-24T09:00:00Z) after which the message must not go out; in the future, and not before schedule_time. " +
          "Not sent by then, it becomes `failed` with error_code `expired`. Not with ttl.",
        examples: ["2026-12-24T09:00:00Z"],
      }),
    ),
  ),
};

/** What the paired phone's app offers per message; a cloud number refuses sim_number and ignores the other two. */
export const phoneOptionFields = {
  sim_number: t.Optional(
    t.Nullable(
      t.Integer({
        minimum: 1,
        maximum: 3,
        description:
          "Paired phone only: the SIM to send from, 1 to 3 (see the device's `sim_cards`); omit for the phone's own choice. " +
          "A phone without that SIM fails the message (\"Can't send message: SIM 2 not found\"). On a cloud number: 400 `option_not_supported`.",
        examples: [1],
      }),
    ),
  ),
  priority: t.Optional(
    t.Nullable(
      t.Integer({
        minimum: -128,
        maximum: 127,
        description:
          "The companion app's priority, -128 to 127, default 0. Higher goes first; 100 and above (one-time codes) skips the phone's per-minute limit " +
          "and send delays, and Pigeon's per-minute budget for the phone. Ignored by cloud numbers.",
        examples: [100],
      }),
    ),
  ),
  with_delivery_report: t.Optional(
    t.Nullable(
      t.Boolean({
        description:
          "Ask the carrier for a delivery report (default true). With false a paired phone's message ends at `sent`, never `delivered`. Ignored by cloud numbers.",
      }),
    ),
  ),
};

// Every SMS send route takes this whole set and honours it; a field outside it is a 400 naming it
// (a misspelt schedule_time must not quietly become "send now").
const sendFields = {
  recipient_contact: Recipient,
  message: t.Optional(t.Nullable(Message)),
  template_id: t.Optional(t.Nullable(TemplateRef)),
  variables: t.Optional(t.Nullable(Variables)),
  recipient_name: t.Optional(t.Nullable(t.String({ maxLength: 200, description: "Used for logging" }))),
  schedule_time: t.Optional(
    t.Nullable(t.String({ description: "YYYY-MM-DD HH:MM:SS, 24-hour, in `timezone`; omit to send now", examples: ["2026-12-24 09:00:00"] })),
  ),
  timezone: t.Optional(
    t.Nullable(t.String({ description: "IANA zone name for schedule_time (links such as CET or US/Eastern too); default UTC", examples: ["Europe/Berlin"] })),
  ),
  device_id: t.Optional(t.Nullable(DeviceRef)),
  ...phoneOptionFields,
  ...expiryFields,
};

export const SendSmsBody = t.Object(sendFields, {
  additionalProperties: false,
  examples: [
    {
      recipient_contact: "+14155552671",
      template_id: "OTP",
      variables: { code: "123456", minutes: 5 },
      recipient_name: "Ada",
      schedule_time: "2026-12-24 09:00:00",
      timezone: "Europe/Berlin",
    },
  ],
});

export const SimpleSendBody = t.Object(sendFields, {
  additionalProperties: false,
  examples: [{ recipient_contact: "+14155552671", message: "Your order is ready for pickup." }],
});

export const BulkSendBody = t.Object(
  {
    // Items are checked one by one in the route (a bad item fails alone), so the schema only says
    // what they are; an item that is not an object fails the whole request there.
    messages: t.Array(t.Any({ description: "A send body (an object): the fields of POST /notification/sms/api/send" }), {
      minItems: 1,
      maxItems: BULK_MAX,
      description: `1 to ${BULK_MAX} send bodies (the fields of /notification/sms/api/send); each is checked on its own`,
    }),
  },
  {
    additionalProperties: false,
    examples: [
      {
        messages: [
          { recipient_contact: "+14155552671", message: "Your order is ready." },
          { recipient_contact: "+447911123456", template_id: "OTP", variables: { code: "4242", minutes: 10 } },
        ],
      },
    ],
  },
);

const { recipient_contact: _recipient, ...overviewFields } = sendFields;

export const OverviewSendBody = t.Object(
  { to: Recipient, ...overviewFields },
  { additionalProperties: false, examples: [{ to: "+14155552671", message: "Your order is ready for pickup." }] },
);

/** When the message goes out; the same field on every send route's reply. */
export const ScheduledFor = t.Nullable(
  t.String({
    format: "date-time",
    description: "When the message is due to go out (UTC, ISO 8601): the schedule_time instant, or null when it goes out now",
    examples: ["2026-12-24T08:00:00.000Z"],
  }),
);

export const SendResult = t.Object({
  notification_id: t.Integer(),
  template_id: t.Nullable(t.Integer()),
  template_vars: t.Nullable(t.Record(t.String(), t.String())),
  message: t.String({ description: "The final text, with variables substituted" }),
  scheduled_for: ScheduledFor,
});

export const SendResponse = Envelope(SendResult, {
  message: "Notification scheduled successfully",
  data: { notification_id: 42, template_id: null, template_vars: null, message: "Your order is ready for pickup.", scheduled_for: null },
});

export const BulkItem = t.Object({
  index: t.Integer({ description: "Position in `messages`, from 0" }),
  ok: t.Boolean(),
  notification_id: t.Optional(t.Integer()),
  template_id: t.Optional(t.Nullable(t.Integer())),
  template_vars: t.Optional(t.Nullable(t.Record(t.String(), t.String()))),
  message: t.Optional(t.String()),
  scheduled_for: t.Optional(ScheduledFor),
  error: t.Optional(
    t.Object({ status_id: t.Integer(), error_code: t.Union([t.String(), t.Number()]), message: t.String() }, { additionalProperties: true }),
  ),
});

export const BulkResponse = Envelope(
  t.Object({ total: t.Integer(), accepted: t.Integer(), failed: t.Integer(), results: t.Array(BulkItem) }),
);

export const OverviewSendResponse = t.Object({
  status_id: t.Integer(),
  message: t.String(),
  data: t.Object({ success: t.Boolean(), messageId: t.String(), scheduled_for: ScheduledFor }),
  success: t.Boolean(),
  messageId: t.String({ description: "The notification id, as a string" }),
});
