// The dashboard's table: what a session keeps between two requests when servers share the database.
// Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * On PostgreSQL, what a dashboard session keeps between two requests that may reach different
 * servers: the message shown on the next page (a new key's secret among them) and bulk-send
 * drafts. Sealed with the key; taken once; gone when expired (src/dashboard/scratch.ts). SQLite's
 * one server keeps them in memory.
 */
export const dashboardScratch = sqliteTable(
  "dashboard_scratch",
  {
    id: text("id").primaryKey(),
    sessionId: integer("session_id").notNull(),
    expiresAt: integer("expires_at").notNull(),
    body: text("body").notNull(),
  },
  (table) => [index("dashboard_scratch_expires_idx").on(table.expiresAt)],
);
