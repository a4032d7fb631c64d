// The credits module's table: every change to a workspace's credit balance. Declared with drizzle;
// drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { workspace } from "../accounts/schema";
import { notification } from "../notifications/schema";

export const creditLedger = sqliteTable(
  "credit_ledger",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    // Positive for top-ups and refunds, negative for debits.
    delta: integer("delta").notNull(),
    reason: text("reason", { enum: ["topup", "debit", "refund", "adjustment"] }).notNull(),
    notificationId: integer("notification_id").references(() => notification.id),
    note: text("note"),
    createdAt: integer("created_at").notNull(),
  },
  (table) => [
    index("credit_ledger_workspace_idx").on(table.workspaceId, table.createdAt),
    index("credit_ledger_notification_idx").on(table.notificationId),
  ],
);
