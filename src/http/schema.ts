// The HTTP layer's own table: the replies kept for Idempotency-Key (the rate limits' counters are in
// rate-limit/schema.ts). Declared with drizzle; drizzle-kit reads every schema.ts in src
// (drizzle.config.ts).
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

// The workspace a kept reply belongs to is declared by the accounts module, a layer above this
// one. A foreign key needs no more of the table it points at than its name and the column's, so
// that much is named here; it is no table of this file (not exported), and drizzle-kit and
// scripts/pg-schema.ts see the accounts module's own.
const workspace = sqliteTable("workspace", { id: integer("id") });

export const idempotencyRecord = sqliteTable(
  "idempotency_record",
  {
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    key: text("key").notNull(),
    route: text("route").notNull(),
    requestHash: text("request_hash").notNull(),
    responseStatus: integer("response_status").notNull(),
    responseBody: text("response_body").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.workspaceId, table.key] }), index("idempotency_created_idx").on(table.createdAt)],
);
