// The binary applies migrations from embedded copies; drizzle-kit's journal must agree with it.
import { describe, expect, test } from "bun:test";
import { migrate as drizzleMigrate } from "drizzle-orm/bun-sqlite/migrator";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/client";
import { embeddedMigrations } from "../../src/db/embedded-migrations";
import { migrate } from "../../src/db/migrate";
import { createSqliteStorage } from "../../src/db/sqlite-storage";
import { createThreadRepository } from "../../src/modules/threads/repository";

const root = join(import.meta.dir, "../..");
const journal = JSON.parse(readFileSync(join(root, "migrations/meta/_journal.json"), "utf8"));

/** A database as a release before migration `tag` left it (foreign keys off, to seed rows freely). */
function releasedBefore(tag: string) {
  const db = openDatabase(":memory:");
  const older = embeddedMigrations.filter((m) => m.tag < tag);
  for (const m of older) for (const stmt of m.sql.split("--> statement-breakpoint")) db.$client.run(stmt);
  db.$client.run("CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)");
  for (const m of older) db.$client.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('old', ?)", [m.when]);
  db.$client.run("PRAGMA foreign_keys = OFF");
  return { db, older };
}

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

  test("0005 makes provider ids unique; an older database that holds a shared one keeps it on the oldest notification", () => {
    const { db, older } = releasedBefore("0005");
    const insert = (externalId: string | null) =>
      db.$client.run(
        "INSERT INTO notification (workspace_id, delivery_type, route, recipient, message, next_attempt_at, external_id, created_at, updated_at) VALUES (1, 'sms', 'cloud', '+14155552671', 'x', 0, ?, 0, 0)",
        [externalId],
      );
    insert("SMshared");
    insert("SMshared");
    insert("SMown");
    insert(null);
    insert(null);
    expect(migrate(db).applied).toBe(embeddedMigrations.length - older.length);
    expect(db.$client.query("SELECT id, external_id FROM notification ORDER BY id").all()).toEqual([
      { id: 1, external_id: "SMshared" },
      { id: 2, external_id: null },
      { id: 3, external_id: "SMown" },
      { id: 4, external_id: null },
      { id: 5, external_id: null },
    ]);
    expect(() => insert("SMown")).toThrow("UNIQUE");
  });

  test("0014 starts the threads' catch-up after the newest notification, so sends an older release already threaded are not added twice", async () => {
    const { db, older } = releasedBefore("0014");
    // An older release wrote the thread message with the send.
    db.$client.run(
      "INSERT INTO notification (workspace_id, delivery_type, route, recipient, message, next_attempt_at, created_at, updated_at) VALUES (1, 'sms', 'sms', '+14155552671', 'old', 0, 0, 0)",
    );
    db.$client.run(
      "INSERT INTO thread (workspace_id, channel, device_id, peer, last_message_at, last_message_preview, last_direction, created_at) VALUES (1, 'sms', 0, '+14155552671', 0, 'old', 'outbound', 0)",
    );
    db.$client.run("INSERT INTO thread_message (thread_id, direction, body, notification_id, at) VALUES (1, 'outbound', 'old', 1, 0)");
    expect(migrate(db).applied).toBe(embeddedMigrations.length - older.length);
    expect(db.$client.query("SELECT notification_id FROM thread_sync").all()).toEqual([{ notification_id: 1 }]);
    db.$client.run(
      "INSERT INTO notification (workspace_id, delivery_type, route, recipient, message, next_attempt_at, created_at, updated_at) VALUES (1, 'sms', 'sms', '+14155552671', 'new', 0, 5, 5)",
    );
    expect(await createThreadRepository(createSqliteStorage(db.$client)).catchUp()).toBe(1);
    expect(db.$client.query("SELECT body, notification_id FROM thread_message ORDER BY id").all()).toEqual([
      { body: "old", notification_id: 1 },
      { body: "new", notification_id: 2 },
    ]);
  });

  test("the database runs in WAL mode with foreign keys on", () => {
    const dir = mkdtempSync(join(tmpdir(), "pigeon-db-"));
    const db = openDatabase(join(dir, "pigeon.db"));
    expect((db.$client.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
    expect((db.$client.query("PRAGMA foreign_keys").get() as { foreign_keys: number }).foreign_keys).toBe(1);
    expect((db.$client.query("PRAGMA busy_timeout").get() as { timeout: number }).timeout).toBe(5000);
  });
});
