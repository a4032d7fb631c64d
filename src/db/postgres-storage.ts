// The storage seam on PostgreSQL (postgres.js, a pool of connections). A unit of work is one
// PostgreSQL transaction on one pooled connection: the current unit travels with the async call
// chain (AsyncLocalStorage), nested units are savepoints on that connection, and steps asked for
// with afterCommit run once it has committed. Outside a unit, a statement runs on any free
// connection in autocommit (one statement is atomic on its own).
//
// Isolation: READ COMMITTED, PostgreSQL's default. Units that must not interleave (a claim, a
// balance) say so in their SQL (`FOR UPDATE`, `SKIP LOCKED`, conditional UPDATEs whose row count
// is checked), as they must on SQLite's single writer anyway. A unit that PostgreSQL aborts for
// a deadlock or a serialization failure is run again from the start, a few times: unit bodies
// hold no network calls, so running one again repeats only database work.
//
// Values come back as SQLite gives them, so that repositories map rows the same way on both:
// `bigint` (millisecond timestamps, counts) and `numeric` (sums) as numbers, JSON kept as text.
import postgres from "postgres";
import type { RunResult, SqlParam, Storage } from "./storage";
import { createUnits, inSavepoint, runAfterCommit, type UnitState } from "./units";

type Sql = postgres.Sql<Record<string, never>>;
/** A PostgreSQL connection pool, as connectPostgres makes it. */
export type PostgresPool = Sql;
type Tx = postgres.TransactionSql<Record<string, never>>;

/** A unit of work in progress: its transaction. */
interface Unit extends UnitState {
  tx: Tx;
}

export interface PostgresStorageOptions {
  /** Where an after-commit step that throws is reported. */
  log?: (message: string, error?: unknown) => void;
  /** How many times a unit aborted by a deadlock or serialization failure is run again (default 5). */
  retries?: number;
}

/** PostgreSQL's codes for a transaction it aborted so that another could go on: run it again. */
const RETRYABLE = new Set(["40001", "40P01"]);

/**
 * The statement with its `?` placeholders numbered as PostgreSQL wants them ($1, $2, …). A `?`
 * inside a quoted string or identifier, or in a comment, is left alone.
 */
export function numberPlaceholders(sql: string): string {
  let out = "";
  let n = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const stop = end === -1 ? sql.length : end + 1;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else if (c === "?") {
      out += `$${++n}`;
    } else {
      out += c;
    }
  }
  return out;
}

/** A connection pool that hands values back in the shapes the repositories expect. */
export function connectPostgres(url: string, options: { max?: number; idleSeconds?: number } = {}): Sql {
  // Integers and numerics as JavaScript numbers: Pigeon's (ids, millisecond times, counts, sums)
  // stay far below 2^53, where a number would start to lose digits.
  const asNumber = { to: 0, from: [20, 21, 23, 26, 700, 701, 1700], serialize: (x: unknown) => String(x), parse: (x: string) => Number(x) };
  return postgres(url, {
    max: options.max ?? 10,
    // A connection idle this long is closed (and opened again when needed).
    idle_timeout: options.idleSeconds ?? 60,
    onnotice: () => {},
    types: { number: asNumber },
    // Each statement's text is prepared once per connection and reused after.
    prepare: true,
    connection: { application_name: "pigeon" },
  }) as unknown as Sql;
}

export function createPostgresStorage(sql: Sql, options: PostgresStorageOptions = {}): Storage {
  const units = createUnits<Unit>();
  const { unitOf } = units;
  const texts = new Map<string, string>();
  const retries = options.retries ?? 5;

  function text(statement: string): string {
    let numbered = texts.get(statement);
    if (numbered === undefined) {
      numbered = numberPlaceholders(statement);
      texts.set(statement, numbered);
    }
    return numbered;
  }

  async function query(statement: string, params: readonly SqlParam[]) {
    const on: Sql | Tx = unitOf()?.tx ?? sql;
    // Booleans are stored as 0/1, as on SQLite (bun:sqlite binds them so).
    const values = params.map((p) => (p === true ? 1 : p === false ? 0 : p)) as postgres.ParameterOrJSON<never>[];
    try {
      return await on.unsafe(text(statement), values, { prepare: true });
    } catch (error) {
      // Which statement failed, without its values (they may be secrets).
      if (error instanceof Error && !("statement" in error)) Object.assign(error, { statement: statement.trim().slice(0, 300) });
      throw error;
    }
  }

  /**
   * A unit on a connection of its own. Its BEGIN is not waited for: postgres.js sends what is asked
   * of a connection in the same turn of the event loop as one write, so BEGIN travels with the
   * unit's first statement and a unit costs one round trip less than sql.begin's.
   */
  async function outer<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      // A fresh unit each attempt: what an aborted attempt asked to follow its commit never runs.
      const steps: (() => void)[] = [];
      const connection = await sql.reserve();
      const begun = connection.unsafe("BEGIN");
      // Waited for below; until then a failure of BEGIN also fails the statements after it.
      begun.catch(() => {});
      const unit: Unit = { tx: connection as unknown as Tx, depth: 0, afterCommit: steps, ended: false };
      try {
        let value: T;
        try {
          value = await units.run(unit, fn);
          await begun;
          await connection.unsafe("COMMIT");
        } catch (error) {
          await connection.unsafe("ROLLBACK").catch(() => {});
          throw error;
        } finally {
          unit.ended = true;
          connection.release();
        }
        runAfterCommit(steps, options.log);
        return value;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (attempt < retries && code !== undefined && RETRYABLE.has(code)) continue;
        throw error;
      }
    }
  }

  function transaction<T>(fn: () => Promise<T>): Promise<T> {
    const unit = unitOf();
    return unit ? inSavepoint(unit, (statement) => unit.tx.unsafe(statement), fn) : outer(fn);
  }

  return {
    dialect: "postgres",
    all: async <T>(statement: string, params: readonly SqlParam[] = []) => [...(await query(statement, params))] as T[],
    get: async <T>(statement: string, params: readonly SqlParam[] = []) => ((await query(statement, params))[0] as T | undefined) ?? null,
    run: async (statement: string, params: readonly SqlParam[] = []): Promise<RunResult> => {
      const result = await query(statement, params);
      return { changes: result.count };
    },
    transaction,
    afterCommit: units.afterCommit,
    get inTransaction() {
      return unitOf() !== null;
    },
  };
}
