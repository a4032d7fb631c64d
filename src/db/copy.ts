// `pigeon db copy --to URL`: every row of the SQLite database into an empty PostgreSQL database
// with the same schema, in one PostgreSQL transaction (a failure leaves the target as it was).
// Values go over as they are stored — sealed secrets stay sealed with the same key, whose
// fingerprint is one of the rows — and afterwards each identity column's sequence continues past
// the largest id copied. The rollup triggers are off while rows arrive: notification_hourly is
// copied as it stands, not counted a second time, and the sends not yet in their threads are
// queued for PostgreSQL's catch-up. Bytes (BLOB, bytea there) go over as they are, a few megabytes
// per statement.
import type { Database } from "bun:sqlite";
import type { PostgresPool } from "./postgres-storage";

/** Rows PostgreSQL's own migrations write (the catch-up cursor): replaced by the copied ones. */
const SEEDED_BY_MIGRATIONS = new Set(["thread_sync"]);
/** Bound parameters per INSERT stay under PostgreSQL's limit of 65,535. */
const MAX_PARAMS = 30_000;
/** Bytes (BLOB columns) per INSERT, past its first row: what the copy holds in memory at once. */
const MAX_BATCH_BYTES = 8 * 1024 * 1024;

export class CopyRefused extends Error {}

export interface CopyReport {
  tables: { table: string; rows: number }[];
  rows: number;
}

/** Tables in an order where each comes after the tables its foreign keys point at. */
function tablesInOrder(sqlite: Database): string[] {
  const names = sqlite
    .query<{ name: string }, []>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '__drizzle_migrations' ORDER BY name",
    )
    .all()
    .map((r) => r.name);
  const parents = new Map(
    names.map((n) => [
      n,
      sqlite
        .query<{ table: string }, [string]>('SELECT "table" FROM pragma_foreign_key_list(?)')
        .all(n)
        .map((r) => r.table)
        .filter((t) => t !== n),
    ]),
  );
  const ordered: string[] = [];
  const placed = new Set<string>();
  while (ordered.length < names.length) {
    const next = names.find((n) => !placed.has(n) && parents.get(n)!.every((p) => placed.has(p) || !parents.has(p)));
    if (!next) throw new Error(`the tables' foreign keys form a cycle: ${names.filter((n) => !placed.has(n)).join(", ")}`);
    ordered.push(next);
    placed.add(next);
  }
  return ordered;
}

/** The first tables of the target that hold rows, or none: the copy goes only into an empty database. */
async function occupiedTables(target: PostgresPool): Promise<string[]> {
  const tables = await target.unsafe<{ table_name: string }[]>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
  );
  const occupied: string[] = [];
  for (const { table_name } of tables) {
    if (table_name === "__pigeon_migrations" || SEEDED_BY_MIGRATIONS.has(table_name)) continue;
    const [row] = await target.unsafe(`SELECT 1 AS one FROM "${table_name}" LIMIT 1`);
    if (row) occupied.push(table_name);
  }
  return occupied;
}

/** Throws CopyRefused when any table of the target holds rows (checked before and after migrating it). */
export async function refuseOccupied(target: PostgresPool): Promise<void> {
  const occupied = await occupiedTables(target);
  if (occupied.length > 0)
    throw new CopyRefused(
      `the target database is not empty (${occupied.slice(0, 5).join(", ")}${occupied.length > 5 ? ", …" : ""} hold rows): copy into a new, empty database`,
    );
}

/**
 * Copies `sqlite` (migrated to the current schema) into `target` (migrated, empty). Throws
 * CopyRefused, having written nothing, when the target already holds rows or lacks a column.
 */
