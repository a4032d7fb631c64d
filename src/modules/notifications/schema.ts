// The notifications module's tables: every message sent, its log, and the hourly counts over them.
// Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { DELIVERY_TYPES, DEVICE_KINDS, type DeviceKind } from "../../core/kinds";
import type { DataMessage } from "../../lib/data-sms";
import { apiKey, workspace } from "../accounts/schema";
import { device } from "../devices/schema";
import { template } from "../templates/schema";

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
    // awaiting_approval: sent by a key that needs approval; nothing is dispatched until a person
    // approves it (then pending) or rejects it, or it expires (then failed).
    status: text("status", { enum: ["awaiting_approval", "pending", "sent", "delivered", "failed", "cancelled"] })
      .notNull()
      .default("pending"),
    // Where a pending notification is in the pipeline: queued (waiting for the worker),
    // dispatching (a channel call is in flight), handed (the channel has it, awaiting its report);
    // held while it awaits approval (no claim or download looks at it).
    stage: text("stage", { enum: ["held", "queued", "dispatching", "handed", "done"] })
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
    // A data SMS (a paired phone only): its payload (base64) and port; `message` is then empty.
    dataMessage: text("data_message", { mode: "json" }).$type<DataMessage>(),
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
    // End-to-end encrypted (the companion app's format): recipient and message are ciphertext the
    // paired phone decrypts; Pigeon stores and hands them on verbatim and never reads them.
    encrypted: integer("encrypted", { mode: "boolean" }).notNull().default(false),
    // Who sent it beyond the key: the agent session named by X-Pigeon-Agent-Session (an MCP client's).
    agentSession: text("agent_session"),
    // Approval (a key that needs it): the sender's stated reason, and the decision once made.
    approvalReason: text("approval_reason"),
    approvedAt: integer("approved_at"),
    rejectedAt: integer("rejected_at"),
    // Who decided: "key <id> (<name>)" or "user <email>".
    decidedBy: text("decided_by"),
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
    // What awaits approval, oldest first: the approvals list and the expiry task read only these.
    index("notification_awaiting_idx").on(table.createdAt).where(sql`status = 'awaiting_approval'`),
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
