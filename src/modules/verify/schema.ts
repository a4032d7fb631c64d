// The verify module's tables: Verify services, their verifications and each code sent. Declared with
// drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { workspace } from "../accounts/schema";

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
