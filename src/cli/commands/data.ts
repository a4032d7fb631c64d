// The data itself: backup, prune, restore, `db copy` to PostgreSQL, and the health probe.
import { chmodSync } from "node:fs";
import { ConfigError, ensureDataDir, loadConfig, redactedDatabaseUrl } from "../../config";
import { RestoreRefused, restoreSqlite } from "../../db/restore";
import { isDiskFull } from "../../lib/disk";
import { AppError } from "../../core/errors";
import { CopyRefused, copySqliteToPostgres, refuseOccupied } from "../../db/copy";
import { migratePostgres, postgresMajorVersion } from "../../db/postgres-migrate";
import { connectPostgres } from "../../db/postgres-storage";
import { DataDirLocked, lockDataDir, type DataDirLock } from "../../lib/data-dir-lock";
import type { Runtime } from "../runtime";
import { diskFull, print, required, UsageError, type Values } from "../args";
import { ownServerTls, runningServer } from "./devices";

export function backup(rt: Runtime, values: Values) {
  const out = required(values.out, "--out");
  if (rt.config.databaseUrl)
    throw new UsageError("backup copies the SQLite database; on PostgreSQL use pg_dump (and keep PIGEON_KEY_FILE with it)");
  rt.services.system.copyTo(out);
  chmodSync(out, 0o600);
  // The backup's secrets are sealed with the data directory's key: without it they are lost.
  const key = rt.config.keyFile;
  print(
    values,
    { backup: out, key_file: key },
    `Backup written to ${out}\nIts stored secrets (webhook secrets, provider tokens, pairing token) open only with ${key}: keep a copy of that file too, apart from the backup.`,
  );
}

