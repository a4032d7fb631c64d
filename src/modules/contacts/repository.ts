// Contact queries, prepared once and always scoped by workspace.
import { and, asc, count, eq, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { contact, contactType } from "../../db/schema";

export type ContactRow = typeof contact.$inferSelect;
export type ContactTypeRow = typeof contactType.$inferSelect;

/** Escapes LIKE wildcards so a search for "50%" finds "50%". */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

const ws = sql.placeholder("ws");
const id = sql.placeholder("id");
const pattern = sql.placeholder("pattern");
const digits = sql.placeholder("digits");
const searchWhere = and(
  eq(contact.workspaceId, ws),
  or(
    sql`lower(${contact.name}) LIKE ${pattern} ESCAPE '\\'`,
    sql`lower(coalesce(${contact.email}, '')) LIKE ${pattern} ESCAPE '\\'`,
    sql`${contact.phone} LIKE ${pattern} ESCAPE '\\'`,
    // "415 555" or "(415) 555" should find +14155552671: compare digits with digits.
    sql`(${digits} <> '' AND ${contact.phone} LIKE '%' || ${digits} || '%')`,
  ),
);

export function createContactRepository(db: Db) {
  const page = (where: ReturnType<typeof and>) => ({
    rows: db
      .select()
      .from(contact)
      .where(where)
      .orderBy(asc(contact.id))
      .limit(sql.placeholder("limit"))
      .offset(sql.placeholder("offset"))
      .prepare(),
    total: db.select({ n: count() }).from(contact).where(where).prepare(),
  });
  const listed = page(eq(contact.workspaceId, ws));
  const searched = page(searchWhere);
  const getOne = db
    .select()
    .from(contact)
    .where(and(eq(contact.workspaceId, ws), eq(contact.id, id)))
    .prepare();
  const byPhone = db
    .select()
    .from(contact)
    .where(and(eq(contact.workspaceId, ws), eq(contact.phone, sql.placeholder("phone"))))
    .prepare();

  return {
    list(workspaceId: number, offset: number, limit: number) {
      return { rows: listed.rows.all({ ws: workspaceId, offset, limit }), total: listed.total.get({ ws: workspaceId })!.n };
    },

    search(workspaceId: number, query: string, offset: number, limit: number) {
      const d = query.replace(/\D/g, "");
      const params = { ws: workspaceId, pattern: `%${likeEscape(query.toLowerCase())}%`, digits: d.length >= 3 ? d : "" };
      return { rows: searched.rows.all({ ...params, offset, limit }), total: searched.total.get(params)!.n };
    },

    get(workspaceId: number, contactId: number): ContactRow | null {
      return getOne.get({ ws: workspaceId, id: contactId }) ?? null;
    },

    byPhone(workspaceId: number, phone: string): ContactRow | null {
      return byPhone.get({ ws: workspaceId, phone }) ?? null;
    },

    insert(row: typeof contact.$inferInsert): ContactRow {
      return db.insert(contact).values(row).returning().get();
    },

    update(workspaceId: number, contactId: number, set: Partial<typeof contact.$inferInsert>): ContactRow | null {
      return (
        db
          .update(contact)
          .set(set)
          .where(and(eq(contact.workspaceId, workspaceId), eq(contact.id, contactId)))
          .returning()
          .get() ?? null
      );
    },

    delete(workspaceId: number, contactId: number): boolean {
      return (
        db
          .delete(contact)
          .where(and(eq(contact.workspaceId, workspaceId), eq(contact.id, contactId)))
          .returning({ id: contact.id })
          .all().length > 0
      );
    },

    types(): ContactTypeRow[] {
      return db.select().from(contactType).orderBy(asc(contactType.id)).all();
    },
  };
}

export type ContactRepository = ReturnType<typeof createContactRepository>;
