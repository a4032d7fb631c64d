// The one description of Pigeon's tables. drizzle-kit turns changes here into SQL migrations
// (`bun run db:generate`); the binary applies them from the embedded copies at start-up.
// Times are stored as integer milliseconds since the epoch (UTC) and formatted at the edge.
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { DELIVERY_TYPES, DEVICE_KINDS, type DeviceKind } from "../core/kinds";

/** Where an opt-out or opt-in came from. */
export const OPT_OUT_SOURCES = ["keyword", "api", "dashboard", "import"] as const;
export type OptOutSource = (typeof OPT_OUT_SOURCES)[number];

/** A paired phone's health as its app last reported it (the system:ping webhook's checks). */
export interface PhoneHealth {
  /** The app's overall verdict: pass, warn or fail. */
  status: string | null;
  batteryLevel: number | null;
  charging: boolean | null;
  /** Plugged into AC or USB (a full battery on a charger is plugged but not charging). */
  plugged: boolean | null;
  /** Internet connection (connection:status). */
  connected: boolean | null;
  /** The cellular data network: none, unknown, 2g, 3g, 4g or 5g. */
  cellular: string | null;
  /** Messages that failed on the phone in the last hour, and the app's verdict on them. */
  failedMessages: number | null;
  failedStatus: string | null;
  appVersion: string | null;
  reportedAt: number;
}

/** An MMS as the phone reported it: headers first (mms:received), content later (mms:downloaded). */
export interface MmsMeta {
  type: "mms";
  transactionId: string | null;
  subject: string | null;
  size: number | null;
  contentClass: string | null;
  /** The phone's id of the downloaded message, once mms:downloaded came. */
  downloadId: string | null;
  attachments: { partId: number | null; contentType: string; name: string | null; size: number | null }[] | null;
}

export const plan = sqliteTable("plan", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  code: text("code").notNull().unique(),
  name: text("name").notNull(),
  requestsPerMinute: integer("requests_per_minute").notNull().default(60),
  requestsPerDay: integer("requests_per_day").notNull().default(10000),
  // null: no monthly cap on SMS.
  monthlySmsLimit: integer("monthly_sms_limit"),
  allowUrls: integer("allow_urls", { mode: "boolean" }).notNull().default(true),
  createdAt: integer("created_at").notNull(),
});

export const account = sqliteTable("account", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  name: text("name").notNull(),
  planId: integer("plan_id")
    .notNull()
    .references(() => plan.id),
  status: text("status", { enum: ["active", "suspended"] })
    .notNull()
    .default("active"),
  isOwner: integer("is_owner", { mode: "boolean" }).notNull().default(false),
  smsLengthCap: integer("sms_length_cap").notNull().default(1600),
  createdAt: integer("created_at").notNull(),
});

export const workspace = sqliteTable("workspace", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  accountId: integer("account_id")
    .notNull()
    .references(() => account.id),
  name: text("name").notNull(),
  creditBalance: integer("credit_balance").notNull().default(0),
  pairingToken: text("pairing_token").notNull().unique(),
  // The companion app's "login/password" account for this workspace (Basic auth, one-time codes).
  mobileLogin: text("mobile_login").unique(),
  mobilePasswordHash: text("mobile_password_hash"),
  createdAt: integer("created_at").notNull(),
});

export const apiKey = sqliteTable(
  "api_key",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    key: text("key").notNull().unique(),
    // SHA-256 of the secret, hex. The secret itself is shown once and never stored.
    secretHash: text("secret_hash").notNull(),
    secretHint: text("secret_hint").notNull(),
    status: text("status", { enum: ["active", "disabled"] })
      .notNull()
      .default("active"),
    createdAt: integer("created_at").notNull(),
    rotatedAt: integer("rotated_at"),
    lastUsedAt: integer("last_used_at"),
  },
  (table) => [index("api_key_workspace_idx").on(table.workspaceId)],
);

export const device = sqliteTable(
  "device",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    kind: text("kind", { enum: DEVICE_KINDS }).notNull(),
    status: text("status", { enum: ["active", "inactive"] })
      .notNull()
      .default("active"),
    // The phone's id in the companion-app protocol (a 21-character nanoid).
    externalId: text("external_id").notNull().unique(),
    // SHA-256 of the device token the companion app authenticates with.
    tokenHash: text("token_hash").unique(),
    phoneNumber: text("phone_number"),
    // Channel settings (cloud-number credentials, business-number ids), JSON.
    config: text("config", { mode: "json" }).$type<object>(),
    sendLimitPerMinute: integer("send_limit_per_minute").notNull().default(60),
    // A paired phone's random pause between two messages, in seconds (served in its settings).
    sendIntervalMin: integer("send_interval_min").notNull().default(1),
    sendIntervalMax: integer("send_interval_max").notNull().default(5),
    // Which of the settings above the user chose in Pigeon (JSON list of API field names): only
    // those are pushed to a paired phone, the others are left to the phone's own choice.
    userSettings: text("user_settings", { mode: "json" }).$type<string[]>(),
    // Companion app: FCM token (null in SSE-only mode), SIM cards, the key it signs webhooks with,
    // and the version its User-Agent reports.
    pushToken: text("push_token"),
    simCards: text("sim_cards", { mode: "json" }).$type<unknown[]>(),
    webhookKey: text("webhook_key"),
    appVersion: text("app_version"),
    // Paired phones: the last presence we announced (device.online / device.offline events).
    presence: text("presence", { enum: ["online", "offline"] }),
    // Paired phones: the health the app last reported in its system:ping webhook, and while an
    // unhealthy episode lasts (device.unhealthy announced) its reasons, e.g. ["low_battery"].
    health: text("health", { mode: "json" }).$type<PhoneHealth>(),
    unhealthyReasons: text("unhealthy_reasons", { mode: "json" }).$type<string[]>(),
    blockedCode: text("blocked_code"),
    blockedReason: text("blocked_reason"),
    blockedAt: integer("blocked_at"),
    lastSeenAt: integer("last_seen_at"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  (table) => [index("device_workspace_idx").on(table.workspaceId, table.deletedAt, table.status)],
);

export const contactType = sqliteTable("contact_type", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  code: text("code").notNull().unique(),
  name: text("name").notNull(),
  description: text("description").notNull(),
});

