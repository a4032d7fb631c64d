// Applies PostgreSQL's migrations (migrations-pg/, compiled into the binary) in order, each in a
// transaction of its own, under a cluster-wide advisory lock: replicas that start together, or a
// `pigeon migrate` beside them, take turns, and each finds the others' work done. What has run
// is recorded in `__pigeon_migrations` (the file's tag and the sha256 of its text).
import { createHash } from "node:crypto";
import type postgres from "postgres";
import { embeddedPostgresMigrations } from "./embedded-migrations-pg";

/** The advisory lock's key: any fixed number no other program on the cluster is likely to take. */
export const MIGRATION_LOCK = 0x70_69_67_65_6f_6e; // "pigeon"

export interface Migration {
  tag: string;
  sql: string;
}

/**
 * Whether the server answers, and which major version it runs (Pigeon needs 13 or newer). Throws
 * the driver's error when it cannot be reached or refuses the credentials.
 */
export async function postgresMajorVersion(sql: postgres.Sql<Record<string, never>>): Promise<number> {
  const [row] = await sql.unsafe("SHOW server_version_num");
  return Math.floor(Number(row.server_version_num) / 10000);
}

/** The lock the first start's bootstrap (owner, first key, key fingerprint, seed rows) runs under. */
export const STARTUP_LOCK = MIGRATION_LOCK + 1;

/**
 * Runs `fn` while this process holds the cluster-wide advisory lock `key` (on a connection of its
 * own, so `fn` may use the rest of the pool); other holders of the same key wait their turn.
 */
export async function withAdvisoryLock<T>(sql: postgres.Sql<Record<string, never>>, key: number, fn: () => Promise<T>): Promise<T> {
  const conn = await sql.reserve();
  try {
    await conn.unsafe("SELECT pg_advisory_lock($1)", [key]);
    try {
      return await fn();
    } finally {
      await conn.unsafe("SELECT pg_advisory_unlock($1)", [key]);
    }
  } finally {
    conn.release();
  }
}

export async function migratePostgres(
  sql: postgres.Sql<Record<string, never>>,
  migrations: readonly Migration[] = embeddedPostgresMigrations,
): Promise<{ applied: number }> {
  const conn = await sql.reserve();
  try {
    await conn.unsafe("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    try {
      await conn.unsafe(
        'CREATE TABLE IF NOT EXISTS "__pigeon_migrations" (tag text PRIMARY KEY, hash text NOT NULL, applied_at bigint NOT NULL)',
      );
      const done = new Set((await conn.unsafe('SELECT tag FROM "__pigeon_migrations"')).map((r) => r.tag as string));
      let applied = 0;
      for (const migration of migrations) {
        if (done.has(migration.tag)) continue;
        await conn.unsafe("BEGIN");
        try {
          for (const statement of migration.sql.split("--> statement-breakpoint")) {
            if (statement.replace(/--[^\n]*/g, "").trim() !== "") await conn.unsafe(statement);
          }
          await conn.unsafe('INSERT INTO "__pigeon_migrations" (tag, hash, applied_at) VALUES ($1, $2, $3)', [
            migration.tag,
            createHash("sha256").update(migration.sql).digest("hex"),
            Date.now(),
          ]);
          await conn.unsafe("COMMIT");
        } catch (error) {
          await conn.unsafe("ROLLBACK");
          throw new Error(`PostgreSQL migration ${migration.tag} failed: ${(error as Error).message}`);
        }
        applied++;
      }
      return { applied };
    } finally {
      await conn.unsafe("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
    }
  } finally {
    conn.release();
  }
}