export async function copySqliteToPostgres(
  sqlite: Database,
  target: PostgresPool,
  progress: (table: string, rows: number) => void = () => {},
): Promise<CopyReport> {
  await refuseOccupied(target);
  const tables = tablesInOrder(sqlite);
  const report: CopyReport = { tables: [], rows: 0 };
  // A read transaction: the copy sees one moment of the source.
  sqlite.run("BEGIN");
  try {
    await target.begin(async (tx) => {
      const triggered = await tx.unsafe<{ table: string }[]>(
        "SELECT DISTINCT event_object_table AS table FROM information_schema.triggers WHERE trigger_schema = current_schema()",
      );
      for (const { table } of triggered) await tx.unsafe(`ALTER TABLE "${table}" DISABLE TRIGGER USER`);
      for (const table of tables) {
        const targetColumns = new Set(
          (
            await tx.unsafe<{ column_name: string }[]>(
              "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
              [table],
            )
          ).map((r) => r.column_name),
        );
        if (targetColumns.size === 0) throw new CopyRefused(`the target database has no table ${table}: is it migrated by this release?`);
        const columns = sqlite
          .query<{ name: string }, [string]>("SELECT name FROM pragma_table_info(?)")
          .all(table)
          .map((c) => c.name);
        const missing = columns.filter((c) => !targetColumns.has(c));
        if (missing.length > 0)
          throw new CopyRefused(`the target's ${table} has no column ${missing.join(", ")}: is it migrated by this release?`);
        if (SEEDED_BY_MIGRATIONS.has(table)) await tx.unsafe(`DELETE FROM "${table}"`);
        const list = columns.map((c) => `"${c}"`).join(", ");
        // A table of bytes (received MMS attachments) goes over a few megabytes at a time, however
        // many rows that is: its rows' sizes are read first (length() does not read the bytes).
        const blobs = sqlite
          .query<{ name: string; type: string }, [string]>("SELECT name, type FROM pragma_table_info(?)")
          .all(table)
          .filter((c) => c.type.toUpperCase() === "BLOB")
          .map((c) => `coalesce(length("${c.name}"), 0)`);
        const perBatch = Math.max(1, Math.floor(MAX_PARAMS / columns.length));
        const sizes =
          blobs.length > 0
            ? sqlite.query<{ bytes: number }, [number, number]>(
                `SELECT ${blobs.join(" + ")} AS bytes FROM "${table}" WHERE rowid > ? ORDER BY rowid LIMIT ?`,
              )
            : null;
        /** How many rows from `after` on fit one batch: all `perBatch` for a table without bytes. */
        const rowsFrom = (after: number) => {
          if (!sizes) return perBatch;
          let bytes = 0;
          let n = 0;
          for (const row of sizes.all(after, perBatch)) {
            bytes += row.bytes;
            if (n > 0 && bytes > MAX_BATCH_BYTES) break;
            n++;
          }
          return Math.max(1, n);
        };
        // In rowid order, a batch at a time from where the last one ended.
        const select = sqlite.query<Record<string, unknown> & { __rowid: number }, [number, number]>(
          `SELECT rowid AS __rowid, ${list} FROM "${table}" WHERE rowid > ? ORDER BY rowid LIMIT ?`,
        );
        let copied = 0;
        for (let after = Number.MIN_SAFE_INTEGER; ; ) {
          const limit = rowsFrom(after);
          const rows = select.all(after, limit);
          if (rows.length === 0) break;
          after = rows[rows.length - 1].__rowid;
          const params: unknown[] = [];
          const tuples = rows.map((row) => {
            const marks = columns.map((c) => {
              const value = row[c];
              params.push(value instanceof Uint8Array ? Buffer.from(value) : value);
              return `$${params.length}`;
            });
            return `(${marks.join(", ")})`;
          });
          await tx.unsafe(`INSERT INTO "${table}" (${list}) VALUES ${tuples.join(", ")}`, params as never[]);
          copied += rows.length;
          progress(table, copied);
          if (rows.length < limit) break;
        }
        report.tables.push({ table, rows: copied });
        report.rows += copied;
      }
      for (const { table } of triggered) await tx.unsafe(`ALTER TABLE "${table}" ENABLE TRIGGER USER`);
      // The sends SQLite had not yet added to their threads (past its cursor) wait in PostgreSQL's
      // queue, where its trigger would have put them.
      await tx.unsafe(
        `INSERT INTO thread_pending (notification_id)
         SELECT id FROM notification WHERE id > (SELECT notification_id FROM thread_sync WHERE id = 1) ON CONFLICT DO NOTHING`,
      );
      // Each identity continues past the largest id copied.
      const identities = await tx.unsafe<{ table_name: string; column_name: string }[]>(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'",
      );
      for (const { table_name, column_name } of identities) {
        await tx.unsafe(
          `SELECT setval(pg_get_serial_sequence($1, $2), GREATEST((SELECT max("${column_name}") FROM "${table_name}"), 1), (SELECT max("${column_name}") FROM "${table_name}") IS NOT NULL)`,
          [`"${table_name}"`, column_name],
        );
      }
    });
  } finally {
    sqlite.run("ROLLBACK");
  }
  return report;
}