export const contact = sqliteTable(
  "contact",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    phone: text("phone").notNull(),
    email: text("email"),
    typeId: integer("type_id").references(() => contactType.id),
    // IANA zone the contact lives in: quiet hours are read in it (else in the number's country's).
    timezone: text("timezone"),
    // Labels the workspace gives the contact (by hand, or an inbound rule's `tag` action).
    tags: text("tags", { mode: "json" }).notNull().$type<string[]>().default(sql`'[]'`),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [
    uniqueIndex("contact_workspace_phone_uq").on(table.workspaceId, table.phone),
    index("contact_workspace_name_idx").on(table.workspaceId, table.name),
  ],
);

export const template = sqliteTable(
  "template",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    guid: text("guid").notNull().unique(),
    // null for system templates, which every workspace can read and none can change.
    workspaceId: integer("workspace_id").references(() => workspace.id),
    accountId: integer("account_id").references(() => account.id),
    code: text("code").notNull(),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    body: text("body").notNull(),
    channel: text("channel", { enum: DELIVERY_TYPES }).notNull(),
    // A boolean to the domain. Its default stays the 0 the first migration wrote (drizzle-kit compares
    // it with the recorded snapshot, and `false` would rebuild the table for nothing).
    isSystem: integer("is_system", { mode: "boolean" })
      .notNull()
      .default(0 as unknown as boolean),
    status: text("status").notNull().default("active"),
    variables: text("variables", { mode: "json" }).notNull().$type<string[]>(),
    // Chat-app templates: the platform's template id, language, category and business account.
    language: text("language"),
    category: text("category"),
    externalId: text("external_id"),
    businessAccountId: text("business_account_id"),
    components: text("components", { mode: "json" }).$type<unknown[]>(),
    statusReason: text("status_reason"),
    // Chat-app templates paused for low quality: when to ask the platform again.
    recheckAt: integer("recheck_at"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  (table) => [
    index("template_workspace_idx").on(table.workspaceId, table.channel),
    uniqueIndex("template_workspace_code_uq").on(table.workspaceId, table.code).where(sql`${table.deletedAt} IS NULL`),
  ],
);

export const notification = sqliteTable(
  "notification",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    apiKeyId: integer("api_key_id").references(() => apiKey.id),
    deliveryType: text("delivery_type", { enum: DELIVERY_TYPES }).notNull(),
    // The kind of device that carries it: sms (paired phone), cloud, chatapp.
    route: text("route", { enum: DEVICE_KINDS }).notNull(),
    deviceId: integer("device_id").references(() => device.id),
    // The server whose attempt holds it while `dispatching`: with several servers on one database,
    // only attempts of servers that stopped renewing their lease are recovered (src/worker/cluster.ts).
    claimedBy: text("claimed_by"),
    recipient: text("recipient").notNull(),
    recipientName: text("recipient_name"),
    templateId: integer("template_id").references(() => template.id),
    templateVars: text("template_vars", { mode: "json" }).$type<Record<string, string>>(),
    message: text("message").notNull(),
    status: text("status", { enum: ["pending", "sent", "delivered", "failed", "cancelled"] })
      .notNull()
      .default("pending"),
    // Where a pending notification is in the pipeline: queued (waiting for the worker),
    // dispatching (a channel call is in flight), handed (the channel has it, awaiting its report).
    stage: text("stage", { enum: ["queued", "dispatching", "handed", "done"] })
      .notNull()
      .default("queued"),
    scheduleAt: integer("schedule_at"),
    timezone: text("timezone"),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    attempts: integer("attempts").notNull().default(0),
    // Set when an attempt ended without knowing whether the channel took the message (a timeout,
    // or a crash mid-call): the next attempt asks the channel before sending again.
    needsReconcile: integer("needs_reconcile", { mode: "boolean" }).notNull().default(false),
    segments: integer("segments").notNull().default(1),
    cost: integer("cost").notNull().default(0),
    externalId: text("external_id"),
    errorCode: text("error_code"),
    errorReason: text("error_reason"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    dispatchedAt: integer("dispatched_at"),
    sentAt: integer("sent_at"),
    deliveredAt: integer("delivered_at"),
    failedAt: integer("failed_at"),
    cancelledAt: integer("cancelled_at"),
    // A paired phone may hold a copy: it is told "Cancelling" until it confirms with "Cancelled".
    cancelPending: integer("cancel_pending", { mode: "boolean" }).notNull().default(false),
    // Channel extras the worker needs at send time (a chat-app template's header media).
    channelPayload: text("channel_payload", { mode: "json" }).$type<Record<string, unknown>>(),
    // Send options a paired phone honours: the SIM (1-3, null = the phone's choice), the app's
    // priority (-128..127; 100 and above skips the phone's limits and delays) and whether the
    // carrier's delivery report is asked for.
    simNumber: integer("sim_number"),
    priority: integer("priority").notNull().default(0),
    // What must hear of this notification's changes beyond the usual (bits of NOTIFICATION_HOOKS:
    // a Twilio status callback, a one-time code to mask), so the others cost no lookup.
    hooks: integer("hooks").notNull().default(0),
    withDeliveryReport: integer("with_delivery_report", { mode: "boolean" }).notNull().default(true),
    // The instant after which the message must not go out (from ttl or valid_until); every channel
    // honours it, and the worker fails what is still waiting then with `expired`.
    validUntil: integer("valid_until"),
    // Failover: the routes (device kinds) to try in order, the current one among them; null for a
    // send that named no routes. `fallback` holds what a later route needs (the chat-app template
    // and its variables for a closed window).
    routes: text("routes", { mode: "json" }).$type<DeviceKind[]>(),
    fallback: text("fallback", { mode: "json" }).$type<Record<string, unknown>>(),
  },
  (table) => [
    index("notification_workspace_created_idx").on(table.workspaceId, table.createdAt),
    index("notification_workspace_status_idx").on(table.workspaceId, table.status, table.createdAt),
    index("notification_device_status_idx").on(table.deviceId, table.status),
    // What a device was handed in a window (its pacing and statistics): only handed rows, so a send
    // writes one index fewer when it is stored; `dispatched_at >= ?` implies the condition, and both
    // databases use the index for it.
    index("notification_device_dispatched_idx").on(table.deviceId, table.dispatchedAt).where(sql`dispatched_at IS NOT NULL`),
    // A phone's own queue, in the order it is handed out: what it was handed and has not confirmed,
    // then what it has not been handed, by priority and due time. Only messages still waiting are
    // in it, so a pull reads the few rows it hands out, not the whole backlog behind them.
    index("notification_phone_queue_idx")
      .on(table.deviceId, table.dispatchedAt, sql`priority DESC`, table.nextAttemptAt)
      .where(sql`route = 'sms' AND status = 'pending' AND stage = 'queued'`),
    // The worker's claim and the phones' announcements look for due work on their own routes: with
    // the route in the index, a phone's backlog is not read through by the cloud worker every tick.
    index("notification_due_route_idx").on(table.stage, table.route, table.nextAttemptAt),
    // Failover's look for messages stranded on an offline phone reads only messages on a route order.
    index("notification_failover_idx")
      .on(table.nextAttemptAt)
      .where(sql`routes IS NOT NULL AND status = 'pending' AND stage = 'queued' AND dispatched_at IS NULL`),
    // Calls claimed and not yet recorded, per device: a device's pacing window counts them too, so a
    // call claimed in one window that goes out in the next is not let past that window's pace.
    index("notification_dispatching_idx").on(table.deviceId).where(sql`stage = 'dispatching'`),
    index("notification_valid_until_idx").on(table.validUntil).where(sql`status = 'pending' AND valid_until IS NOT NULL`),
    // One provider message belongs to one notification: recovery after a crash claims a provider id
    // only if no other notification owns it, and this index makes that claim atomic.
    uniqueIndex("notification_external_unique_idx").on(table.externalId).where(sql`external_id IS NOT NULL`),
  ],
);

export const notificationLog = sqliteTable(
  "notification_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    notificationId: integer("notification_id")
      .notNull()
      .references(() => notification.id),
    at: integer("at").notNull(),
    event: text("event").notNull(),
    status: text("status"),
    errorCode: text("error_code"),
    detail: text("detail"),
  },
  (table) => [index("notification_log_notification_idx").on(table.notificationId)],
);

