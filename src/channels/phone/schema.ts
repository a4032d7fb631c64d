// The paired phone channel's tables: the companion app's one-time sign-in codes and the webhook events
// it posted. Declared with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { workspace } from "../../modules/accounts/schema";
import { device } from "../../modules/devices/schema";

/** One-time codes a companion app signs in with (`Authorization: Code 123456`). */
export const mobileCode = sqliteTable("mobile_code", {
  code: text("code").primaryKey(),
  workspaceId: integer("workspace_id")
    .notNull()
    .references(() => workspace.id),
  expiresAt: integer("expires_at").notNull(),
});

/** Webhook events a phone posted, by their id, so a re-delivery changes nothing. */
export const phoneEvent = sqliteTable(
  "phone_event",
  {
    id: text("id").primaryKey(),
    deviceId: integer("device_id")
      .notNull()
      .references(() => device.id),
    event: text("event").notNull(),
    receivedAt: integer("received_at").notNull(),
  },
  (table) => [index("phone_event_received_idx").on(table.receivedAt)],
);
