// The storage seam on SQLite (bun:sqlite, one connection, WAL). bun:sqlite is synchronous and its
// own `transaction(fn)` commits at the first `await` inside an async fn, so units of work are kept
// here instead: the current unit travels with the async call chain (AsyncLocalStorage), the
// connection's one writer is taken by a first-in-first-out queue, and the units that ask for it in
// the same turn of the event loop share one transaction, each in its own savepoint (the group
// commit: many units, one fsync). Every unit is on disk before its promise resolves: on a file in
// WAL mode the commit itself does not wait for the disk (synchronous = NORMAL) and the storage
// flushes the WAL file on another thread (fdatasync), so the next batch runs while the disk takes
// the last one; a unit settles, and its after-commit steps run, once a flush begun after its commit
// has ended. One flush is in flight at a time; every batch committed meanwhile shares the next one.
// A read outside any unit waits for a batch in progress, so it never sees a unit's writes before
// they commit (it may see them before the flush ends: a power cut then loses them unanswered, as
// an uncommitted write is lost).
import type { Database, Statement } from "bun:sqlite";
import { open, type FileHandle } from "node:fs/promises";
import type { RunResult, SqlParam, Storage } from "./storage";
import { createUnits, inSavepoint, runAfterCommit, type UnitState as Unit } from "./units";

interface Queued {
  fn: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  unit: Unit;
  outcome?: { ok: true; value: unknown } | { ok: false; error: unknown };
}

export interface SqliteStorageOptions {
  /** After each batch that committed a change (the disk took it). */
  onCommit?: () => void;
  /** Where an after-commit step that throws is reported. */
  log?: (message: string, error?: unknown) => void;
  /**
   * Makes every commit so far durable. By default, on a file in WAL mode, an fdatasync of its WAL
   * file; elsewhere (":memory:", another journal mode) the commit is left to SQLite's own setting.
   */
  flush?: () => Promise<void>;
}

/**
 * The WAL flush of a file database in WAL mode, with the connection switched to commit without
 * waiting for the disk; null when SQLite's own commit must keep doing it.
 */
function walFlush(sqlite: Database): (() => Promise<void>) | null {
  const file = sqlite.filename;
  if (!file || file === ":memory:") return null;
  const mode = (sqlite.query("PRAGMA journal_mode").get() as { journal_mode: string } | null)?.journal_mode;
  if (mode?.toLowerCase() !== "wal") return null;
  sqlite.run("PRAGMA synchronous = NORMAL");
  // The WAL file exists once the first write began; it stays while this connection is open.
  let handle: Promise<FileHandle> | null = null;
  return async () => {
    handle ??= open(`${file}-wal`, "r");
    try {
      await (await handle).datasync();
    } catch (error) {
      handle = null;
      throw error;
    }
  };
}

/**
 * Whether a statement only reads (this Bun does not expose sqlite3_stmt_readonly): a SELECT, or a
 * WITH that feeds a SELECT, writing nothing.
 */
export function readsOnly(sql: string): boolean {
  return /^\s*(SELECT|WITH)\b/i.test(sql) && !/\b(INSERT|UPDATE|DELETE|REPLACE)\b/i.test(sql);
}

