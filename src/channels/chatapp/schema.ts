// The chat-app channel's table: statuses that came before the message they are about. Declared with
// drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { device } from "../../modules/devices/schema";

/**
 * Platform statuses that arrived before we recorded the message id they are about (the platform
 * can answer a send and report on it faster than we write the answer down); applied then.
 */
export const statusBacklog = sqliteTable(
  "status_backlog",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    deviceId: integer("device_id")
      .notNull()
      .references(() => device.id),
    externalId: text("external_id").notNull(),
    payload: text("payload", { mode: "json" }).notNull().$type<Record<string, unknown>>(),
    receivedAt: integer("received_at").notNull(),
  },
  (table) => [index("status_backlog_external_idx").on(table.externalId, table.deviceId)],
);