export const creditLedger = sqliteTable(
  "credit_ledger",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    // Positive for top-ups and refunds, negative for debits.
    delta: integer("delta").notNull(),
    reason: text("reason", { enum: ["topup", "debit", "refund", "adjustment"] }).notNull(),
    notificationId: integer("notification_id").references(() => notification.id),
    note: text("note"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    index("credit_ledger_workspace_idx").on(table.workspaceId, table.createdAt),
    index("credit_ledger_notification_idx").on(table.notificationId),
  ],
);

export const idempotencyRecord = sqliteTable(
  "idempotency_record",
  {
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    key: text("key").notNull(),
    route: text("route").notNull(),
    requestHash: text("request_hash").notNull(),
    responseStatus: integer("response_status").notNull(),
    responseBody: text("response_body").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.workspaceId, table.key] }), index("idempotency_created_idx").on(table.createdAt)],
);

/** One-time codes a companion app signs in with (`Authorization: Code 123456`). */
export const mobileCode = sqliteTable("mobile_code", {
  code: text("code").primaryKey(),
  workspaceId: integer("workspace_id")
    .notNull()
    .references(() => workspace.id),
  expiresAt: integer("expires_at").notNull(),
});

/** Webhook events a phone posted, by their id, so a re-delivery changes nothing. */
export const phoneEvent = sqliteTable(
  "phone_event",
  {
    id: text("id").primaryKey(),
    deviceId: integer("device_id")
      .notNull()
      .references(() => device.id),
    event: text("event").notNull(),
    receivedAt: integer("received_at").notNull(),
  },
  (table) => [index("phone_event_received_idx").on(table.receivedAt)],
);

/**
 * A conversation with one person on one channel. SMS threads are per workspace and phone number;
 * chat-app threads are per business number (device) and user, as the 24-hour window is.
 */
export const thread = sqliteTable(
  "thread",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    channel: text("channel", { enum: DELIVERY_TYPES }).notNull(),
    // 0 for SMS threads (any phone of the workspace); the business number's device for chat-app.
    deviceId: integer("device_id").notNull().default(0),
    peer: text("peer").notNull(),
    peerName: text("peer_name"),
    contactId: integer("contact_id").references(() => contact.id, { onDelete: "set null" }),
    lastMessageAt: integer("last_message_at").notNull(),
    lastMessagePreview: text("last_message_preview").notNull().default(""),
    lastDirection: text("last_direction", { enum: ["inbound", "outbound"] }).notNull(),
    unreadCount: integer("unread_count").notNull().default(0),
    lastInboundAt: integer("last_inbound_at"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    uniqueIndex("thread_peer_uq").on(table.workspaceId, table.channel, table.deviceId, table.peer),
    index("thread_workspace_last_idx").on(table.workspaceId, table.lastMessageAt),
  ],
);

