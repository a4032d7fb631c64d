// The safety module's tables: a workspace's safe-sending rules, the numbers it must not text, and
// every opt-out and opt-in. Declared with drizzle; drizzle-kit reads every schema.ts in src
// (drizzle.config.ts).
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { DELIVERY_TYPES, type DeviceKind } from "../../core/kinds";
import { workspace } from "../accounts/schema";

/** Where an opt-out or opt-in came from. */
export const OPT_OUT_SOURCES = ["keyword", "api", "dashboard", "import"] as const;

export type OptOutSource = (typeof OPT_OUT_SOURCES)[number];

/**
 * A workspace's safe-sending rules. A null column means "the default" (see
 * src/modules/safety/settings.ts), so defaults can improve without a migration.
 */
export const workspaceSetting = sqliteTable("workspace_setting", {
  workspaceId: integer("workspace_id")
    .primaryKey()
    .references(() => workspace.id),
  // Quiet hours as "HH:MM" in the recipient's local time; both null when there are none.
  quietStart: text("quiet_start"),
  quietEnd: text("quiet_end"),
  optOutKeywords: text("opt_out_keywords", { mode: "json" }).$type<string[]>(),
  optInKeywords: text("opt_in_keywords", { mode: "json" }).$type<string[]>(),
  helpKeywords: text("help_keywords", { mode: "json" }).$type<string[]>(),
  // Replies to the keywords; an empty string sends none.
  optOutReply: text("opt_out_reply"),
  optInReply: text("opt_in_reply"),
  helpReply: text("help_reply"),
  // Failover order (device kinds) for sends that name none.
  defaultRoutes: text("default_routes", { mode: "json" }).$type<DeviceKind[]>(),
  // The workspace's own IANA time zone (business hours of its inbound rules); null: UTC.
  timeZone: text("time_zone"),
  // The country (ISO 3166 alpha-2) a national number is read in, where a number without its
  // country code comes in (the API, SMPP, the email bridge); null: numbers need their code.
  defaultCountry: text("default_country"),
  // Whether end-to-end encrypted sends are allowed (their recipients cannot be checked against
  // opt-outs); null: the default, off.
  encryptedSends: integer("encrypted_sends", { mode: "boolean" }),
  updatedAt: integer("updated_at").notNull(),
});

/** Numbers a workspace must not text: one row per number suppressed now. */
export const suppression = sqliteTable(
  "suppression",
  {
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    phone: text("phone").notNull(),
    optedOutAt: integer("opted_out_at").notNull(),
    source: text("source", { enum: OPT_OUT_SOURCES }).notNull(),
    reason: text("reason"),
  },
  (table) => [primaryKey({ columns: [table.workspaceId, table.phone] })],
);

/** Every opt-out and opt-in, kept for the audit. */
export const optOutEvent = sqliteTable(
  "opt_out_event",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    phone: text("phone").notNull(),
    action: text("action", { enum: ["opted_out", "opted_in"] }).notNull(),
    source: text("source", { enum: OPT_OUT_SOURCES }).notNull(),
    reason: text("reason"),
    // The inbound message that carried the keyword.
    threadMessageId: integer("thread_message_id"),
    channel: text("channel", { enum: DELIVERY_TYPES }),
    deviceId: integer("device_id"),
    at: integer("at").notNull(),
  },
  (table) => [
    index("opt_out_event_workspace_idx").on(table.workspaceId, table.id),
    index("opt_out_event_phone_idx").on(table.workspaceId, table.phone, table.id),
  ],
);
