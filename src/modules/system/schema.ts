// The system module's table: the row the health check writes to learn whether the disk takes writes.
// Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { integer, sqliteTable } from "drizzle-orm/sqlite-core";

/**
 * One row that /health rewrites to learn whether the disk takes writes again after it was full
 * (src/lib/disk.ts), when nothing else has written since.
 */
export const storageProbe = sqliteTable("storage_probe", {
  id: integer("id").primaryKey(),
  at: integer("at").notNull(),
});
