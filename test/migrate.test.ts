// The binary applies migrations from embedded copies; drizzle-kit's journal must agree with it.
import { describe, expect, test } from "bun:test";
import { migrate as drizzleMigrate } from "drizzle-orm/bun-sqlite/migrator";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../src/db/client";
import { embeddedMigrations } from "../src/db/embedded-migrations";
import { migrate } from "../src/db/migrate";

const root = join(import.meta.dir, "..");
const journal = JSON.parse(readFileSync(join(root, "migrations/meta/_journal.json"), "utf8"));

describe("migrations", () => {
  test("every migration in migrations/ is embedded, byte for byte", () => {
    expect(embeddedMigrations.map((m) => m.tag)).toEqual(journal.entries.map((e: { tag: string }) => e.tag));
    for (const m of embeddedMigrations) {
      expect(m.sql).toBe(readFileSync(join(root, "migrations", `${m.tag}.sql`), "utf8"));
    }
  });

  test("a fresh database is created and migrated; a second run applies nothing", () => {
    const db = openDatabase(":memory:");
    expect(migrate(db).applied).toBe(embeddedMigrations.length);
    expect(migrate(db).applied).toBe(0);
    const tables = db.$client.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    expect(tables.map((t) => t.name)).toContain("notification");
  });

  test("a database migrated by drizzle's own migrator is up to date for the binary, and the reverse", () => {
    const a = openDatabase(":memory:");
    drizzleMigrate(a, { migrationsFolder: join(root, "migrations") });
    expect(migrate(a).applied).toBe(0);

    const b = openDatabase(":memory:");
    migrate(b);
    const before = (b.$client.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number }).n;
    drizzleMigrate(b, { migrationsFolder: join(root, "migrations") });
    expect((b.$client.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number }).n).toBe(before);
  });

  test("an older database migrates forward to the newest schema", () => {
    const db = openDatabase(":memory:");
    const [first] = embeddedMigrations;
    // Apply only the first migration, as an older release would have.
    for (const stmt of first.sql.split("--> statement-breakpoint")) db.$client.run(stmt);
    db.$client.run("CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)");
    db.$client.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('old', ?)", [first.when]);
    expect(migrate(db).applied).toBe(embeddedMigrations.length - 1);
    expect(migrate(db).applied).toBe(0);
  });

  test("the database runs in WAL mode with foreign keys on", () => {
    const dir = mkdtempSync(join(tmpdir(), "pigeon-db-"));
    const db = openDatabase(join(dir, "pigeon.db"));
    expect((db.$client.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
    expect((db.$client.query("PRAGMA foreign_keys").get() as { foreign_keys: number }).foreign_keys).toBe(1);
    expect((db.$client.query("PRAGMA busy_timeout").get() as { timeout: number }).timeout).toBe(5000);
  });
});
