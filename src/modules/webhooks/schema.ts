// The webhooks module's tables: subscriptions, the deliveries of events to them, and each attempt.
// Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { workspace } from "../accounts/schema";
import { event } from "../events/schema";

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
