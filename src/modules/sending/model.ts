import { t } from "elysia";
import { Envelope } from "../../http/envelope";
import { DATA_PORT_MAX, DATA_PORT_MIN, DATA_SMS_MAX_OCTETS } from "../../lib/data-sms";

export const BULK_MAX = 100;

const Recipient = t.String({ description: "E.164 phone number, e.g. +14155552671", examples: ["+14155552671"] });
const Message = t.String({
  description: "The text; at most the account's cap (1600 by default). Not needed with template_id.",
  examples: ["Your order is ready for pickup."],
});
const TemplateRef = t.Union([t.String(), t.Number()], {
  description: "A template id (or its code, e.g. OTP); message is then built from it",
  examples: ["3"],
});
const Variables = t.Union([t.Record(t.String(), t.Any()), t.Array(t.Any())], {
  description: "Template variables by name (case-sensitive); for chat-app templates also an array of the {{1}}..{{n}} values",
  examples: [{ name: "Ada", order_id: "A-1001" }],
});
const DeviceRef = t.Union([t.String(), t.Number()], {
  description: "Device to send through; default: the first active device that can carry it",
  examples: ["1"],
});

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
          "When the phone has reported its SIMs, one it lacks is 400 `invalid_sim_number` naming those it has (`sim_numbers`); a phone that reported none " +
          '(an app before 1.65) takes any, and fails a message for a SIM it lacks ("Can\'t send message: SIM 2 not found"). On a cloud number: 400 `option_not_supported`.',
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

/** Failover and quiet hours: every send route takes these (SMS and chat-app alike). */
export const safeSendFields = {
  routes: t.Optional(
    t.Nullable(
      t.Array(t.String({ examples: ["phone"] }), {
        minItems: 1,
        maxItems: 3,
        description:
          'Failover order: routes from phone (or sms), cloud, chatapp, each once, e.g. ["phone", "cloud"]. The first route that can take the message now carries it ' +
          "(a route with no active device, or a phone offline for an immediate send, is skipped at once). If that route later fails in a way another could avoid " +
          '(the phone offline past PIGEON_FAILOVER_GRACE, 2 minutes by default, a carrier rejection, "not a chat-app user", a blocked number), the same notification moves ' +
          "to the next route: its `route` says which one carries it and its log lists every attempt. Credits are taken only for the route that sends. " +
          "Default: the workspace's `default_routes` (POST /api/workspace/settings), else none (one route, as without failover).",
        examples: [["phone", "cloud"]],
      }),
    ),
  ),
  transactional: t.Optional(
    t.Nullable(
      t.Boolean({
        description:
          "A message the recipient is waiting for (a code, a receipt): quiet hours do not hold it. priority 100 or more is never held either.",
      }),
    ),
  ),
  reason: t.Optional(
    t.Nullable(
      t.String({
        maxLength: 500,
        description:
          "Why this message is sent (at most 500 characters), in the sender's words: stored as `approval_reason` and shown to whoever " +
          "approves it when the key needs approval (see docs/approval.md)",
        examples: ["The customer asked to be told when the part arrives"],
      }),
    ),
  ),
};

/** A data SMS in place of the text: the payload's limit is one SMS PDU's (src/lib/data-sms.ts). */
export const DataMessageField = t.Object(
  {
    data: t.String({
      description: `The payload, base64 (standard alphabet, padding optional): 1 to ${DATA_SMS_MAX_OCTETS} bytes once decoded, what one SMS carries beside its port header. Bad base64 is 400 \`invalid_data_encoding\`, none \`data_message_empty\`, more \`data_message_too_long\`. With \`encrypted: true\`: the encrypted value of that base64`,
      examples: ["SGVsbG8="],
    }),
    port: t.Integer({
      description: `The application port it is addressed to, ${DATA_PORT_MIN} to ${DATA_PORT_MAX}; outside that 400 \`invalid_port\``,
      examples: [53739],
    }),
  },
  {
    additionalProperties: false,
    description:
      "A data SMS (binary, to an application port) instead of text, paired phones only: one SMS, counted as one segment. " +
      "Not with message or template_id (400 `content_conflict`); a cloud number, a chat-app route or a failover order naming one is 400 `data_message_unsupported`. " +
      "The workspace's default failover order does not apply to it. " +
      "With `encrypted: true`, `data` is instead one value in the app's encrypted format whose plaintext is the payload's base64, " +
      "at most 192 bytes of ciphertext (else 400 `invalid_encrypted_value`); the port stays plain. The phone decrypts and decodes it, " +
      "and fails the message if the payload is not base64 or not 1 to 133 bytes, which the server cannot see.",
  },
);

