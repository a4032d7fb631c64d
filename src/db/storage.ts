// The storage seam: what the domain asks of a database, whichever one it is. Repositories run
// their SQL through an Executor (`all`, `get`, `run`, each a promise); everything that must happen
// together runs as one unit of work (`transaction`), which nests as savepoints and can ask for
// steps to follow its commit (`afterCommit`). The SQLite implementation is src/db/sqlite-storage.ts.

export type Dialect = "sqlite" | "postgres";

/** A value bound to a `?` placeholder. */
export type SqlParam = string | number | bigint | boolean | null | Uint8Array;

export interface RunResult {
  /** Rows the statement inserted, changed or deleted (a new row's id comes from RETURNING). */
  changes: number;
}

/** Runs one statement with its parameters, in the current unit of work if there is one. */
export interface Executor {
  readonly dialect: Dialect;
  /** Every row the statement returns. */
  all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  /** The first row the statement returns, or null. */
  get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | null>;
  /** A statement run for its effect. */
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult>;
}

export interface Storage extends Executor {
  /**
   * Runs `fn` as one unit of work: everything it writes commits together once it resolves, or
   * none of it when it throws (the error is rethrown). Called inside another unit of work it is a
   * savepoint of that one: its writes are undone alone when it throws, and commit with the outer
   * unit otherwise. Other tasks never see a unit's writes before it commits. Its body should not
   * wait on the network: a unit holds the database's writer while it runs.
   */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Inside a unit of work: runs `callback` once the unit has committed, and never if it (or the
   * savepoint that asked) is rolled back. Outside one there is nothing to wait for: it runs now.
   */
  afterCommit(callback: () => void): void;
  /** Whether the caller runs inside a unit of work. */
  readonly inTransaction: boolean;
}

/**
 * A planner hint naming the index a query must use, where the dialect takes one (SQLite's
 * INDEXED BY, for partial indexes its planner would otherwise pass over); nothing elsewhere.
 */
export function indexHint(dialect: Dialect, index: string): string {
  return dialect === "sqlite" ? `INDEXED BY ${index}` : "";
}

/**
 * A text field of a JSON column, in the dialect's own words: SQLite's `json_extract(column,
 * '$.key')`, PostgreSQL's `(column::json ->> 'key')`. `key` is a fixed name written in the code,
 * never a value from a request.
 */
export function jsonField(dialect: Dialect, column: string, key: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`jsonField: ${key} is not a plain key`);
  return dialect === "sqlite" ? `json_extract(${column}, '$.${key}')` : `(${column}::json ->> '${key}')`;
}

/**
 * LIKE without regard to letter case: SQLite's LIKE already ignores the case of ASCII letters,
 * PostgreSQL's ILIKE ignores it for every letter.
 */
export function likeAnyCase(dialect: Dialect): string {
  return dialect === "sqlite" ? "LIKE" : "ILIKE";
}

/** A JSON column's text without one of its keys: SQLite's json_remove, PostgreSQL's jsonb `-`. */
export function jsonWithout(dialect: Dialect, column: string, key: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`jsonWithout: ${key} is not a plain key`);
  return dialect === "sqlite" ? `json_remove(${column}, '$.${key}')` : `((${column})::jsonb - '${key}')::text`;
}

/** Whether a statement failed on a UNIQUE constraint or index (SQLite's or PostgreSQL's error). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | null;
  if (!e) return false;
  return e.code === "SQLITE_CONSTRAINT_UNIQUE" || e.code === "23505" || /UNIQUE constraint failed/.test(e.message ?? "");
}

/**
 * A row lock for the rest of the unit of work, where the dialect has one: a count-then-insert that
 * must not be overtaken locks its owner's row first. On PostgreSQL it is FOR NO KEY UPDATE, the
 * lock an UPDATE of the row takes: it waits for another holder of the row, but not for the KEY
 * SHARE lock a foreign-key check takes on the row it points to. FOR UPDATE would: two units that
 * each inserted a row pointing at a workspace (an idempotency claim) and then each asked for the
 * workspace's FOR UPDATE would wait on each other, a deadlock. SQLite needs none (one writer at a
 * time), and has no such clause.
 */
export function forUpdate(dialect: Dialect): string {
  return dialect === "sqlite" ? "" : "FOR NO KEY UPDATE";
}

/** PostgreSQL's limit on the parameters of one statement. */
const MAX_PARAMS = 65_535;

/**
 * Inserts `rows` with `head` (`INSERT INTO t (…) VALUES`), each row written as `row` (its `?`
 * placeholders, and any values written into the statement) with `params(row)`. On PostgreSQL one
 * statement for as many rows as its parameter limit allows (a round trip saved a row); on SQLite a
 * statement a row (no round trip to save, and its RETURNING order over several rows is not
 * promised). With `returning` (`RETURNING id`), the rows returned, in the order of `rows`:
 * PostgreSQL's INSERT … VALUES returns them in the order of its VALUES.
 */
export async function insertRows<T, R = never>(
  db: Executor,
  head: string,
  rows: readonly T[],
  params: (row: T) => SqlParam[],
  options: { row?: string; returning?: string } = {},
): Promise<R[]> {
  if (rows.length === 0) return [];
  const width = params(rows[0]).length;
  const row = options.row ?? `(${Array(width).fill("?").join(", ")})`;
  const tail = options.returning ? ` ${options.returning}` : "";
  const out: R[] = [];
  const size = db.dialect === "sqlite" ? 1 : Math.max(1, Math.floor(MAX_PARAMS / width));
  // One row a statement: the same text every time (made once, so its prepared statement is found
  // without hashing a new string a row).
  const single = `${head} ${row}${tail}`;
  for (let i = 0; i < rows.length; i += size) {
    const part = rows.slice(i, i + size);
    const statement = part.length === 1 ? single : `${head} ${part.map(() => row).join(", ")}${tail}`;
    const values = part.flatMap(params);
    if (options.returning) out.push(...(await db.all<R>(statement, values)));
    else await db.run(statement, values);
  }
  return out;
}
