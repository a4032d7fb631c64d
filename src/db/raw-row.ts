// The row type bun:sqlite returns for a drizzle table (`SELECT *` on a prepared statement):
// snake_case column names, JSON columns as their text, booleans as 0/1. Derived from the schema,
// so the hot paths that skip drizzle cannot drift from it.
import type { Column, Table } from "drizzle-orm";

type StoredValue<C extends Column> = C["_"]["columnType"] extends "SQLiteBoolean"
  ? number
  : C["_"]["columnType"] extends "SQLiteTextJson"
    ? string
    : C["_"]["data"];

type Stored<C extends Column> = C["_"]["notNull"] extends true ? StoredValue<C> : StoredValue<C> | null;

export type RawRow<T extends Table> = {
  [K in keyof T["_"]["columns"] as T["_"]["columns"][K]["_"]["name"]]: Stored<T["_"]["columns"][K]>;
};