// Every SMS send route takes this whole set and honours it; a field outside it is a 400 naming it
// (a misspelt schedule_time must not quietly become "send now").
const sendFields = {
  recipient_contact: Recipient,
  message: t.Optional(t.Nullable(Message)),
  data_message: t.Optional(t.Nullable(DataMessageField)),
  template_id: t.Optional(t.Nullable(TemplateRef)),
  variables: t.Optional(t.Nullable(Variables)),
  recipient_name: t.Optional(t.Nullable(t.String({ maxLength: 200, description: "Used for logging" }))),
  schedule_time: t.Optional(
    t.Nullable(
      t.String({ description: "YYYY-MM-DD HH:MM:SS, 24-hour, in `timezone`; omit to send now", examples: ["2026-12-24 09:00:00"] }),
    ),
  ),
  timezone: t.Optional(
    t.Nullable(
      t.String({
        description: "IANA zone name for schedule_time (links such as CET or US/Eastern too); default UTC",
        examples: ["Europe/Berlin"],
      }),
    ),
  ),
  device_id: t.Optional(t.Nullable(DeviceRef)),
  pool_id: t.Optional(
    t.Nullable(
      t.Integer({
        description:
          "The sender pool (POST /api/pool/create) whose member sends it: the one the recipient keeps (sticky), the next in turn or the least loaded. " +
          "Without pool_id and device_id, the workspace's default pool, if it has one. Not with device_id or sim_number, nor with a failover order (routes).",
      }),
    ),
  ),
  ...phoneOptionFields,
  ...expiryFields,
  ...safeSendFields,
  encrypted: t.Optional(
    t.Nullable(
      t.Boolean({
        description:
          "End-to-end encrypted: `recipient_contact` and `message` (or `data_message.data`, whose plaintext is the payload's base64) are each one value in the companion app's format, " +
          "`$aes-256-cbc/pbkdf2-sha1$i=<iterations>$<base64 16-byte salt>$<base64 ciphertext>`, which only the paired phone decrypts with its passphrase. " +
          "Pigeon checks their form (400 `invalid_encrypted_value`), stores and shows them as given, and sends them only through a paired phone " +
          "(400 `encrypted_needs_phone` for a cloud number, a chat-app device, a failover order naming another route or a pool that chose one); " +
          "no template (400 `encrypted_option_unsupported`), no opt-out check, no E.164, no thread, no segment count (counted as 1, no credits). " +
          "Off until the workspace turns on `encrypted_sends` (403 `encrypted_sends_disabled`). See docs/sending.md.",
      }),
    ),
  ),
  chatapp_template_id: t.Optional(
    t.Nullable(
      t.Union([t.String(), t.Number()], {
        description:
          "With a chatapp route in `routes`: the approved chat-app template (id or code) sent when the user's 24-hour window is closed, filled from `variables`. " +
          "Checked when the send is accepted; without it a closed window makes the chatapp route unusable.",
        examples: ["order_ready"],
      }),
    ),
  ),
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

/** What a send reply adds about its route, quiet hours and failover. */
export const routeResultFields = {
  scheduled_at: t.Nullable(
    t.String({ format: "date-time", description: "Only when quiet hours hold it: the instant they end and it goes out (UTC, ISO 8601)" }),
  ),
  route: t.String({ description: "Only on a failover send: the route carrying it now: sms (paired phone), cloud or chatapp" }),
  device_id: t.Integer({ description: "The device carrying it now" }),
  quiet_hours: t.Nullable(
    t.Object(
      {
        until: t.String({ format: "date-time" }),
        timezone: t.String({ description: "The recipient's zone the quiet hours were read in" }),
      },
      { description: "Set when the recipient's quiet hours hold the message: it goes out at `until` (also `scheduled_at`)" },
    ),
  ),
  skipped_routes: t.Array(t.Object({ route: t.String(), error_code: t.Union([t.String(), t.Number()]), message: t.String() }), {
    description: "Routes of the failover order that could not take it at all, in order, with why",
  }),
};

/** Present only on a send by a key that needs approval (docs/approval.md): stored, not sent until a person approves it. */
const AwaitingApproval = t.Literal("awaiting_approval", {
  description: "Only when the key needs approval: the message waits for a person's decision and has not been sent",
});

export const SendResult = t.Object({
  notification_id: t.Integer(),
  template_id: t.Nullable(t.Integer()),
  template_vars: t.Nullable(t.Record(t.String(), t.String())),
  message: t.String({ description: "The final text, with variables substituted (empty for a data SMS)" }),
  data_message: t.Optional(
    t.Object({ data: t.String(), port: t.Integer() }, { description: "Only for a data SMS: its payload (base64) and port" }),
  ),
  scheduled_for: ScheduledFor,
  status: t.Optional(AwaitingApproval),
  scheduled_at: t.Optional(routeResultFields.scheduled_at),
  quiet_hours: t.Optional(routeResultFields.quiet_hours),
  route: t.Optional(routeResultFields.route),
  device_id: t.Optional(routeResultFields.device_id),
  skipped_routes: t.Optional(routeResultFields.skipped_routes),
});

export const SendResponse = Envelope(SendResult, {
  message: "Notification scheduled successfully",
  data: {
    notification_id: 42,
    template_id: null,
    template_vars: null,
    message: "Your order is ready for pickup.",
    scheduled_for: null,
  },
});

export const BulkItem = t.Object({
  index: t.Integer({ description: "Position in `messages`, from 0" }),
  ok: t.Boolean(),
  notification_id: t.Optional(t.Integer()),
  template_id: t.Optional(t.Nullable(t.Integer())),
  template_vars: t.Optional(t.Nullable(t.Record(t.String(), t.String()))),
  message: t.Optional(t.String()),
  data_message: t.Optional(t.Object({ data: t.String(), port: t.Integer() })),
  scheduled_for: t.Optional(ScheduledFor),
  status: t.Optional(AwaitingApproval),
  scheduled_at: t.Optional(ScheduledFor),
  route: t.Optional(routeResultFields.route),
  device_id: t.Optional(routeResultFields.device_id),
  quiet_hours: t.Optional(routeResultFields.quiet_hours),
  skipped_routes: t.Optional(routeResultFields.skipped_routes),
  error: t.Optional(
    t.Object(
      { status_id: t.Integer(), error_code: t.Union([t.String(), t.Number()]), message: t.String() },
      { additionalProperties: true },
    ),
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

export const PreviewResponse = Envelope(
  t.Object({
    would: t.Union([t.Literal("send"), t.Literal("schedule"), t.Literal("hold"), t.Literal("refuse")], {
      description:
        "send: it would go now; schedule: at schedule_time; hold: quiet hours hold it until `scheduled_at`; refuse: a send would answer with `error`",
    }),
    message: t.Nullable(t.String({ description: "The final text, variables substituted (null when it could not be built)" })),
    characters: t.Nullable(t.Integer()),
    encoding: t.Nullable(t.Union([t.Literal("GSM-7"), t.Literal("UCS-2")])),
    ucs2_characters: t.Array(t.String(), {
      description: "The characters outside GSM-7 that force UCS-2 (70 characters a segment instead of 160)",
    }),
    segments: t.Nullable(t.Integer()),
    route: t.Nullable(t.String({ description: "The route it would take: sms (paired phone), cloud or chatapp" })),
    device_id: t.Nullable(t.Integer()),
    cost: t.Nullable(t.Integer({ description: "Credits it would take (cloud numbers: one a segment)" })),
    balance: t.Integer({ description: "The workspace's credit balance now" }),
    scheduled_at: ScheduledFor,
    quiet_hours: routeResultFields.quiet_hours,
    opted_out: t.Nullable(
      t.Object(
        { opted_out_at: t.Nullable(t.String({ format: "date-time" })), source: t.String(), reason: t.Nullable(t.String()) },
        { description: "Set when the recipient opted out: a send is refused with 403 recipient_opted_out" },
      ),
    ),
    skipped_routes: routeResultFields.skipped_routes,
    error: t.Nullable(
      t.Object(
        { status_id: t.Integer(), error_code: t.Union([t.String(), t.Number()]), message: t.String() },
        { additionalProperties: true, description: "What a send of this body would answer instead of accepting it" },
      ),
    ),
    encrypted: t.Boolean({
      description:
        "An encrypted send (`encrypted: true`): characters, encoding and segments are null, as the ciphertext says nothing of the text",
    }),
  }),
);
