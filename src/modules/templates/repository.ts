import { and, asc, count, eq, isNull, or, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { template } from "../../db/schema";

export type TemplateRow = typeof template.$inferSelect;
export type NewTemplate = typeof template.$inferInsert;

/** Templates a workspace can see: its own and the system ones, never deleted ones. */
const visible = (workspaceId: number) =>
  and(isNull(template.deletedAt), or(eq(template.workspaceId, workspaceId), eq(template.isSystem, 1)));

export function createTemplateRepository(db: Db) {
  return {
    list(workspaceId: number, opts: { channel?: "sms" | "chatapp"; offset: number; limit: number }) {
      const where: SQL | undefined = opts.channel ? and(visible(workspaceId), eq(template.channel, opts.channel)) : visible(workspaceId);
      const rows = db.select().from(template).where(where).orderBy(asc(template.id)).limit(opts.limit).offset(opts.offset).all();
      const total = db.select({ n: count() }).from(template).where(where).get()!.n;
      return { rows, total };
    },

    get(workspaceId: number, id: number): TemplateRow | null {
      return db.select().from(template).where(and(visible(workspaceId), eq(template.id, id))).get() ?? null;
    },

    byCode(workspaceId: number, code: string): TemplateRow | null {
      return (
        db
          .select()
          .from(template)
          .where(and(isNull(template.deletedAt), eq(template.workspaceId, workspaceId), eq(template.code, code)))
          .get() ?? null
      );
    },

    /** By code: the workspace's own template first, else a system template. */
    visibleByCode(workspaceId: number, code: string): TemplateRow | null {
      return (
        db
          .select()
          .from(template)
          .where(and(visible(workspaceId), eq(template.code, code)))
          .orderBy(asc(template.isSystem))
          .get() ?? null
      );
    },

    insert(row: NewTemplate): TemplateRow {
      return db.insert(template).values(row).returning().get();
    },

    update(id: number, set: Partial<NewTemplate>): TemplateRow {
      return db.update(template).set(set).where(eq(template.id, id)).returning().get();
    },
  };
}

export type TemplateRepository = ReturnType<typeof createTemplateRepository>;
