// The accounts module's tables: plans, accounts, their workspaces and the workspaces' API keys.
// Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

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
    // What the key may do (src/core/scopes.ts): null, every scope (what keys made before scopes had).
    scopes: text("scopes", { mode: "json" }).$type<string[]>(),
    // Whom it may send to: null or "anyone", "contacts", "tag:<tag>", or a list of E.164 numbers.
    recipients: text("recipients", { mode: "json" }).$type<string | string[]>(),
    // Sends it may have accepted in one UTC day; null, no cap.
    dailyCap: integer("daily_cap"),
    // From this instant (ms) the key is refused; null, never.
    expiresAt: integer("expires_at"),
    // A key whose sends wait for a person's approval (stored awaiting_approval, not dispatched).
    needsApproval: integer("needs_approval", { mode: "boolean" }).notNull().default(false),
  },
  (table) => [index("api_key_workspace_idx").on(table.workspaceId)],
);

/**
 * Sends accepted through a key in one UTC day (`day`: days since the epoch), for its daily cap.
 * One row a key a day, made by the day's first send and held for the accept's unit of work, so
 * that replicas count one after another.
 */
export const apiKeyDay = sqliteTable(
  "api_key_day",
  {
    keyId: integer("key_id")
      .notNull()
      .references(() => apiKey.id),
    day: integer("day").notNull(),
    sends: integer("sends").notNull().default(0),
  },
  (table) => [primaryKey({ columns: [table.keyId, table.day] })],
);
