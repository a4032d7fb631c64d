// Applies the migrations compiled into the binary, recording each in drizzle's own journal
// table (`__drizzle_migrations`, sha256 of the file, the journal's `when`), so drizzle-kit and
// the binary agree on what has run.
import { createHash } from "node:crypto";
import type { Db } from "./client";
import { embeddedMigrations } from "./embedded-migrations";

interface MigrationMeta {
  sql: string[];
  bps: boolean;
  folderMillis: number;
  hash: string;
}

type SyncMigrator = { dialect: { migrate(m: MigrationMeta[], session: unknown, config: object): void }; session: unknown };

export function migrate(db: Db): { applied: number } {
  const before = appliedCount(db);
  const migrations: MigrationMeta[] = embeddedMigrations.map((m) => ({
    sql: m.sql.split("--> statement-breakpoint"),
    bps: true,
    folderMillis: m.when,
    hash: createHash("sha256").update(m.sql).digest("hex"),
  }));
  const internal = db as unknown as SyncMigrator;
  internal.dialect.migrate(migrations, internal.session, { migrationsTable: "__drizzle_migrations" });
  return { applied: appliedCount(db) - before };
}

function appliedCount(db: Db): number {
  const exists = db.$client.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get();
  if (!exists) return 0;
  const row = db.$client.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number };
  return row.n;
}
