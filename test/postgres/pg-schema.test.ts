// The two databases have one schema: after every migration of each dialect has run (SQLite's
// migrations/ on a fresh file, PostgreSQL's migrations-pg/ on a real throwaway cluster), they have
// the same tables, the same columns with the same nullability, the same indexes by name on the
// same tables, and the same unique columns. A migration added to one folder and not the other
// fails here. The PostgreSQL migrations run under a cluster-wide lock: three at once all succeed
// and apply each file once.
import { afterAll, describe, expect, test } from "bun:test";
import { openDatabase } from "../../src/db/client";
import { migrate } from "../../src/db/migrate";
import { embeddedPostgresMigrations } from "../../src/db/embedded-migrations-pg";
import { connectPostgres } from "../../src/db/postgres-storage";
import { migratePostgres } from "../../src/db/postgres-migrate";
import { postgresCluster } from "../helpers/postgres";

interface Shape {
  /** table → "column NOT NULL" / "column NULL", sorted */
  columns: Record<string, string[]>;
  /** table → its named indexes, sorted */
  indexes: Record<string, string[]>;
  /** table → its single-column UNIQUE constraints, sorted */
  unique: Record<string, string[]>;
}

const sorted = (list: string[]) => [...list].sort();

function sqliteShape(): Shape {
  const db = openDatabase(":memory:");
  migrate(db);
  const sqlite = db.$client;
  const tables = sqlite
    .query<{ name: string }, []>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '__drizzle_migrations' ORDER BY name",
    )
    .all()
    .map((r) => r.name);
  const shape: Shape = { columns: {}, indexes: {}, unique: {} };
  for (const table of tables) {
    const columns = sqlite.query<{ name: string; notnull: number; pk: number }, [string]>("SELECT * FROM pragma_table_info(?)").all(table);
    shape.columns[table] = sorted(columns.map((c) => `${c.name} ${c.notnull || c.pk ? "NOT NULL" : "NULL"}`));
    shape.indexes[table] = sorted(
      sqlite
        .query<{ name: string }, [string]>(
          "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name NOT LIKE 'sqlite_autoindex%'",
        )
        .all(table)
        .map((r) => r.name),
    );
    const uniques = sqlite.query<{ name: string; origin: string }, [string]>("SELECT * FROM pragma_index_list(?)").all(table);
    shape.unique[table] = sorted(
      uniques
        .filter((u) => u.origin === "u")
        .map((u) =>
          sqlite
            .query<{ name: string }, [string]>("SELECT name FROM pragma_index_info(?)")
            .all(u.name)
            .map((c) => c.name)
            .join(","),
        ),
    );
  }
  sqlite.close();
  return shape;
}

async function postgresShape(url: string): Promise<Shape> {
  const sql = connectPostgres(url, { max: 1 });
  try {
    const tables = (
      await sql.unsafe(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> '__pigeon_migrations' ORDER BY 1",
      )
    ).map((r) => r.table_name as string);
    const shape: Shape = { columns: {}, indexes: {}, unique: {} };
    for (const table of tables) {
      const columns = await sql.unsafe(
        "SELECT column_name, is_nullable FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1",
        [table],
      );
      shape.columns[table] = sorted(columns.map((c) => `${c.column_name} ${c.is_nullable === "NO" ? "NOT NULL" : "NULL"}`));
      // Indexes that back a constraint (the primary key, a column's UNIQUE) are SQLite's autoindexes.
      const indexes = await sql.unsafe(
        `SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1
           AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('p', 'u'))`,
        [table],
      );
      shape.indexes[table] = sorted(indexes.map((r) => r.indexname as string));
      const uniques = await sql.unsafe(
        `SELECT string_agg(a.attname, ',' ORDER BY k.i) AS cols
           FROM pg_constraint c CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, i)
           JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
          WHERE c.contype = 'u' AND c.conrelid = $1::regclass GROUP BY c.oid`,
        [`"${table}"`],
      );
      shape.unique[table] = sorted(uniques.map((r) => r.cols as string));
    }
    return shape;
  } finally {
    await sql.end();
  }
}

const pools: { end(): Promise<void> }[] = [];
afterAll(async () => {
  for (const pool of pools.splice(0)) await pool.end();
});

describe("PostgreSQL's schema", () => {
  test("has SQLite's tables, columns, nullability, indexes and unique columns", async () => {
    const url = await (await postgresCluster()).createDatabase("schema");
    const sql = connectPostgres(url, { max: 2 });
    pools.push(sql);
    expect(await migratePostgres(sql)).toEqual({ applied: embeddedPostgresMigrations.length });
    const expected = sqliteShape();
    const actual = await postgresShape(url);
    expect(Object.keys(actual.columns).sort()).toEqual(Object.keys(expected.columns).sort());
    expect(Object.keys(expected.columns).length).toBeGreaterThan(20);
    for (const table of Object.keys(expected.columns)) {
      expect({ table, columns: actual.columns[table] }).toEqual({ table, columns: expected.columns[table] });
      expect({ table, indexes: actual.indexes[table] }).toEqual({ table, indexes: expected.indexes[table] });
      expect({ table, unique: actual.unique[table] }).toEqual({ table, unique: expected.unique[table] });
    }
    // Run again, nothing is left to apply.
    expect(await migratePostgres(sql)).toEqual({ applied: 0 });
  });

  test("three migrators at once take turns under the lock: every file applied once, none fails", async () => {
    const url = await (await postgresCluster()).createDatabase("migrate");
    const replicas = [0, 1, 2].map(() => connectPostgres(url, { max: 2 }));
    pools.push(...replicas);
    const results = await Promise.all(replicas.map((sql) => migratePostgres(sql)));
    expect(results.map((r) => r.applied).sort()).toEqual([0, 0, embeddedPostgresMigrations.length]);
    const recorded = await replicas[0].unsafe('SELECT tag FROM "__pigeon_migrations" ORDER BY tag');
    expect(recorded.map((r) => r.tag)).toEqual(embeddedPostgresMigrations.map((m) => m.tag));
  });

  test("a migration that fails leaves nothing of itself and says which it was", async () => {
    const url = await (await postgresCluster()).createDatabase("broken");
    const sql = connectPostgres(url, { max: 1 });
    pools.push(sql);
    const broken = [{ tag: "9999_broken", sql: "CREATE TABLE half (id bigint);\n--> statement-breakpoint\nSELECT no_such_function();" }];
    await expect(migratePostgres(sql, broken)).rejects.toThrow("9999_broken");
    expect((await sql.unsafe("SELECT to_regclass('half') AS t"))[0].t).toBeNull();
    expect((await sql.unsafe('SELECT count(*) AS n FROM "__pigeon_migrations"'))[0].n).toBe(0);
  });
});
