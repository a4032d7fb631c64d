import { t } from "elysia";
import type { DeliveryType, DeviceKind } from "../../core/kinds";
import type { DataMessage } from "../../lib/data-sms";
import type { NotificationStatus } from "./rows";
import { Envelope, Pagination } from "../../http/envelope";
import { DELIVERY_TYPES, DEVICE_KINDS } from "../../core/kinds";
import { choiceOf, fieldError, IdParam, literalUnion, pageQuery } from "../../http/validation";

const Status = t.Union(
  [
    t.Literal("awaiting_approval"),
    t.Literal("pending"),
    t.Literal("cancelling"),
    t.Literal("sent"),
    t.Literal("delivered"),
    t.Literal("failed"),
    t.Literal("cancelled"),
  ],
  {
    description:
      "pending → sent → delivered, or failed; cancelled is our addition for a cancelled pending notification, and cancelling for a " +
      "pending one whose paired phone was asked to drop it and has not answered yet (it ends cancelled, or as the phone reports); " +
      "awaiting_approval for a send by a key that needs approval: approved it becomes pending, rejected or expired it fails " +
      "(`approval_rejected`, `approval_expired`), and it may be cancelled",
  },
);

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
  message: t.String({ description: "The text; empty for a data SMS" }),
  data_message: t.Optional(
    t.Object(
      { data: t.String({ description: "The payload, base64" }), port: t.Integer() },
      { description: "Only on a data SMS: its payload and the port it is addressed to (message is then empty)" },
    ),
  ),
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
  encrypted: t.Boolean({
    description:
      "End-to-end encrypted (sent with `encrypted: true`): `recipient` and `message` are the ciphertext as given, which only the paired phone decrypts",
  }),
  api_key_id: t.Nullable(t.Integer({ description: "The API key that sent it; null for a send from the dashboard or by Pigeon itself" })),
  agent_session: t.Nullable(
    t.String({ description: "The agent session named by the send's X-Pigeon-Agent-Session header (an MCP client's), or null" }),
  ),
  approval_reason: t.Nullable(t.String({ description: "The sender's stated `reason`, shown to whoever approves it" })),
  approved_at: t.Nullable(t.String({ format: "date-time", description: "When it was approved (a send by a key that needs approval)" })),
  rejected_at: t.Nullable(t.String({ format: "date-time", description: "When it was rejected, or expired unapproved" })),
  decided_by: t.Nullable(t.String({ description: 'Who approved or rejected it: "key <id> (<name>)", "user <email>", or "expiry"' })),
});

export const LogEntry = t.Object({
  at: t.String({ format: "date-time" }),
  event: t.String({ description: "accepted, scheduled, attempt, retry, throttled, sent, delivered, failed, cancelled, …" }),
  status: t.Nullable(t.String()),
  error_code: t.Nullable(t.String()),
  detail: t.Nullable(t.String({ description: "What happened, with the carrier's or platform's reason where there is one" })),
});

export const NotificationDetail = t.Object({
  ...Notification.properties,
  key_name: t.Nullable(t.String({ description: "The name of the API key that sent it, or null" })),
  logs: t.Array(LogEntry),
});

export const NotificationIdParams = t.Object({ notification_id: IdParam("notification_id") });

export const NotificationListQuery = t.Object({
  ...pageQuery(20, 100),
  status: t.Optional(
    t.Union(
      [
        t.Literal("awaiting_approval"),
        t.Literal("pending"),
        t.Literal("sent"),
        t.Literal("delivered"),
        t.Literal("failed"),
        t.Literal("cancelled"),
      ],
      fieldError("status", "must be one of awaiting_approval, pending, sent, delivered, failed, cancelled"),
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

// The records other modules and channels name (the notification itself and its row mapping: rows.ts).
export { notificationRows, type MoveTo, type NotificationRecord, type NotificationStatus, type Stage } from "./rows";

export interface NewNotification {
  workspaceId: number;
  apiKeyId: number | null;
  deliveryType: DeliveryType;
  route: DeviceKind;
  deviceId: number;
  recipient: string;
  recipientName: string | null;
  templateId: number | null;
  templateVars: Record<string, string> | null;
  message: string;
  scheduleAt: number | null;
  timezone: string | null;
  nextAttemptAt: number;
  segments: number;
  cost: number;
  /** The id the channel knows it by, when we choose it (a paired phone's message id). */
  externalId: string | null;
  channelPayload: Record<string, unknown> | null;
  simNumber: number | null;
  priority: number;
  /** Bits of NOTIFICATION_HOOKS. */
  hooks: number;
  withDeliveryReport: boolean;
  validUntil: number | null;
  /** The failover order (device kinds), and what later routes need. */
  routes: DeviceKind[] | null;
  fallback: object | null;
  /** Recipient and message are end-to-end encrypted ciphertext, stored verbatim. */
  encrypted?: boolean;
  createdAt: number;
  /** A data SMS's payload and port (then `message` is empty); absent or null for text. */
  dataMessage?: DataMessage | null;
  /** Stored awaiting_approval (its key needs approval): not dispatched until approved. */
  awaitingApproval?: boolean;
  /** The agent session the request named (X-Pigeon-Agent-Session). */
  agentSession?: string | null;
  /** Why the sender wants it sent, shown to whoever approves it. */
  approvalReason?: string | null;
}

/** Where a failover moves a notification: the next route's device and its form of the message. */
export interface Reroute {
  route: DeviceKind;
  deliveryType: DeliveryType;
  deviceId: number;
  templateId: number | null;
  templateVars: Record<string, string> | null;
  message: string;
  segments: number;
  cost: number;
  externalId: string | null;
  simNumber: number | null;
}

export interface LogRecord {
  id: number;
  at: number;
  event: string;
  status: string | null;
  errorCode: string | null;
  detail: string | null;
}

/**
 * What must hear of a notification's changes beyond the events: each a bit of its `hooks`, set when
 * it is sent, so a transition of the others looks nothing up.
 */
export const NOTIFICATION_HOOKS = {
  /** A Twilio-style StatusCallback is posted at each change (src/modules/twilio/posts.ts). */
  statusCallback: 1,
  /** It carries a one-time code, masked once its channel has taken it (src/modules/verify). */
  oneTimeCode: 2,
} as const;

export interface ListFilters {
  status?: NotificationStatus;
  deliveryType?: DeliveryType;
  recipient?: string;
  from?: number;
  to?: number;
  /** Sent through this device (the dashboard's filter). */
  deviceId?: number;
  /** Text the message contains, case-insensitively for ASCII (the dashboard's search). */
  text?: string;
}