export const threadMessage = sqliteTable(
  "thread_message",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    threadId: integer("thread_id")
      .notNull()
      .references(() => thread.id),
    direction: text("direction", { enum: ["inbound", "outbound"] }).notNull(),
    body: text("body").notNull(),
    notificationId: integer("notification_id").references(() => notification.id),
    deviceId: integer("device_id"),
    // The channel's id for an inbound message (the phone's content hash, the platform's wamid).
    externalId: text("external_id"),
    // What a plain text body cannot hold: an MMS's headers and its attachments' metadata.
    meta: text("meta", { mode: "json" }).$type<MmsMeta>(),
    at: integer("at").notNull(),
  },
  (table) => [
    index("thread_message_thread_idx").on(table.threadId, table.at),
    // A message the channel delivered once (its id) is stored once; a send's own messages have no
    // such id and stay out of the index (one index fewer written per send).
    uniqueIndex("thread_message_external_uq").on(table.threadId, table.externalId).where(sql`external_id IS NOT NULL`),
    // A send's own thread message, found by its notification: retention and erasure remove them together.
    index("thread_message_notification_idx").on(table.notificationId).where(sql`notification_id IS NOT NULL`),
  ],
);

/** Customer webhook subscriptions. The secret signs deliveries; it is shown once on create. */
export const webhookSubscription = sqliteTable(
  "webhook_subscription",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    url: text("url").notNull(),
    // Event types, or ["*"] for all of them.
    events: text("events", { mode: "json" }).notNull().$type<string[]>(),
    description: text("description").notNull().default(""),
    secret: text("secret").notNull(),
    status: text("status", { enum: ["active", "failing", "disabled"] })
      .notNull()
      .default("active"),
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    failingSince: integer("failing_since"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    deletedAt: integer("deleted_at"),
    // How deliveries are shaped and signed: Pigeon's envelope, or SMSGate's body signed with the
    // workspace's SMSGate signing key (a webhook registered through the SMSGate-compatible API,
    // known there by its own id, for one of its events, optionally for one phone).
    format: text("format", { enum: ["pigeon", "smsgate"] })
      .notNull()
      .default("pigeon"),
    externalId: text("external_id"),
    smsgateEvent: text("smsgate_event"),
    smsgateDeviceId: integer("smsgate_device_id"),
  },
  (table) => [
    index("webhook_subscription_workspace_idx").on(table.workspaceId, table.deletedAt),
    uniqueIndex("webhook_subscription_external_uq")
      .on(table.workspaceId, table.externalId)
      .where(sql`external_id IS NOT NULL AND deleted_at IS NULL`),
  ],
);

/** The outbox: every event, written in the transaction of the change that caused it. */
export const event = sqliteTable(
  "event",
  {
    id: text("id").primaryKey(),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    type: text("type").notNull(),
    data: text("data", { mode: "json" }).notNull().$type<Record<string, unknown>>(),
    createdAt: integer("created_at").notNull(),
    // Insertion order within a millisecond, as webhook_delivery.seq (rows from before it: their rowid).
    seq: integer("seq"),
  },
  (table) => [index("event_workspace_idx").on(table.workspaceId, table.createdAt)],
);

/** One event on its way to one subscription, retried until delivered or given up. */
export const webhookDelivery = sqliteTable(
  "webhook_delivery",
  {
    id: text("id").primaryKey(),
    subscriptionId: integer("subscription_id")
      .notNull()
      .references(() => webhookSubscription.id),
    eventId: text("event_id")
      .notNull()
      .references(() => event.id),
    status: text("status", { enum: ["pending", "delivering", "delivered", "failed"] })
      .notNull()
      .default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    /** The server whose call holds it while `delivering` (as the notification's claimed_by). */
    claimedBy: text("claimed_by"),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    deliveredAt: integer("delivered_at"),
    // Insertion order, for deliveries created within one millisecond (a listing's tie-break): the
    // writer's own increasing counter (see the event repository); rows from before it have their rowid.
    seq: integer("seq"),
  },
  (table) => [
    index("webhook_delivery_due_idx").on(table.status, table.nextAttemptAt),
    // An event's deliveries: retention removes an event once none of its deliveries is left.
    index("webhook_delivery_event_idx").on(table.eventId),
    index("webhook_delivery_subscription_idx").on(table.subscriptionId, table.createdAt, table.seq),
  ],
);

/** Each attempt of a delivery: when, what the receiver answered, how long it took. */
export const webhookAttempt = sqliteTable(
  "webhook_attempt",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    deliveryId: text("delivery_id")
      .notNull()
      .references(() => webhookDelivery.id),
    at: integer("at").notNull(),
    statusCode: integer("status_code"),
    latencyMs: integer("latency_ms").notNull(),
    error: text("error"),
  },
  (table) => [index("webhook_attempt_delivery_idx").on(table.deliveryId)],
);

/**
 * Platform statuses that arrived before we recorded the message id they are about (the platform
 * can answer a send and report on it faster than we write the answer down); applied then.
 */
export const statusBacklog = sqliteTable(
  "status_backlog",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    deviceId: integer("device_id")
      .notNull()
      .references(() => device.id),
    externalId: text("external_id").notNull(),
    payload: text("payload", { mode: "json" }).notNull().$type<Record<string, unknown>>(),
    receivedAt: integer("received_at").notNull(),
  },
  (table) => [index("status_backlog_external_idx").on(table.externalId, table.deviceId)],
);

