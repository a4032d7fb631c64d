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