export function createSqliteStorage(sqlite: Database, options: SqliteStorageOptions = {}): Storage {
  const units = createUnits<Unit>();
  const { unitOf } = units;
  const statements = new Map<string, { statement: Statement; reads: boolean }>();
  const queue: Queued[] = [];
  let scheduled = false;
  /** The batch being run, while one is. */
  let running: Promise<void> | null = null;
  const flush = options.flush ?? walFlush(sqlite);
  /** The flush under way, and the one the batches committed since it began wait for. */
  let flushing: Promise<void> | null = null;
  let nextFlush: Promise<void> | null = null;

  /** A flush that begins after now: the one under way already began before this commit. */
  function flushAfterNow(): Promise<void> {
    if (!flush) return Promise.resolve();
    if (nextFlush) return nextFlush;
    const begin = (): Promise<void> => {
      const done = flush().finally(() => {
        if (flushing === done) flushing = null;
      });
      flushing = done;
      return done;
    };
    if (!flushing) return begin();
    const after = flushing.then(
      () => undefined,
      () => undefined,
    );
    const next = after.then(() => {
      nextFlush = null;
      return begin();
    });
    nextFlush = next;
    return next;
  }

  function prepare(sql: string) {
    let prepared = statements.get(sql);
    if (!prepared) {
      prepared = { statement: sqlite.prepare(sql), reads: readsOnly(sql) };
      statements.set(sql, prepared);
    }
    return prepared;
  }

  function schedule(): void {
    if (scheduled || running !== null) return;
    scheduled = true;
    // The next turn: every unit asked for in this one joins the batch.
    setImmediate(() => {
      scheduled = false;
      running = runBatch().finally(() => {
        running = null;
        if (queue.length > 0) schedule();
      });
    });
  }

  // The rows a statement changed itself, as PostgreSQL counts them: bun:sqlite's own count adds
  // those its triggers changed (the rollup's, the cache generation's), so an `UPDATE … WHERE
  // presence = 'online'` that changed one device would say 2.
  const changesStatement = sqlite.prepare("SELECT changes() AS n");
  const directChanges = () => (changesStatement.get() as { n: number }).n;

  /** Rows changed on this connection since it opened (SQLite's total_changes()). */
  const totalChanges = () => (sqlite.query("SELECT total_changes() AS n").get() as { n: number }).n;

  async function runBatch(): Promise<void> {
    const batch = queue.splice(0);
    let changesBefore: number;
    try {
      sqlite.run("BEGIN IMMEDIATE");
      changesBefore = totalChanges();
    } catch (error) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    for (const [at, entry] of batch.entries()) {
      sqlite.run("SAVEPOINT unit");
      try {
        const value = await units.run(entry.unit, entry.fn);
        sqlite.run("RELEASE unit");
        entry.outcome = { ok: true, value };
      } catch (error) {
        entry.outcome = { ok: false, error };
        // A statement that failed with SQLITE_FULL, an I/O error or no room for a temp file ends
        // the whole transaction: every unit of the batch is gone, those before this one too.
        if (!sqlite.inTransaction) {
          for (const other of batch.slice(at)) other.unit.ended = true;
          // (The same error for all: a full disk is answered as one wherever it struck.)
          for (const other of batch) other.reject(error);
          return;
        }
        sqlite.run("ROLLBACK TO unit");
        sqlite.run("RELEASE unit");
      } finally {
        entry.unit.ended = true;
      }
    }
    const wrote = totalChanges() !== changesBefore;
    try {
      sqlite.run("COMMIT");
    } catch (error) {
      try {
        sqlite.run("ROLLBACK");
      } catch {
        // SQLite may have rolled back already (a full disk does)
      }
      for (const entry of batch) entry.reject(error);
      return;
    }
    // Nothing written, nothing to flush (a batch of reads, or of units that all failed).
    if (!wrote) {
      settle(batch, null);
      return;
    }
    // Answered once the disk has it; the next batch need not wait for that.
    flushAfterNow().then(
      () => {
        // Only a flushed commit that wrote something says the disk takes writes.
        options.onCommit?.();
        settle(batch, null);
      },
      (error: unknown) => {
        options.log?.("the database's write-ahead log could not be flushed to disk", error);
        settle(batch, error);
      },
    );
  }

  /** Answers a committed batch's units (all with `failure` when the disk did not take it). */
  function settle(batch: Queued[], failure: unknown): void {
    for (const entry of batch) {
      const outcome = entry.outcome!;
      if (failure !== null) entry.reject(failure);
      else if (outcome.ok) entry.resolve(outcome.value);
      else entry.reject(outcome.error);
    }
    if (failure !== null) return;
    // What follows a commit (waking a phone) must not undo the answers above.
    for (const entry of batch) if (entry.outcome!.ok) runAfterCommit(entry.unit.afterCommit, options.log);
  }

  function enqueue<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      queue.push({ fn, resolve: resolve as (value: unknown) => void, reject, unit: { depth: 0, afterCommit: [], ended: false } });
      schedule();
    });
  }

  function transaction<T>(fn: () => Promise<T>): Promise<T> {
    const unit = unitOf();
    if (unit) return inSavepoint(unit, (sql) => sqlite.run(sql), fn);
    return enqueue(fn);
  }

  /**
   * Runs a statement: at once inside a unit of work; outside one, a read once no batch is in
   * progress and a write as a unit of work of its own.
   */
  function execute<R>(sql: string, use: (statement: Statement) => R): Promise<R> {
    const { statement, reads } = prepare(sql);
    if (!reads && !unitOf()) return transaction(async () => use(statement));
    if (reads && running !== null && !unitOf()) {
      return (async () => {
        while (running !== null) await running;
        return use(statement);
      })();
    }
    // The common case, settled at once: no async frame of its own for each statement.
    try {
      return Promise.resolve(use(statement));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  return {
    dialect: "sqlite",
    all: <T>(sql: string, params: readonly SqlParam[] = []) => execute(sql, (s) => s.all(...(params as SqlParam[])) as T[]),
    get: <T>(sql: string, params: readonly SqlParam[] = []) => execute(sql, (s) => (s.get(...(params as SqlParam[])) as T | null) ?? null),
    run: (sql: string, params: readonly SqlParam[] = []) =>
      execute(sql, (s): RunResult => {
        s.run(...(params as SqlParam[]));
        return { changes: directChanges() };
      }),
    transaction,
    afterCommit: units.afterCommit,
    get inTransaction() {
      return unitOf() !== null;
    },
  };
}