/** A person who signs in to the dashboard; belongs to one account, as its owner or a member. */
export const dashboardUser = sqliteTable(
  "dashboard_user",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: integer("account_id")
      .notNull()
      .references(() => account.id),
    // Stored lower-cased: the address is the sign-in name, compared without case.
    email: text("email").notNull().unique(),
    // argon2id, in the PHC string Bun.password writes.
    passwordHash: text("password_hash").notNull(),
    role: text("role", { enum: ["owner", "member"] })
      .notNull()
      .default("member"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [index("dashboard_user_account_idx").on(table.accountId)],
);

/** A signed-in browser. The cookie holds a random token; only its SHA-256 is stored. */
export const dashboardSession = sqliteTable(
  "dashboard_session",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => dashboardUser.id),
    tokenHash: text("token_hash").notNull().unique(),
    // The workspace the pages show (one of the account's).
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    createdAt: integer("created_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
    userAgent: text("user_agent"),
    // Set when the session ended (signed out, revoked, password changed).
    endedAt: integer("ended_at"),
  },
  (table) => [index("dashboard_session_user_idx").on(table.userId)],
);

/** The one-time link that lets the owner pick an email and password; stored as a digest. */
export const dashboardSetup = sqliteTable("dashboard_setup", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  accountId: integer("account_id")
    .notNull()
    .references(() => account.id),
  tokenHash: text("token_hash").notNull().unique(),
  createdAt: integer("created_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
  usedAt: integer("used_at"),
});

/**
 * A message sent through the SMSGate-compatible API: its id as that API knows it (the caller's or
 * ours), one per workspace. Each recipient is a notification of its own (smsgate_recipient).
 */
