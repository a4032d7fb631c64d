// The HTTP layer's own tables: the replies kept for Idempotency-Key, and the request counters servers
// sharing a PostgreSQL database keep in one place. Declared with drizzle; drizzle-kit reads every
// schema.ts in src (drizzle.config.ts).
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

/**
 * On PostgreSQL, the request limits and sign-in throttles of every server in one place: requests
 * counted per bucket (`key:7:m` a key's minute, `key:7:d` its day, `auth:ADDRESS`, `signin:…`) and
 * slot (a second, or a day), checked and counted atomically by the pigeon_admit function, and
 * pruned once expired (src/http/shared-limits.ts). SQLite's one server counts in memory.
 */
export const rateCounter = sqliteTable(
  "rate_counter",
  {
    bucket: text("bucket").notNull(),
    slot: integer("slot").notNull(),
    n: integer("n").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (table) => [primaryKey({ columns: [table.bucket, table.slot] }), index("rate_counter_expires_idx").on(table.expiresAt)],
);
