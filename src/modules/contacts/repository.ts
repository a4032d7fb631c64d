// Contact queries, on the storage seam, always scoped by workspace.
import { tableRecords } from "../../db/records";
import { contact, contactType } from "./schema";
import type { Executor, SqlParam } from "../../db/storage";

export type ContactRow = typeof contact.$inferSelect;
export type ContactTypeRow = typeof contactType.$inferSelect;

const records = tableRecords(contact);
const COLUMNS = records.columns();
const types = tableRecords(contactType);

/** Escapes LIKE wildcards so a search for "50%" finds "50%". */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A search: name or email (both lowered), the number as typed, or its digits within the number. */
const SEARCH = `workspace_id = ? AND (
  lower(name) LIKE ? ESCAPE '\\' OR lower(coalesce(email, '')) LIKE ? ESCAPE '\\' OR phone LIKE ? ESCAPE '\\'
  OR (? <> '' AND phone LIKE '%' || ? || '%'))`;

export function createContactRepository(db: Executor) {
  const one = async (sql: string, params: SqlParam[]): Promise<ContactRow | null> => {
    const row = await db.get<Record<string, unknown>>(sql, params);
    return row ? records.record(row) : null;
  };
  async function page(where: string, params: SqlParam[], offset: number, limit: number) {
    const rows = await db.all<Record<string, unknown>>(`SELECT ${COLUMNS} FROM contact WHERE ${where} ORDER BY id LIMIT ? OFFSET ?`, [
      ...params,
      limit,
      offset,
    ]);
    const total = await db.get<{ n: number }>(`SELECT count(*) AS n FROM contact WHERE ${where}`, params);
    return { rows: rows.map(records.record), total: Number(total?.n ?? 0) };
  }

  return {
    list: (workspaceId: number, offset: number, limit: number) => page("workspace_id = ?", [workspaceId], offset, limit),

    /** The contacts with a tag: tags are a JSON list of plain strings, so the quoted tag is found as written. */
    withTag: (workspaceId: number, tag: string, offset: number, limit: number) =>
      page("workspace_id = ? AND tags LIKE ? ESCAPE '\\'", [workspaceId, `%${likeEscape(JSON.stringify(tag))}%`], offset, limit),

    search(workspaceId: number, query: string, offset: number, limit: number) {
      const d = query.replace(/\D/g, "");
      const pattern = `%${likeEscape(query.toLowerCase())}%`;
      // "415 555" or "(415) 555" should find +14155552671: compare digits with digits.
      const digits = d.length >= 3 ? d : "";
      return page(SEARCH, [workspaceId, pattern, pattern, pattern, digits, digits], offset, limit);
    },

    get: (workspaceId: number, contactId: number) =>
      one(`SELECT ${COLUMNS} FROM contact WHERE workspace_id = ? AND id = ?`, [workspaceId, contactId]),

    byPhone: (workspaceId: number, phone: string) =>
      one(`SELECT ${COLUMNS} FROM contact WHERE workspace_id = ? AND phone = ?`, [workspaceId, phone]),

    async insert(row: typeof contact.$inferInsert): Promise<ContactRow> {
      const { sql, params } = records.insert(row);
      return (await one(sql, params))!;
    },

    update(workspaceId: number, contactId: number, set: Partial<typeof contact.$inferInsert>): Promise<ContactRow | null> {
      const { sql, params } = records.assign(set);
      return one(`UPDATE contact SET ${sql} WHERE workspace_id = ? AND id = ? RETURNING ${COLUMNS}`, [...params, workspaceId, contactId]);
    },

    delete: async (workspaceId: number, contactId: number): Promise<boolean> =>
      (await db.run("DELETE FROM contact WHERE workspace_id = ? AND id = ?", [workspaceId, contactId])).changes > 0,

    types: async (): Promise<ContactTypeRow[]> =>
      (await db.all<Record<string, unknown>>(`SELECT ${types.columns()} FROM contact_type ORDER BY id`)).map(types.record),
  };
}

export type ContactRepository = ReturnType<typeof createContactRepository>;
