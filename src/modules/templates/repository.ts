// Template queries, on the storage seam. A workspace sees its own templates and the system ones.
import type { DeliveryType } from "../../core/kinds";
import { tableRecords } from "../../db/records";
import { template } from "./schema";
import type { Executor, SqlParam } from "../../db/storage";
import type { TemplateRow } from "./model";

export type NewTemplate = typeof template.$inferInsert;

const records = tableRecords(template);
const COLUMNS = records.columns();
/** Templates a workspace can see: its own and the system ones, never deleted ones. */
const VISIBLE = "deleted_at IS NULL AND (workspace_id = ? OR is_system = 1)";

export function createTemplateRepository(db: Executor) {
  const one = async (sql: string, params: SqlParam[]): Promise<TemplateRow | null> => {
    const row = await db.get<Record<string, unknown>>(sql, params);
    return row ? records.record(row) : null;
  };

  return {
    async list(workspaceId: number, opts: { channel?: DeliveryType; offset: number; limit: number }) {
      const where = opts.channel ? `${VISIBLE} AND channel = ?` : VISIBLE;
      const params: SqlParam[] = opts.channel ? [workspaceId, opts.channel] : [workspaceId];
      const rows = await db.all<Record<string, unknown>>(`SELECT ${COLUMNS} FROM template WHERE ${where} ORDER BY id LIMIT ? OFFSET ?`, [
        ...params,
        opts.limit,
        opts.offset,
      ]);
      const total = await db.get<{ n: number }>(`SELECT count(*) AS n FROM template WHERE ${where}`, params);
      return { rows: rows.map(records.record), total: Number(total?.n ?? 0) };
    },

    get: (workspaceId: number, templateId: number) =>
      one(`SELECT ${COLUMNS} FROM template WHERE ${VISIBLE} AND id = ?`, [workspaceId, templateId]),

    /** Any template by id, for the worker (which already knows whose it is). */
    byId: (templateId: number) => one(`SELECT ${COLUMNS} FROM template WHERE id = ?`, [templateId]),

    /** Several templates by id (those that exist), for the worker, in one statement. */
    byIds: async (ids: readonly number[]): Promise<TemplateRow[]> =>
      ids.length === 0
        ? []
        : (
            await db.all<Record<string, unknown>>(`SELECT ${COLUMNS} FROM template WHERE id IN (${ids.map(() => "?").join(", ")})`, [
              ...ids,
            ])
          ).map(records.record),

    /** The workspace's own template with this code. */
    byCode: (workspaceId: number, templateCode: string) =>
      one(`SELECT ${COLUMNS} FROM template WHERE deleted_at IS NULL AND workspace_id = ? AND code = ?`, [workspaceId, templateCode]),

    /** By code: the workspace's own template first, else a system template. */
    visibleByCode: (workspaceId: number, templateCode: string) =>
      one(`SELECT ${COLUMNS} FROM template WHERE ${VISIBLE} AND code = ? ORDER BY is_system LIMIT 1`, [workspaceId, templateCode]),

    async insert(row: NewTemplate): Promise<TemplateRow> {
      const { sql, params } = records.insert(row);
      return (await one(sql, params))!;
    },

    async update(templateId: number, set: Partial<NewTemplate>): Promise<TemplateRow> {
      const { sql, params } = records.assign(set);
      return (await one(`UPDATE template SET ${sql} WHERE id = ? RETURNING ${COLUMNS}`, [...params, templateId]))!;
    },
  };
}

export type TemplateRepository = ReturnType<typeof createTemplateRepository>;
