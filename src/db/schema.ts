// The database's own table, and where the rule for every table is kept: each module (a channel,
// a layer) declares its tables in a schema.ts beside it, drizzle-kit reads them all
// (drizzle.config.ts) and turns a change into an SQL migration (`bun run db:generate`), and the
// binary applies the migrations from their embedded copies at start-up. Times are stored as
// integer milliseconds since the epoch (UTC) and formatted at the edge. Nothing in src/db imports
// a module's schema: what it does to every table it does by their names (db/copy.ts).
import { sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Facts about the installation as a whole, one row per name. `key_fingerprint` records which
 * PIGEON_KEY_FILE seals this database's secrets, so a server started with another key refuses to
 * run instead of failing on every sealed value (src/db/key-check.ts).
 */
export const instanceSetting = sqliteTable("instance_setting", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
});
