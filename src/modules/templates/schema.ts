// The templates module's table: message templates, the system's and each workspace's. Declared with
// drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { DELIVERY_TYPES } from "../../core/kinds";
import { account, workspace } from "../accounts/schema";

export const template = sqliteTable(
  "template",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    guid: text("guid").notNull().unique(),
    // null for system templates, which every workspace can read and none can change.
    workspaceId: integer("workspace_id").references(() => workspace.id),
    accountId: integer("account_id").references(() => account.id),
    code: text("code").notNull(),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    body: text("body").notNull(),
    channel: text("channel", { enum: DELIVERY_TYPES }).notNull(),
    // A boolean to the domain. Its default stays the 0 the first migration wrote (drizzle-kit compares
    // it with the recorded snapshot, and `false` would rebuild the table for nothing).
    isSystem: integer("is_system", { mode: "boolean" })
      .notNull()
      .default(0 as unknown as boolean),
    status: text("status").notNull().default("active"),
    variables: text("variables", { mode: "json" }).notNull().$type<string[]>(),
    // Chat-app templates: the platform's template id, language, category and business account.
    language: text("language"),
    category: text("category"),
    externalId: text("external_id"),
    businessAccountId: text("business_account_id"),
    components: text("components", { mode: "json" }).$type<unknown[]>(),
    statusReason: text("status_reason"),
    // Chat-app templates paused for low quality: when to ask the platform again.
    recheckAt: integer("recheck_at"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  (table) => [
    index("template_workspace_idx").on(table.workspaceId, table.channel),
    uniqueIndex("template_workspace_code_uq").on(table.workspaceId, table.code).where(sql`${table.deletedAt} IS NULL`),
  ],
);
