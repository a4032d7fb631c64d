// The SMSGate-compatible API's tables: its messages and their recipients, its tokens and its settings.
// Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { apiKey, workspace } from "../accounts/schema";
import { device } from "../devices/schema";
import { notification } from "../notifications/schema";

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
