// The worker's table: who runs each cluster-wide periodic task, and until when. Declared with drizzle;
// drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Who runs a cluster-wide periodic task (expiry, failover, retries…) until when: servers sharing
 * one database renew their lease each tick, and another takes it over once it expires
 * (src/worker/leadership.ts).
 */
export const lease = sqliteTable("lease", {
  name: text("name").primaryKey(),
  holder: text("holder").notNull(),
  expiresAt: integer("expires_at").notNull(),
});
