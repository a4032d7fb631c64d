// Template queries, prepared once. A workspace sees its own templates and the system ones.
import { and, asc, count, eq, isNull, or, sql } from "drizzle-orm";
import { DELIVERY_TYPES, type DeliveryType } from "../../channels/kinds";
import type { Db } from "../../db/client";
import { template } from "../../db/schema";

export type TemplateRow = typeof template.$inferSelect;
export type NewTemplate = typeof template.$inferInsert;

const ws = sql.placeholder("ws");
const id = sql.placeholder("id");
const code = sql.placeholder("code");
/** Templates a workspace can see: its own and the system ones, never deleted ones. */
const visible = and(isNull(template.deletedAt), or(eq(template.workspaceId, ws), eq(template.isSystem, 1)));

export function createTemplateRepository(db: Db) {
  const listQuery = (where: ReturnType<typeof and>) => ({
    rows: db
      .select()
      .from(template)
      .where(where)
      .orderBy(asc(template.id))
      .limit(sql.placeholder("limit"))
      .offset(sql.placeholder("offset"))
      .prepare(),
    total: db.select({ n: count() }).from(template).where(where).prepare(),
  });
  // One prepared list per channel, and one across them.
  const lists = {
    any: listQuery(visible),
    ...(Object.fromEntries(DELIVERY_TYPES.map((c) => [c, listQuery(and(visible, eq(template.channel, c)))])) as Record<
      DeliveryType,
      ReturnType<typeof listQuery>
    >),
  };
  const getOne = db
    .select()
    .from(template)
    .where(and(visible, eq(template.id, id)))
    .prepare();
  const getAny = db.select().from(template).where(eq(template.id, id)).prepare();
  const ownByCode = db
    .select()
    .from(template)
    .where(and(isNull(template.deletedAt), eq(template.workspaceId, ws), eq(template.code, code)))
    .prepare();
  const visibleByCode = db
    .select()
    .from(template)
    .where(and(visible, eq(template.code, code)))
    .orderBy(asc(template.isSystem))
    .prepare();

  return {
    list(workspaceId: number, opts: { channel?: DeliveryType; offset: number; limit: number }) {
      const q = lists[opts.channel ?? "any"];
      return { rows: q.rows.all({ ws: workspaceId, limit: opts.limit, offset: opts.offset }), total: q.total.get({ ws: workspaceId })!.n };
    },

    get(workspaceId: number, templateId: number): TemplateRow | null {
      return getOne.get({ ws: workspaceId, id: templateId }) ?? null;
    },

    /** Any template by id, for the worker (which already knows whose it is). */
    byId(templateId: number): TemplateRow | null {
      return getAny.get({ id: templateId }) ?? null;
    },

    /** The workspace's own template with this code. */
    byCode(workspaceId: number, templateCode: string): TemplateRow | null {
      return ownByCode.get({ ws: workspaceId, code: templateCode }) ?? null;
    },

    /** By code: the workspace's own template first, else a system template. */
    visibleByCode(workspaceId: number, templateCode: string): TemplateRow | null {
      return visibleByCode.get({ ws: workspaceId, code: templateCode }) ?? null;
    },

    insert(row: NewTemplate): TemplateRow {
      return db.insert(template).values(row).returning().get();
    },

    update(templateId: number, set: Partial<NewTemplate>): TemplateRow {
      return db.update(template).set(set).where(eq(template.id, templateId)).returning().get();
    },
  };
}

export type TemplateRepository = ReturnType<typeof createTemplateRepository>;
