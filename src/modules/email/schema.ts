// The email bridge's table: each workspace's settings for mail turned into SMS (docs/email.md).
// Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { apiKey, workspace } from "../accounts/schema";

/**
 * A workspace's email bridge: which part of a mail is the SMS, the country national numbers are
 * read in, and the secret address for devices that cannot sign in — its token's digest, the key its
 * sends are made with (created for it, its secret sealed here to be used again) and the senders
 * allowed to use it. No row: the defaults (the body, no default country, no secret address).
 */
export const emailSetting = sqliteTable("email_setting", {
  workspaceId: integer("workspace_id")
    .primaryKey()
    .references(() => workspace.id),
  content: text("content").notNull().default("body"),
  defaultCountry: text("default_country"),
  // The secret address's token, as a digest (it is only ever compared), and its last characters.
  secretHash: text("secret_hash").unique(),
  secretHint: text("secret_hint"),
  keyId: integer("key_id").references(() => apiKey.id),
  // Sealed: the secret of key_id, presented on the secret address's behalf.
  keySecret: text("key_secret"),
  // JSON list of lower-case addresses or "@domain" entries allowed to use the secret address.
  senders: text("senders").notNull().default("[]"),
  updatedAt: integer("updated_at").notNull(),
});
