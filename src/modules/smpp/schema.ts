// The SMPP listener's tables (docs/smpp.md): each workspace's credentials, which sends came over
// SMPP (and the receipts they are owed), and the outbox of deliver_sm PDUs waiting for a receiver
// bind. Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { apiKey, workspace } from "../accounts/schema";

/**
 * A workspace's SMPP credentials: its system_id and password (sealed: shown once, then only
 * compared), and the key its submits are made with through the API (created for it, its secret
 * sealed), whose scopes and limits apply to every submit_sm. `incoming`: whether received SMS go
 * to its receiver binds as deliver_sm.
 */
export const smppCredential = sqliteTable("smpp_credential", {
  workspaceId: integer("workspace_id")
    .primaryKey()
    .references(() => workspace.id),
  systemId: text("system_id").notNull().unique(),
  password: text("password").notNull(),
  keyId: integer("key_id").references(() => apiKey.id),
  keySecret: text("key_secret"),
  incoming: integer("incoming", { mode: "boolean" }).notNull().default(true),
  createdAt: integer("created_at").notNull(),
  rotatedAt: integer("rotated_at").notNull(),
});

/**
 * A send that came by submit_sm: which system_id submitted it, the ids its parts were answered
 * with, and whether (registered_delivery) a receipt is owed when it ends. Not a foreign key of
 * the notification: retention removes notifications without knowing of it; pruned after 30 days.
 */
export const smppOrigin = sqliteTable("smpp_origin", {
  notificationId: integer("notification_id").primaryKey(),
  workspaceId: integer("workspace_id")
    .notNull()
    .references(() => workspace.id),
  systemId: text("system_id").notNull(),
  // The submit_sm's registered_delivery (0 none, 1 success or failure, 2 failure only).
  registeredDelivery: integer("registered_delivery").notNull(),
  // How many parts the message came in (their ids are N, N.2 … N.parts).
  parts: integer("parts").notNull(),
  // The receipt's addresses: the submit's source and destination, with their TON and NPI, as JSON.
  addresses: text("addresses").notNull(),
  createdAt: integer("created_at").notNull(),
});

/**
 * deliver_sm PDUs owed to a system_id's receiver binds: receipts and received messages, each
 * written in the unit of work that caused it and sent (by whichever server holds a bind) until its
 * deliver_sm_resp arrives; `dedupe_key` keeps one cause from queueing twice. Dropped after 3 days.
 */
export const smppOutbox = sqliteTable(
  "smpp_outbox",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    systemId: text("system_id").notNull(),
    kind: text("kind", { enum: ["receipt", "message"] }).notNull(),
    dedupeKey: text("dedupe_key").notNull().unique(),
    // The deliver_sm body, base64.
    body: text("body").notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAt: integer("next_at").notNull(),
    // The server sending it now, until when (a lease: another takes it over once it passes).
    claimedBy: text("claimed_by"),
    claimedUntil: integer("claimed_until"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [index("smpp_outbox_due_idx").on(table.systemId, table.nextAt)],
);
