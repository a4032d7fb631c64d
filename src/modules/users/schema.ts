// The users module's tables: the dashboard's people, their signed-in browsers and the owner's set-up
// link. Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { account, workspace } from "../accounts/schema";

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
    // Two-factor sign-in (TOTP): the secret once confirmed, sealed with the key; the one being
    // enrolled, sealed too, until a code confirms it; the last step a code was accepted for (a
    // code is not accepted twice); when it was turned on (null: off).
    totpSecret: text("totp_secret"),
    totpPending: text("totp_pending"),
    totpLastStep: integer("totp_last_step"),
    totpEnabledAt: integer("totp_enabled_at"),
  },
  (table) => [index("dashboard_user_account_idx").on(table.accountId)],
);

/** A user's one-time recovery codes, as keyed digests; each signs in once instead of a code. */
export const dashboardRecoveryCode = sqliteTable(
  "dashboard_recovery_code",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => dashboardUser.id),
    codeHash: text("code_hash").notNull(),
    createdAt: integer("created_at").notNull(),
    usedAt: integer("used_at"),
  },
  (table) => [index("dashboard_recovery_code_user_idx").on(table.userId)],
);

/** An account's sign-in rule set by an owner: whether every user must use two-factor sign-in. */
export const dashboardAccountPolicy = sqliteTable("dashboard_account_policy", {
  accountId: integer("account_id")
    .primaryKey()
    .references(() => account.id),
  twoFactorRequired: integer("two_factor_required", { mode: "boolean" }).notNull().default(false),
  updatedAt: integer("updated_at").notNull(),
});

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
