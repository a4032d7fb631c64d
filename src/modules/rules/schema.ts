// The rules module's tables: inbound rules and the automatic replies they sent. Declared with drizzle;
// drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { workspace } from "../accounts/schema";

/**
 * An inbound rule: what Pigeon does with a message that comes in and matches (a keyword, a regular
 * expression, or any message), in priority order; the first match wins unless it says `continue`.
 * Its actions (reply, webhook, forward, tag) are a JSON object; a webhook action delivers through a
 * webhook subscription of its own (webhook_id).
 */
export const rule = sqliteTable(
  "rule",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    priority: integer("priority").notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    match: text("match", { mode: "json" }).notNull().$type<Record<string, unknown>>(),
    // Delivery types it hears; null: every channel.
    channels: text("channels", { mode: "json" }).$type<string[]>(),
    action: text("action", { mode: "json" }).notNull().$type<Record<string, unknown>>(),
    continueAfter: integer("continue_after", { mode: "boolean" }).notNull().default(false),
    // When it holds ({outside_hours}); null: always.
    whenHolds: text("when_holds", { mode: "json" }).$type<Record<string, unknown>>(),
    // At most one automatic reply per sender within this many seconds.
    replyWindowSeconds: integer("reply_window_seconds").notNull().default(600),
    webhookId: integer("webhook_id"),
    matchedCount: integer("matched_count").notNull().default(0),
    lastMatchedAt: integer("last_matched_at"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [
    uniqueIndex("rule_workspace_name_uq").on(table.workspaceId, table.name),
    index("rule_workspace_priority_idx").on(table.workspaceId, table.priority),
  ],
);

/** The automatic replies rules sent, per sender: the loop protection counts them. */
export const ruleReply = sqliteTable(
  "rule_reply",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id").notNull(),
    ruleId: integer("rule_id").notNull(),
    sender: text("sender").notNull(),
    at: integer("at").notNull(),
  },
  (table) => [index("rule_reply_sender_idx").on(table.workspaceId, table.sender, table.at)],
);
