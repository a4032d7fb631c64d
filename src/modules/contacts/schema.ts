// The contacts module's tables: a workspace's contacts and the types they are filed under. Declared
// with drizzle; drizzle-kit reads every schema.ts in src (drizzle.config.ts).
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { workspace } from "../accounts/schema";

export const contactType = sqliteTable("contact_type", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  code: text("code").notNull().unique(),
  name: text("name").notNull(),
  description: text("description").notNull(),
});

export const contact = sqliteTable(
  "contact",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workspaceId: integer("workspace_id")
      .notNull()
      .references(() => workspace.id),
    name: text("name").notNull(),
    phone: text("phone").notNull(),
    email: text("email"),
    typeId: integer("type_id").references(() => contactType.id),
    // IANA zone the contact lives in: quiet hours are read in it (else in the number's country's).
    timezone: text("timezone"),
    // Labels the workspace gives the contact (by hand, or an inbound rule's `tag` action).
    tags: text("tags", { mode: "json" }).notNull().$type<string[]>().default(sql`'[]'`),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (table) => [
    uniqueIndex("contact_workspace_phone_uq").on(table.workspaceId, table.phone),
    index("contact_workspace_name_idx").on(table.workspaceId, table.name),
  ],
);
