import { and, asc, count, eq, or, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { contact, contactType } from "../../db/schema";

export type ContactRow = typeof contact.$inferSelect;
export type ContactTypeRow = typeof contactType.$inferSelect;

/** Escapes LIKE wildcards so a search for "50%" finds "50%". */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export function createContactRepository(db: Db) {
  function page(where: SQL | undefined, offset: number, limit: number) {
    const rows = db.select().from(contact).where(where).orderBy(asc(contact.id)).limit(limit).offset(offset).all();
    const total = db.select({ n: count() }).from(contact).where(where).get()!.n;
    return { rows, total };
  }

  return {
    list(workspaceId: number, offset: number, limit: number) {
      return page(eq(contact.workspaceId, workspaceId), offset, limit);
    },

    search(workspaceId: number, query: string, offset: number, limit: number) {
      const pattern = `%${likeEscape(query.toLowerCase())}%`;
      const terms = [
        sql`lower(${contact.name}) LIKE ${pattern} ESCAPE '\\'`,
        sql`lower(coalesce(${contact.email}, '')) LIKE ${pattern} ESCAPE '\\'`,
        sql`${contact.phone} LIKE ${pattern} ESCAPE '\\'`,
      ];
      // "415 555" or "(415) 555" should find +14155552671: compare digits with digits.
      const digits = query.replace(/\D/g, "");
      if (digits.length >= 3) terms.push(sql`${contact.phone} LIKE ${`%${digits}%`}`);
      return page(and(eq(contact.workspaceId, workspaceId), or(...terms)), offset, limit);
    },

    get(workspaceId: number, id: number): ContactRow | null {
      return db.select().from(contact).where(and(eq(contact.workspaceId, workspaceId), eq(contact.id, id))).get() ?? null;
    },

    byPhone(workspaceId: number, phone: string): ContactRow | null {
      return db.select().from(contact).where(and(eq(contact.workspaceId, workspaceId), eq(contact.phone, phone))).get() ?? null;
    },

    insert(row: typeof contact.$inferInsert): ContactRow {
      return db.insert(contact).values(row).returning().get();
    },

    update(workspaceId: number, id: number, set: Partial<typeof contact.$inferInsert>): ContactRow | null {
      return db.update(contact).set(set).where(and(eq(contact.workspaceId, workspaceId), eq(contact.id, id))).returning().get() ?? null;
    },

    delete(workspaceId: number, id: number): boolean {
      return db.delete(contact).where(and(eq(contact.workspaceId, workspaceId), eq(contact.id, id))).returning({ id: contact.id }).all().length > 0;
    },

    types(): ContactTypeRow[] {
      return db.select().from(contactType).orderBy(asc(contactType.id)).all();
    },
  };
}

export type ContactRepository = ReturnType<typeof createContactRepository>;
