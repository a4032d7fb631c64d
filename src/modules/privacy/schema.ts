// The privacy module's table: the record of each erasure. Declared with drizzle; drizzle-kit reads
// every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { workspace } from "../accounts/schema";

/**
 * Each erasure of one person's data (POST /v1/api/privacy/erase, the dashboard's button): when, by
 * whom (`key:ID` or `user:ID`) and how many rows of each kind went, as JSON. Never the number.
 */
export const erasureLog = sqliteTable(
  "erasure_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    at: integer("at").notNull(),
    actor: text("actor").notNull(),
    counts: text("counts").notNull(),
  },
  (table) => [index("erasure_log_workspace_idx").on(table.workspaceId, table.id)],
);
