// The email bridge's table: each workspace's settings for mail turned into SMS (docs/email.md).
// Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
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
  // JSON list of addresses every received message is forwarded to (none: no forwarding).
  forwardTo: text("forward_to").notNull().default("[]"),
  // The domain of the forwards' Reply-To addresses: one that reaches the SMTP listener (null: no Reply-To).
  replyDomain: text("reply_domain"),
  // Tell a mail's sender when a send it made fails later (a delivery status notification).
  dsn: integer("dsn", { mode: "boolean" }).notNull().default(false),
  // Email forward_to when a message fails.
  forwardFailures: integer("forward_failures", { mode: "boolean" }).notNull().default(false),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * Email Pigeon sends through the relay (PIGEON_SMTP_RELAY_URL): forwards of received messages,
 * each written in the unit of work that stored the message and sent after it by a task, retried
 * with backoff as webhooks are. `dedupe_key` names what it forwards, so one message is never
 * queued twice for the same reason.
 */
export const emailOutbox = sqliteTable(
  "email_outbox",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    dedupeKey: text("dedupe_key").notNull().unique(),
    // JSON list of addresses.
    recipients: text("recipients").notNull(),
    subject: text("subject").notNull(),
    body: text("body").notNull(),
    replyTo: text("reply_to"),
    status: text("status", { enum: ["pending", "sent", "failed"] })
      .notNull()
      .default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAt: integer("next_at").notNull(),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    sentAt: integer("sent_at"),
  },
  (table) => [index("email_outbox_due_idx").on(table.nextAt).where(sql`status = 'pending'`)],
);

/**
 * Which mail a send came from, for the delivery status notification owed to its sender if it
 * fails later: written after the send when the workspace has `dsn` on, forgotten after 30 days.
 * Not a foreign key of the notification: retention removes notifications without knowing of it.
 */
export const emailOrigin = sqliteTable("email_origin", {
  notificationId: integer("notification_id").primaryKey(),
  workspaceId: integer("workspace_id")
    .notNull()
    .references(() => workspace.id),
  mailFrom: text("mail_from").notNull(),
  subject: text("subject").notNull(),
  createdAt: integer("created_at").notNull(),
});