export const smsgateMessage = sqliteTable(
  "smsgate_message",
  {
    rowId: integer("row_id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    id: text("id").notNull(),
    deviceId: integer("device_id").references(() => device.id),
    isEncrypted: integer("is_encrypted", { mode: "boolean" }).notNull().default(false),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    uniqueIndex("smsgate_message_workspace_id_uq").on(table.workspaceId, table.id),
    index("smsgate_message_workspace_created_idx").on(table.workspaceId, table.createdAt),
  ],
);

/** One recipient of an SMSGate message and the notification that carries it to them. */
export const smsgateRecipient = sqliteTable(
  "smsgate_recipient",
  {
    messageRowId: integer("message_row_id")
      .notNull()
      .references(() => smsgateMessage.rowId),
    position: integer("position").notNull(),
    phoneNumber: text("phone_number").notNull(),
    notificationId: integer("notification_id")
      .notNull()
      .references(() => notification.id),
  },
  (table) => [
    primaryKey({ columns: [table.messageRowId, table.position] }),
    uniqueIndex("smsgate_recipient_notification_uq").on(table.notificationId),
  ],
);

/**
 * Tokens issued by the SMSGate-compatible API's POST /auth/token: the JWT's id, what it may do, and
 * whether it was revoked (access) or already used (refresh, which is good once).
 */
export const smsgateToken = sqliteTable(
  "smsgate_token",
  {
    jti: text("jti").primaryKey(),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    apiKeyId: integer("api_key_id")
      .notNull()
      .references(() => apiKey.id),
    kind: text("kind", { enum: ["access", "refresh"] }).notNull(),
    // The access token a refresh token belongs to (revoking one revokes the other).
    accessJti: text("access_jti").notNull(),
    scopes: text("scopes", { mode: "json" }).notNull().$type<string[]>(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    revokedAt: integer("revoked_at"),
    usedAt: integer("used_at"),
  },
  (table) => [index("smsgate_token_access_idx").on(table.accessJti)],
);

/** The SMSGate-compatible API's settings of a workspace: the key its webhooks are signed with. */
export const smsgateSetting = sqliteTable("smsgate_setting", {
  workspaceId: integer("workspace_id")
    .primaryKey()
    .references(() => workspace.id),
  // Sealed: it must be used again to sign, so it cannot be a digest.
  signingKey: text("signing_key").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * A workspace's safe-sending rules. A null column means "the default" (see
 * src/modules/safety/settings.ts), so defaults can improve without a migration.
 */
export const workspaceSetting = sqliteTable("workspace_setting", {
  workspaceId: integer("workspace_id")
    .primaryKey()
    .references(() => workspace.id),
  // Quiet hours as "HH:MM" in the recipient's local time; both null when there are none.
  quietStart: text("quiet_start"),
  quietEnd: text("quiet_end"),
  optOutKeywords: text("opt_out_keywords", { mode: "json" }).$type<string[]>(),
  optInKeywords: text("opt_in_keywords", { mode: "json" }).$type<string[]>(),
  helpKeywords: text("help_keywords", { mode: "json" }).$type<string[]>(),
  // Replies to the keywords; an empty string sends none.
  optOutReply: text("opt_out_reply"),
  optInReply: text("opt_in_reply"),
  helpReply: text("help_reply"),
  // Failover order (device kinds) for sends that name none.
  defaultRoutes: text("default_routes", { mode: "json" }).$type<DeviceKind[]>(),
  // The workspace's own IANA time zone (business hours of its inbound rules); null: UTC.
  timeZone: text("time_zone"),
  updatedAt: integer("updated_at").notNull(),
});

/** Numbers a workspace must not text: one row per number suppressed now. */
export const suppression = sqliteTable(
  "suppression",
  {
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    phone: text("phone").notNull(),
    optedOutAt: integer("opted_out_at").notNull(),
    source: text("source", { enum: OPT_OUT_SOURCES }).notNull(),
    reason: text("reason"),
  },
  (table) => [primaryKey({ columns: [table.workspaceId, table.phone] })],
);

/** Every opt-out and opt-in, kept for the audit. */
export const optOutEvent = sqliteTable(
  "opt_out_event",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    phone: text("phone").notNull(),
    action: text("action", { enum: ["opted_out", "opted_in"] }).notNull(),
    source: text("source", { enum: OPT_OUT_SOURCES }).notNull(),
    reason: text("reason"),
    // The inbound message that carried the keyword.
    threadMessageId: integer("thread_message_id"),
    channel: text("channel", { enum: DELIVERY_TYPES }),
    deviceId: integer("device_id"),
    at: integer("at").notNull(),
  },
  (table) => [
    index("opt_out_event_workspace_idx").on(table.workspaceId, table.id),
    index("opt_out_event_phone_idx").on(table.workspaceId, table.phone, table.id),
  ],
);

/**
 * How many notifications each workspace has per channel, status and hour of creation
 * (created_at / 3,600,000), kept exact by triggers on the notification table (migration 0012):
 * counts over long ranges (stats, a list's total) add these up and count rows only for the
 * partial hours at the ends.
 */
export const notificationHourly = sqliteTable(
  "notification_hourly",
  {
    workspaceId: integer("workspace_id").notNull(),
    status: text("status").notNull(),
    hour: integer("hour").notNull(),
    deliveryType: text("delivery_type").notNull(),
    n: integer("n").notNull(),
  },
  (table) => [primaryKey({ columns: [table.workspaceId, table.status, table.hour, table.deliveryType] })],
);

/**
 * A sender pool: the devices (a phone, one of a phone's SIMs, a cloud number) a send may go out
 * through, and how one is chosen: `sticky` (a recipient keeps the member that last texted them or
 * that they last wrote to), `round_robin` or `least_loaded`. One pool of a workspace may be its
 * default, used by sends that name neither a pool nor a device.
 */
export const pool = sqliteTable(
  "pool",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    strategy: text("strategy", { enum: ["sticky", "round_robin", "least_loaded"] })
      .notNull()
      .default("sticky"),
    // Prefer a member whose number shares the recipient's country calling code (and, for +1, area code).
    geomatch: integer("geomatch", { mode: "boolean" }).notNull().default(false),
    isDefault: integer("is_default", { mode: "boolean" }).notNull().default(false),
    // A member whose carrier fails this many messages in a row is paused for failure_backoff_seconds,
    // doubled each time it is paused again before a message of it goes out.
    failureThreshold: integer("failure_threshold").notNull().default(3),
    failureBackoffSeconds: integer("failure_backoff_seconds").notNull().default(900),
    // Where messages received on its members are posted as Twilio posts them (a Messaging Service's
    // inbound request URL); null: the workspace's own, if any (twilio_account.incoming_url).
    incomingUrl: text("incoming_url"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [uniqueIndex("pool_workspace_name_uq").on(table.workspaceId, table.name)],
);

/** One member of a pool: a device, optionally one SIM of a phone, and the number it sends from when known. */
export const poolMember = sqliteTable(
  "pool_member",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    poolId: integer("pool_id")
      .notNull()
      .references(() => pool.id),
    deviceId: integer("device_id")
      .notNull()
      .references(() => device.id),
    simNumber: integer("sim_number"),
    // E.164; the companion app does not tell its SIMs' numbers, so a phone member may be given it.
    number: text("number"),
    position: integer("position").notNull(),
    // Set aside by the user: skipped until resumed.
    paused: integer("paused", { mode: "boolean" }).notNull().default(false),
    // Carrier-plan caps (null: none): messages a UTC day and a UTC month (segments with
    // count_segments), and distinct recipients a month.
    dailyLimit: integer("daily_limit"),
    monthlyLimit: integer("monthly_limit"),
    countSegments: integer("count_segments", { mode: "boolean" }).notNull().default(false),
    monthlyUniqueRecipients: integer("monthly_unique_recipients"),
    // Carrier failures in a row; paused after failure_threshold of them until paused_until, with the
    // back-off used then (doubled at the next pause; cleared once a message of it goes out).
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    pausedUntil: integer("paused_until"),
    backoffSeconds: integer("backoff_seconds"),
  },
  (table) => [index("pool_member_pool_idx").on(table.poolId, table.position), index("pool_member_device_idx").on(table.deviceId)],
);

/** What each pool member sent per UTC day (`d:2026-11-26`) and month (`m:2026-11`): messages and segments. */
export const poolUsage = sqliteTable(
  "pool_usage",
  {
    memberId: integer("member_id").notNull(),
    period: text("period").notNull(),
    messages: integer("messages").notNull(),
    segments: integer("segments").notNull(),
  },
  (table) => [primaryKey({ columns: [table.memberId, table.period] })],
);

/** The distinct recipients each pool member texted in a UTC month (`2026-11`), for plans that cap them. */
export const poolRecipient = sqliteTable(
  "pool_recipient",
  {
    memberId: integer("member_id").notNull(),
    month: text("month").notNull(),
    recipient: text("recipient").notNull(),
  },
  (table) => [primaryKey({ columns: [table.memberId, table.month, table.recipient] })],
);

/** Sticky senders: the member a recipient keeps, per pool, and since when. */
export const poolSticky = sqliteTable(
  "pool_sticky",
  {
    poolId: integer("pool_id")
      .notNull()
      .references(() => pool.id),
    recipient: text("recipient").notNull(),
    memberId: integer("member_id").notNull(),
    at: integer("at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.poolId, table.recipient] }), index("pool_sticky_member_idx").on(table.memberId)],
);

/**
 * Each erasure of one person's data (POST /v1/api/privacy/erase, the dashboard's button): when, by
 * whom (`key:ID` or `user:ID`) and how many rows of each kind went, as JSON. Never the number.
 */
export const erasureLog = sqliteTable(
  "erasure_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    at: integer("at").notNull(),
    actor: text("actor").notNull(),
    counts: text("counts").notNull(),
  },
  (table) => [index("erasure_log_workspace_idx").on(table.workspaceId, table.id)],
);

/**
 * The hourly counts of notifications retention removed (src/modules/retention), in the shape of
 * notification_hourly: the statistics add them, so what happened in a pruned hour still counts,
 * while a list's total (notification_hourly alone) counts the rows that are still there.
 */
export const notificationPrunedHourly = sqliteTable(
  "notification_pruned_hourly",
  {
    workspaceId: integer("workspace_id").notNull(),
    status: text("status").notNull(),
    hour: integer("hour").notNull(),
    deliveryType: text("delivery_type").notNull(),
    n: integer("n").notNull(),
  },
  (table) => [primaryKey({ columns: [table.workspaceId, table.status, table.hour, table.deliveryType] })],
);

/**
 * On PostgreSQL, changes to notification_hourly's counts (+1, -1) appended by its triggers, and
 * folded into notification_hourly every few seconds by the cluster's leader: an append takes no
 * lock another send waits on, where an upsert of the hour's one row would make every concurrent
 * send of a workspace queue behind it. Readers add both tables. Unused on SQLite.
 */
export const notificationHourlyDelta = sqliteTable(
  "notification_hourly_delta",
  {
    workspaceId: integer("workspace_id").notNull(),
    status: text("status").notNull(),
    hour: integer("hour").notNull(),
    deliveryType: text("delivery_type").notNull(),
    n: integer("n").notNull(),
  },
  (table) => [index("notification_hourly_delta_workspace_hour_idx").on(table.workspaceId, table.hour)],
);

/**
 * How far the threads have caught up with the notifications (one row, id 1): a send stores only its
 * notification, and the threads repository adds every notification past `notification_id` to its
 * thread as an outbound message before it reads or writes anything (src/modules/threads/repository.ts).
 */
export const threadSync = sqliteTable("thread_sync", {
  id: integer("id").primaryKey(),
  notificationId: integer("notification_id").notNull(),
});

/**
 * One row that /health rewrites to learn whether the disk takes writes again after it was full
 * (src/lib/storage.ts), when nothing else has written since.
 */
export const storageProbe = sqliteTable("storage_probe", {
  id: integer("id").primaryKey(),
  at: integer("at").notNull(),
});

/**
 * Facts about the installation as a whole, one row per name. `key_fingerprint` records which
 * PIGEON_KEY_FILE seals this database's secrets, so a server started with another key refuses to
 * run instead of failing on every sealed value (src/db/key-check.ts).
 */
export const instanceSetting = sqliteTable("instance_setting", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
});

/**
 * Who runs a cluster-wide periodic task (expiry, failover, retries…) until when: servers sharing
 * one database renew their lease each tick, and another takes it over once it expires
 * (src/worker/leadership.ts).
 */
export const lease = sqliteTable("lease", {
  name: text("name").primaryKey(),
  holder: text("holder").notNull(),
  expiresAt: integer("expires_at").notNull(),
});

/**
 * On PostgreSQL, the sends not yet added to their threads: a trigger adds a row with each
 * notification, in the same transaction, and the catch-up takes them (FOR UPDATE SKIP LOCKED) and
 * deletes them. A cursor over ids (thread_sync, SQLite's way) would skip a send whose transaction
 * committed after a later id's. Unused on SQLite, where one writer commits ids in order.
 */
export const threadPending = sqliteTable("thread_pending", {
  notificationId: integer("notification_id").primaryKey(),
});

/**
 * On PostgreSQL, the request limits and sign-in throttles of every server in one place: requests
 * counted per bucket (`key:7:m` a key's minute, `key:7:d` its day, `auth:ADDRESS`, `signin:…`) and
 * slot (a second, or a day), checked and counted atomically by the pigeon_admit function, and
 * pruned once expired (src/http/shared-limits.ts). SQLite's one server counts in memory.
 */
export const rateCounter = sqliteTable(
  "rate_counter",
  {
    bucket: text("bucket").notNull(),
    slot: integer("slot").notNull(),
    n: integer("n").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.bucket, table.slot] }), index("rate_counter_expires_idx").on(table.expiresAt)],
);

