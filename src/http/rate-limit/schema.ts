// The rate limits' table: the counters servers sharing a PostgreSQL database keep in one place.
// Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * On PostgreSQL, the request limits and sign-in throttles of every server in one place: requests
 * counted per bucket (`key:7:m` a key's minute, `key:7:d` its day, `auth:ADDRESS`, `signin:…`) and
 * slot (a second, or a day), checked and counted atomically by the pigeon_admit function, and
 * pruned once expired (shared.ts). SQLite's one server counts in memory.
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
