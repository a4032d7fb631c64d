// The pools module's tables: sender pools, their members, what each member sent and to whom, and
// sticky senders. Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { workspace } from "../accounts/schema";
import { device } from "../devices/schema";

/**
 * A sender pool: the devices (a phone, one of a phone's SIMs, a cloud number) a send may go out
 * through, and how one is chosen: `sticky` (a recipient keeps the member that last texted them or
 * that they last wrote to), `round_robin` or `least_loaded`. One pool of a workspace may be its
 * default, used by sends that name neither a pool nor a device.
 */
export const pool = sqliteTable(
  "pool",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    strategy: text("strategy", { enum: ["sticky", "round_robin", "least_loaded"] })
      .notNull()
      .default("sticky"),
    // Prefer a member whose number shares the recipient's country calling code (and, for +1, area code).
    geomatch: integer("geomatch", { mode: "boolean" }).notNull().default(false),
    isDefault: integer("is_default", { mode: "boolean" }).notNull().default(false),
    // A member whose carrier fails this many messages in a row is paused for failure_backoff_seconds,
    // doubled each time it is paused again before a message of it goes out.
    failureThreshold: integer("failure_threshold").notNull().default(3),
    failureBackoffSeconds: integer("failure_backoff_seconds").notNull().default(900),
    // Where messages received on its members are posted as Twilio posts them (a Messaging Service's
    // inbound request URL); null: the workspace's own, if any (twilio_account.incoming_url).
    incomingUrl: text("incoming_url"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [uniqueIndex("pool_workspace_name_uq").on(table.workspaceId, table.name)],
);

/** One member of a pool: a device, optionally one SIM of a phone, and the number it sends from when known. */
export const poolMember = sqliteTable(
  "pool_member",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    poolId: integer("pool_id")
      .notNull()
      .references(() => pool.id),
    deviceId: integer("device_id")
      .notNull()
      .references(() => device.id),
    simNumber: integer("sim_number"),
    // E.164; the companion app does not tell its SIMs' numbers, so a phone member may be given it.
    number: text("number"),
    position: integer("position").notNull(),
    // Set aside by the user: skipped until resumed.
    paused: integer("paused", { mode: "boolean" }).notNull().default(false),
    // Carrier-plan caps (null: none): messages a UTC day and a UTC month (segments with
    // count_segments), and distinct recipients a month.
    dailyLimit: integer("daily_limit"),
    monthlyLimit: integer("monthly_limit"),
    countSegments: integer("count_segments", { mode: "boolean" }).notNull().default(false),
    monthlyUniqueRecipients: integer("monthly_unique_recipients"),
    // Carrier failures in a row; paused after failure_threshold of them until paused_until, with the
    // back-off used then (doubled at the next pause; cleared once a message of it goes out).
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    pausedUntil: integer("paused_until"),
    backoffSeconds: integer("backoff_seconds"),
  },
  (table) => [index("pool_member_pool_idx").on(table.poolId, table.position), index("pool_member_device_idx").on(table.deviceId)],
);

/** What each pool member sent per UTC day (`d:2026-11-26`) and month (`m:2026-11`): messages and segments. */
export const poolUsage = sqliteTable(
  "pool_usage",
  {
    memberId: integer("member_id").notNull(),
    period: text("period").notNull(),
    messages: integer("messages").notNull(),
    segments: integer("segments").notNull(),
  },
  (table) => [primaryKey({ columns: [table.memberId, table.period] })],
);

/** The distinct recipients each pool member texted in a UTC month (`2026-11`), for plans that cap them. */
export const poolRecipient = sqliteTable(
  "pool_recipient",
  {
    memberId: integer("member_id").notNull(),
    month: text("month").notNull(),
    recipient: text("recipient").notNull(),
  },
  (table) => [primaryKey({ columns: [table.memberId, table.month, table.recipient] })],
);

/** Sticky senders: the member a recipient keeps, per pool, and since when. */
export const poolSticky = sqliteTable(
  "pool_sticky",
  {
    poolId: integer("pool_id")
      .notNull()
      .references(() => pool.id),
    recipient: text("recipient").notNull(),
    memberId: integer("member_id").notNull(),
    at: integer("at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.poolId, table.recipient] }), index("pool_sticky_member_idx").on(table.memberId)],
);