/**
 * On PostgreSQL, what a dashboard session keeps between two requests that may reach different
 * servers: the message shown on the next page (a new key's secret among them) and bulk-send
 * drafts. Sealed with the key; taken once; gone when expired (src/dashboard/scratch.ts). SQLite's
 * one server keeps them in memory.
 */
export const dashboardScratch = sqliteTable(
  "dashboard_scratch",
  {
    id: text("id").primaryKey(),
    sessionId: integer("session_id").notNull(),
    expiresAt: integer("expires_at").notNull(),
    body: text("body").notNull(),
  },
  (table) => [index("dashboard_scratch_expires_idx").on(table.expiresAt)],
);

/**
 * An inbound rule: what Pigeon does with a message that comes in and matches (a keyword, a regular
 * expression, or any message), in priority order; the first match wins unless it says `continue`.
 * Its actions (reply, webhook, forward, tag) are a JSON object; a webhook action delivers through a
 * webhook subscription of its own (webhook_id).
 */
export const rule = sqliteTable(
  "rule",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    priority: integer("priority").notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    match: text("match", { mode: "json" }).notNull().$type<Record<string, unknown>>(),
    // Delivery types it hears; null: every channel.
    channels: text("channels", { mode: "json" }).$type<string[]>(),
    action: text("action", { mode: "json" }).notNull().$type<Record<string, unknown>>(),
    continueAfter: integer("continue_after", { mode: "boolean" }).notNull().default(false),
    // When it holds ({outside_hours}); null: always.
    whenHolds: text("when_holds", { mode: "json" }).$type<Record<string, unknown>>(),
    // At most one automatic reply per sender within this many seconds.
    replyWindowSeconds: integer("reply_window_seconds").notNull().default(600),
    webhookId: integer("webhook_id"),
    matchedCount: integer("matched_count").notNull().default(0),
    lastMatchedAt: integer("last_matched_at"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [
    uniqueIndex("rule_workspace_name_uq").on(table.workspaceId, table.name),
    index("rule_workspace_priority_idx").on(table.workspaceId, table.priority),
  ],
);

/** The automatic replies rules sent, per sender: the loop protection counts them. */
export const ruleReply = sqliteTable(
  "rule_reply",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id").notNull(),
    ruleId: integer("rule_id").notNull(),
    sender: text("sender").notNull(),
    at: integer("at").notNull(),
  },
  (table) => [index("rule_reply_sender_idx").on(table.workspaceId, table.sender, table.at)],
);