/** A day as YYYY-MM-DD, a real one: its first instant in UTC. */
export function dayStart(value: string | undefined, flag: string): number {
  const day = required(value, flag);
  const at = Date.parse(`${day}T00:00:00.000Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== day)
    throw new UsageError(`${flag} needs a date as YYYY-MM-DD, got "${day}"`);
  return at;
}

/**
 * `pigeon prune`: beside a running server or alone. Alone (the data directory's lock is free), it
 * may also rewrite an older SQLite database once so that it gives freed space back from then on.
 */
export async function prune(rt: Runtime, values: Values): Promise<void> {
  const before = dayStart(values.before, "--before");
  const dryRun = values["dry-run"] === true;
  let lock: DataDirLock | null = null;
  if (!rt.config.databaseUrl && !dryRun) {
    try {
      lock = lockDataDir(rt.config.dataDir);
    } catch (error) {
      if (!(error instanceof DataDirLocked)) throw error;
    }
  }
  try {
    const report = await rt.services.retention.prune(before, { dryRun, convert: lock !== null });
    const listed = Object.entries(report)
      .filter(([k, v]) => typeof v === "number" && v > 0 && k !== "pages_freed")
      .map(([k, v]) => `  ${k.replaceAll("_", " ")}: ${v}`)
      .join("\n");
    const space = {
      returned: `\n${report.pages_freed} free pages given back to the disk`,
      converted: "\nThe database file was rewritten so that freed space goes back to the disk from now on",
      reused: "\nFreed space is reused for new rows; run pigeon prune while the server is stopped to give it back to the disk",
      autovacuum: "\nPostgreSQL's autovacuum makes the freed space reusable",
      unchanged: "",
    }[report.space];
    print(
      values,
      report,
      `${dryRun ? "Would remove" : "Removed"}, for what finished before ${report.before}:\n${listed || "  nothing"}${dryRun ? "" : space}`,
    );
  } finally {
    lock?.release();
  }
}

/** `pigeon health`: GET /health of the running server; 0 when it answers 200 with status ok. */
export async function health(values: Values): Promise<number> {
  const server = runningServer(values);
  if ("error" in server) {
    console.error(`pigeon: ${server.error}`);
    return 2;
  }
  const url = `${server.base}/health`;
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(5_000), ...ownServerTls(url) });
  } catch (error) {
    console.error(`pigeon: unhealthy: cannot reach ${url}: ${(error as Error).message}`);
    return 1;
  }
  const body = (await res.json().catch(() => null)) as { data?: { status?: string; error_code?: string } } | null;
  const healthy = res.status === 200 && body?.data?.status === "ok";
  if (healthy) print(values, body?.data, `healthy: ${url}`);
  else console.error(`pigeon: unhealthy: ${url} answered ${res.status}${body?.data?.error_code ? ` ${body.data.error_code}` : ""}`);
  return healthy ? 0 : 1;
}

/** `pigeon restore`: outside the runtime, under the data directory's lock (src/db/restore.ts). */
export async function restore(values: Values): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  let from: string;
  try {
    config = loadConfig();
    from = required(values.from, "--from");
    if (config.databaseUrl)
      throw new UsageError(
        "restore writes the SQLite database of PIGEON_DATA_DIR; on PostgreSQL restore a pg_dump with pg_restore (or psql) and give every server the PIGEON_KEY_FILE kept with it",
      );
    ensureDataDir(config.dataDir);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`pigeon: ${error.message}\nRun pigeon --help for usage.`);
      return 2;
    }
    if (error instanceof ConfigError) {
      console.error(`pigeon: configuration error: ${error.message}`);
      return 2;
    }
    throw error;
  }
  let lock: DataDirLock;
  try {
    lock = lockDataDir(config.dataDir);
  } catch (error) {
    if (error instanceof DataDirLocked) {
      console.error(`pigeon: ${error.message}: stop it before restoring`);
      return 1;
    }
    throw error;
  }
  try {
    const report = await restoreSqlite({
      from,
      dataDir: config.dataDir,
      keyFile: config.keyFile,
      force: values.force === true,
      now: Date.now(),
    });
    print(
      values,
      { restored: report.database, from, replaced: report.replaced, migrations_applied: report.migrated },
      `Restored ${from} into ${report.database}` +
        (report.replaced ? `\nThe database it replaced is kept as ${report.replaced}` : "") +
        (report.migrated > 0 ? `\n${report.migrated} migration(s) brought it up to this release` : ""),
    );
    return 0;
  } catch (error) {
    if (error instanceof RestoreRefused) {
      console.error(`pigeon: ${error.message}`);
      return 1;
    }
    if (isDiskFull(error)) return diskFull();
    throw error;
  } finally {
    lock.release();
  }
}

export async function dbCmd(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  if (sub !== "copy") throw new UsageError("db takes copy --to URL");
  const url = required(values.to, "--to");
  if (!rt.sqlite)
    throw new UsageError(
      "db copy reads the SQLite database in PIGEON_DATA_DIR: run it with PIGEON_DATABASE_URL unset (--to names the target)",
    );
  let targetUrl: string;
  try {
    targetUrl = loadConfig({ PIGEON_DATABASE_URL: url }).databaseUrl!;
  } catch (error) {
    throw new UsageError(`--to: ${(error as Error).message.replace(/^PIGEON_DATABASE_URL:? ?/, "")}`);
  }
  // The copy must see every write: no server may be running on the data directory.
  let lock: DataDirLock;
  try {
    lock = lockDataDir(rt.config.dataDir);
  } catch (error) {
    if (!(error instanceof DataDirLocked)) throw error;
    throw new AppError("conflict", `${error.message}: stop it before copying, so the copy misses no write`);
  }
  const target = connectPostgres(targetUrl, { max: 2 });
  try {
    let major: number;
    try {
      major = await postgresMajorVersion(target);
    } catch (error) {
      throw new AppError(
        "conflict",
        `cannot reach PostgreSQL at ${redactedDatabaseUrl(targetUrl)}: ${(error as Error).message.split("\n")[0]}`,
      );
    }
    if (major < 13) throw new AppError("conflict", `the target runs PostgreSQL ${major}; Pigeon needs 13 or newer`);
    await refuseOccupied(target);
    await migratePostgres(target);
    // One line a table on stderr as the copy reaches it (none with --json).
    let shown = "";
    const report = await copySqliteToPostgres(rt.sqlite, target, (table) => {
      if (values.json || shown === table) return;
      shown = table;
      process.stderr.write(`copying ${table}…\n`);
    });
    print(
      values,
      { copied: report.rows, tables: report.tables, to: redactedDatabaseUrl(targetUrl), key_file: rt.config.keyFile },
      `Copied ${report.rows} rows in ${report.tables.length} tables to ${redactedDatabaseUrl(targetUrl)}.\n` +
        `Start Pigeon with PIGEON_DATABASE_URL set to it and PIGEON_KEY_FILE=${rt.config.keyFile} (its secrets are sealed with that key).`,
    );
  } catch (error) {
    if (error instanceof CopyRefused) throw new AppError("conflict", error.message);
    throw error;
  } finally {
    lock.release();
    await target.end({ timeout: 5 });
  }
}
