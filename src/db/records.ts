// A table's rows as records, for repositories on the storage seam that keep the schema's shape
// (camelCase fields, JSON columns as values, booleans as booleans). Built once per table from the
// drizzle schema's column list, so the SQL a repository writes and the record type it returns
// cannot drift from the schema: `columns` is the select list, `record` turns a row into the
// schema's select type, `assign` and `insert` turn a partial record into SQL and its parameters.
import { getTableColumns, getTableName, type Table } from "drizzle-orm";
import type { SqlParam } from "./storage";

interface Field {
  key: string;
  name: string;
  kind: "json" | "boolean" | "plain";
}

export interface TableRecords<T extends Table> {
  /** The table's SQL name. */
  readonly table: string;
  /** Every column, as `column AS "field"`, for a select list (prefixed with `alias.` when given). */
  columns(alias?: string): string;
  /** A row selected with `columns()` as the schema's record. */
  record(row: Record<string, unknown>): T["$inferSelect"];
  /** `col = ?, …` and its parameters, for the fields `set` has. */
  assign(set: Partial<T["$inferInsert"]>): { sql: string; params: SqlParam[] };
  /** An INSERT of the fields `values` has (the others take the table's defaults), returning every column. */
  insert(values: Partial<T["$inferInsert"]>): { sql: string; params: SqlParam[] };
}

/** A value as a parameter: JSON columns as their text, booleans as 0/1. */
function toParam(field: Field, value: unknown): SqlParam {
  if (value === null || value === undefined) return null;
  if (field.kind === "json") return JSON.stringify(value);
  if (field.kind === "boolean") return value ? 1 : 0;
  return value as SqlParam;
}

function fromColumn(field: Field, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  // A driver that parses JSON itself (PostgreSQL's json columns) hands over the value.
  if (field.kind === "json") return typeof value === "string" ? JSON.parse(value) : value;
  if (field.kind === "boolean") return value === true || value === 1 || value === "1" || value === "t";
  return value;
}

export function tableRecords<T extends Table>(table: T): TableRecords<T> {
  const fields: Field[] = Object.entries(getTableColumns(table)).map(([key, column]) => ({
    key,
    name: column.name,
    kind: column.columnType === "SQLiteTextJson" ? "json" : column.columnType === "SQLiteBoolean" ? "boolean" : "plain",
  }));
  const byKey = new Map(fields.map((f) => [f.key, f]));
  const name = getTableName(table);
  const lists = new Map<string, string>();

  const present = (values: Record<string, unknown>) =>
    Object.entries(values).flatMap(([key, value]) => {
      const field = byKey.get(key);
      if (!field) throw new Error(`${name} has no field ${key}`);
      return value === undefined ? [] : [{ field, value }];
    });

  function columns(alias?: string): string {
    const prefix = alias ? `${alias}.` : "";
    let list = lists.get(prefix);
    if (!list) {
      list = fields.map((f) => `${prefix}${f.name} AS "${f.key}"`).join(", ");
      lists.set(prefix, list);
    }
    return list;
  }

  return {
    table: name,
    columns,
    record(row) {
      const out: Record<string, unknown> = {};
      for (const f of fields) out[f.key] = fromColumn(f, row[f.key]);
      return out as T["$inferSelect"];
    },
    assign(set) {
      const given = present(set as Record<string, unknown>);
      return {
        sql: given.map(({ field }) => `${field.name} = ?`).join(", "),
        params: given.map(({ field, value }) => toParam(field, value)),
      };
    },
    insert(values) {
      const given = present(values as Record<string, unknown>);
      const names = given.map(({ field }) => field.name).join(", ");
      const marks = given.map(() => "?").join(", ");
      return {
        sql: `INSERT INTO ${name} (${names}) VALUES (${marks}) RETURNING ${columns()}`,
        params: given.map(({ field, value }) => toParam(field, value)),
      };
    },
  };
}
