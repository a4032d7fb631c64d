import { t } from "elysia";
import { Envelope, Pagination } from "../../http/envelope";
import { DELIVERY_TYPES, DEVICE_KINDS } from "../../core/kinds";
import { choiceOf, fieldError, IdParam, literalUnion, pageQuery } from "../../http/validation";

const Status = t.Union([t.Literal("pending"), t.Literal("sent"), t.Literal("delivered"), t.Literal("failed"), t.Literal("cancelled")], {
  description: "pending → sent → delivered, or failed; cancelled is our addition for a cancelled pending notification",
});

export const Notification = t.Object({
  notification_id: t.Integer(),
  status: Status,
  delivery_type: literalUnion(DELIVERY_TYPES),
  route: literalUnion(DEVICE_KINDS, { description: "The kind of device carrying it: sms (paired phone), cloud, chatapp" }),
  routes: t.Nullable(
    t.Array(t.String(), {
      description:
        "The failover order it follows (phone, cloud, chatapp), or null; a `failover` log entry marks each move to the next route",
    }),
  ),
  template_id: t.Nullable(t.Integer()),
  template_vars: t.Nullable(t.Record(t.String(), t.String())),
  message: t.String(),
  recipient: t.String(),
  recipient_name: t.Nullable(t.String()),
  device_id: t.Nullable(t.Integer()),
  schedule_time: t.Nullable(t.String({ format: "date-time", description: "When it is due, UTC; null for immediate sends" })),
  timezone: t.Nullable(t.String()),
  attempts: t.Integer({ description: "Hand-offs to the channel so far" }),
  segments: t.Integer(),
  cost: t.Integer({ description: "Credits charged (cloud numbers only; refunded on failure or cancel)" }),
  provider_message_id: t.Nullable(t.String()),
  error_code: t.Nullable(
    t.String({
      description:
        "Why it failed, e.g. `expired` (not sent before its ttl/valid_until), `device_offline` (its phone stayed offline past its time to live), " +
        "`recipient_opted_out` (the recipient opted out before it went), " +
        "`device_deleted`, a phone's RESULT_ERROR_* code, or the chat-app platform's numeric code",
    }),
  ),
  error_reason: t.Nullable(t.String()),
  created_at: t.String({ format: "date-time" }),
  updated_at: t.String({ format: "date-time" }),
  sent_at: t.Nullable(t.String({ format: "date-time" })),
  delivered_at: t.Nullable(t.String({ format: "date-time" })),
  failed_at: t.Nullable(t.String({ format: "date-time" })),
  cancelled_at: t.Nullable(t.String({ format: "date-time" })),
  sim_number: t.Nullable(t.Integer({ description: "The paired phone's SIM asked for (1-3); null: the phone's choice" })),
  priority: t.Integer({
    description: "The companion app's priority, -128..127 (0 by default; 100 and above skips the phone's limits and delays)",
  }),
  with_delivery_report: t.Boolean({ description: "Whether a delivery report was asked for" }),
  valid_until: t.Nullable(
    t.String({ format: "date-time", description: "After this instant it is not sent (from ttl or valid_until); null: no limit" }),
  ),
});

export const LogEntry = t.Object({
  at: t.String({ format: "date-time" }),
  event: t.String({ description: "accepted, scheduled, attempt, retry, throttled, sent, delivered, failed, cancelled, …" }),
  status: t.Nullable(t.String()),
  error_code: t.Nullable(t.String()),
  detail: t.Nullable(t.String({ description: "What happened, with the carrier's or platform's reason where there is one" })),
});

export const NotificationDetail = t.Object({ ...Notification.properties, logs: t.Array(LogEntry) });

export const NotificationIdParams = t.Object({ notification_id: IdParam("notification_id") });

export const NotificationListQuery = t.Object({
  ...pageQuery(20, 100),
  status: t.Optional(
    t.Union(
      [t.Literal("pending"), t.Literal("sent"), t.Literal("delivered"), t.Literal("failed"), t.Literal("cancelled")],
      fieldError("status", "must be one of pending, sent, delivered, failed, cancelled"),
    ),
  ),
  delivery_type: t.Optional(choiceOf(DELIVERY_TYPES, "delivery_type")),
  recipient: t.Optional(t.String({ description: "E.164 recipient" })),
  from: t.Optional(t.String({ description: "Created at or after (ISO 8601 date or date-time)" })),
  to: t.Optional(t.String({ description: "Created at or before (ISO 8601; a bare date includes the whole day)" })),
});

export const CancelBody = t.Object({ notification_id: t.Integer({ minimum: 1 }) });

export const NotificationResponse = Envelope(Notification);
export const NotificationDetailResponse = Envelope(NotificationDetail);
export const NotificationListResponse = Envelope(t.Object({ notifications: t.Array(Notification), pagination: Pagination }));

export const MessageStatusResponse = Envelope(
  t.Object({
    messageId: t.String(),
    status: Status,
    to: t.String(),
    message: t.String(),
    channel: t.String(),
    error_code: t.Nullable(t.String()),
    error_reason: t.Nullable(t.String()),
    created_at: t.String({ format: "date-time" }),
    updated_at: t.String({ format: "date-time" }),
  }),
);