/**
 * A workspace's Twilio-style credentials: the account SID its Twilio-compatible API is called with,
 * and the auth token (sealed with the key: it also signs status callbacks). Calls made with them act
 * as the workspace's API key `api_key_id` (named "Twilio account"), so its rate limits, its status
 * and its use are a key's.
 */
export const twilioAccount = sqliteTable("twilio_account", {
  workspaceId: integer("workspace_id")
    .primaryKey()
    .references(() => workspace.id),
  accountSid: text("account_sid").notNull().unique(),
  authToken: text("auth_token").notNull(),
  apiKeyId: integer("api_key_id")
    .notNull()
    .references(() => apiKey.id),
  // Where each received message is posted as Twilio posts it, its TwiML answer sent back (null: none).
  incomingUrl: text("incoming_url"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/** A message sent through the Twilio-compatible API with a StatusCallback: where its changes are posted. */
export const twilioCallback = sqliteTable("twilio_callback", {
  notificationId: integer("notification_id")
    .primaryKey()
    .references(() => notification.id),
  workspaceId: integer("workspace_id").notNull(),
  url: text("url").notNull(),
  createdAt: integer("created_at").notNull(),
});

/**
 * The Twilio-style posts waiting to be made (an outbox, written in the transaction of the change):
 * a status callback, or a received message for an incoming-message URL (whose TwiML answer is then
 * sent to `peer` through the device and SIM it came in on, `reply`). Removed once made or given up.
 */
export const twilioPost = sqliteTable(
  "twilio_post",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id").notNull(),
    kind: text("kind", { enum: ["status", "incoming"] }).notNull(),
    url: text("url").notNull(),
    // The form parameters, in order, as [name, value] pairs.
    params: text("params", { mode: "json" }).notNull().$type<[string, string][]>(),
    // The phone number on the other side (privacy erasure finds the posts by it).
    peer: text("peer").notNull(),
    // Incoming: the channel, device and SIM a TwiML answer goes back through.
    reply: text("reply", { mode: "json" }).$type<{ channel: string; deviceId: number; simNumber: number | null }>(),
    attempts: integer("attempts").notNull().default(0),
    nextAt: integer("next_at").notNull(),
    // The server whose call is under way (null: waiting); a stopped server's are sent again.
    claimedBy: text("claimed_by"),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("twilio_post_due_idx").on(table.nextAt), index("twilio_post_peer_idx").on(table.workspaceId, table.peer)],
);

/**
 * A Verify service (Twilio's Verify v2 API and Pigeon's /v1/api/verify): how its one-time codes are
 * made and sent (length, life, the pool they go through, the chat-app template that carries them)
 * and its fraud limits (sends a number may get per 10 minutes, sends a country prefix may get per hour).
 */
export const verifyService = sqliteTable(
  "verify_service",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    codeLength: integer("code_length").notNull().default(6),
    ttlSeconds: integer("ttl_seconds").notNull().default(600),
    poolId: integer("pool_id"),
    chatappTemplateId: integer("chatapp_template_id"),
    perNumberLimit: integer("per_number_limit").notNull().default(5),
    prefixHourlyBudget: integer("prefix_hourly_budget").notNull().default(100),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [index("verify_service_workspace_idx").on(table.workspaceId)],
);

/**
 * One verification: the code (sealed with the server's key: a new verification to the same number
 * within its life sends the same code again), the checks made of it, and its status.
 */
export const verification = sqliteTable(
  "verification",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    serviceId: integer("service_id")
      .notNull()
      .references(() => verifyService.id),
    workspaceId: integer("workspace_id").notNull(),
    recipient: text("recipient").notNull(),
    channel: text("channel").notNull(),
    code: text("code").notNull(),
    status: text("status", { enum: ["pending", "approved", "canceled", "expired"] }).notNull(),
    checks: integer("checks").notNull().default(0),
    expiresAt: integer("expires_at").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [index("verification_service_recipient_idx").on(table.serviceId, table.recipient, table.createdAt)],
);

/** Each code sent: the fraud limits count them (per number, per country prefix), and its message is masked once taken. */
export const verificationSend = sqliteTable(
  "verification_send",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    verificationId: integer("verification_id")
      .notNull()
      .references(() => verification.id),
    serviceId: integer("service_id").notNull(),
    recipient: text("recipient").notNull(),
    // The recipient's country calling code ("1", "44", …), which the hourly budget is kept per.
    prefix: text("prefix").notNull(),
    channel: text("channel").notNull(),
    notificationId: integer("notification_id"),
    at: integer("at").notNull(),
  },
  (table) => [
    index("verification_send_recipient_idx").on(table.serviceId, table.recipient, table.at),
    index("verification_send_prefix_idx").on(table.serviceId, table.prefix, table.at),
    index("verification_send_notification_idx").on(table.notificationId),
  ],
);
