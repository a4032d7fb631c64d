// The events module's table: the outbox every event is written to. Declared with drizzle; drizzle-kit
// reads every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { workspace } from "../accounts/schema";

/** The outbox: every event, written in the transaction of the change that caused it. */
export const event = sqliteTable(
  "event",
  {
    id: text("id").primaryKey(),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    type: text("type").notNull(),
    data: text("data", { mode: "json" }).notNull().$type<Record<string, unknown>>(),
    createdAt: integer("created_at").notNull(),
    // Insertion order within a millisecond, as webhook_delivery.seq (rows from before it: their rowid).
    seq: integer("seq"),
  },
  (table) => [index("event_workspace_idx").on(table.workspaceId, table.createdAt)],
);
