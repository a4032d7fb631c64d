// Opens the SQLite database with the PRAGMAs Pigeon relies on and wraps it in drizzle. The wrapper
// carries no schema: the repositories write their SQL through the storage seam and read the
// tables' shapes from their own module's schema.ts, and drizzle's part here is the migrator.
import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";

export type Db = BunSQLiteDatabase & { $client: Database };
/** The SQLite connection itself, for the few things only it can do (the backup's VACUUM INTO). */
export type SqliteHandle = Pick<Database, "run">;

export function openDatabase(path: string): Db {
  const sqlite = new Database(path, { create: true, strict: true });
  // First, so that nothing below fails at once on a database a server is writing (a CLI command beside it).
  sqlite.run("PRAGMA busy_timeout = 5000");
  // A new database gives the pages retention frees back to the disk (PRAGMA incremental_vacuum,
  // src/modules/retention). It takes effect only before the first table exists; an older database
  // is switched by `pigeon prune` while no server holds it (one VACUUM).
  if ((sqlite.query("SELECT count(*) AS n FROM sqlite_master").get() as { n: number }).n === 0)
    sqlite.run("PRAGMA auto_vacuum = INCREMENTAL");
  // WAL lets the CLI write (keys create) while a server reads and writes the same file.
  sqlite.run("PRAGMA journal_mode = WAL");
  // FULL: a write acknowledged survives power loss, not only a killed process. The storage seam
  // (sqlite-storage.ts), once built on this connection, commits with NORMAL and flushes the WAL
  // file itself before it answers: the same promise, with the disk's wait off the thread.
  sqlite.run("PRAGMA synchronous = FULL");
  sqlite.run("PRAGMA foreign_keys = ON");
  // A statement whose triggers write (the rollup's on a send, the cache generation's on a key or a
  // device) inside a unit of work keeps a statement journal; SQLite writes it to a temp file, which
  // a read-only root (a container's, test/binary/container-root.test.ts) has nowhere to put: the first
  // start failed there once keys had triggers. In memory it is small, and only /data is written.
  sqlite.run("PRAGMA temp_store = MEMORY");
  return drizzle({ client: sqlite }) as Db;
}

/**
 * Folds the WAL back into the database file, then closes. After a clean stop or a CLI command,
 * `pigeon.db` alone holds everything, so copying just that file is a complete backup. When a
 * server still has the database open (a CLI command beside it), the checkpoint may not finish;
 * the server's own stop does it then.
 */
export function closeDatabase(db: Db): void {
  try {
    db.$client.run("PRAGMA wal_checkpoint(TRUNCATE)");
  } catch {
    // busy: another connection is mid-transaction; its owner checkpoints when it closes
  }
  db.$client.close();
}
