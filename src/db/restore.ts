// `pigeon restore --from FILE [--force]`: a backup (`pigeon backup`, or a scheduled one) back into
// the data directory. Everything is checked before anything is written: the file is a whole SQLite
// database (integrity check) and Pigeon's, made by this release or an older one, and the key file
// opens its sealed secrets. Only then is it copied beside pigeon.db and renamed over it; a database
// it replaces (only with --force) is kept beside it, its WAL with it. An older backup is migrated
// forward. The data-directory lock is held throughout, so no server can be running on it.
import { Database } from "bun:sqlite";
import { chmodSync, closeSync, copyFileSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { sealedBy } from "./key-check";
import { createSecretBox, SecretKeyError } from "../lib/secrets";
import { closeDatabase, openDatabase } from "./client";
import { embeddedMigrations } from "./embedded-migrations";
import { createBackupFileRepository } from "./backup-file-repository";
import { migrate } from "./migrate";
import { createSqliteStorage } from "./sqlite-storage";

/** Why a restore did not happen: one line for the operator, nothing written. */
export class RestoreRefused extends Error {}

export interface RestoreReport {
  /** The database file written. */
  database: string;
  /** Where the database it replaced was kept, if there was one. */
  replaced: string | null;
  /** Migrations applied to bring an older backup forward. */
  migrated: number;
}

const DB_FILE = "pigeon.db";

/** Reads what the checks need from the backup, read-only; refuses what is not a usable backup. */
async function inspect(from: string, keyFile: string): Promise<void> {
  if (!existsSync(from)) throw new RestoreRefused(`there is no backup at ${from}`);
  let db: Database;
  try {
    db = new Database(from, { readonly: true, strict: true });
  } catch (error) {
    throw new RestoreRefused(`${from} cannot be opened as a database: ${(error as Error).message}`);
  }
  try {
    const file = createBackupFileRepository(db);
    let check: string;
    try {
      check = file.integrity();
    } catch (error) {
      throw new RestoreRefused(`${from} cannot be read as a SQLite database (${(error as Error).message}): not a Pigeon backup`);
    }
    if (check !== "ok")
      throw new RestoreRefused(`${from} is damaged (SQLite's integrity check: ${check.split("\n")[0]}); nothing was restored`);
    const tables = file.tables();
    if (!tables.has("__drizzle_migrations") || !tables.has("notification"))
      throw new RestoreRefused(`${from} is a SQLite database but not a Pigeon backup (it has no Pigeon tables)`);
    const applied = file.migrationsApplied();
    if (applied > embeddedMigrations.length)
      throw new RestoreRefused(
        `${from} was made by a newer Pigeon (its schema has ${applied} migrations, this release knows ${embeddedMigrations.length}): restore it with that release or a later one`,
      );
    await checkKey(db, tables, keyFile);
  } finally {
    db.close();
  }
}

/** The key file must open the backup's sealed secrets (as a server's start would check). */
async function checkKey(db: Database, tables: Set<string>, keyFile: string): Promise<void> {
  const box = createSecretBox(keyFile);
  const { fingerprint: stored, sample } = await sealedBy(createSqliteStorage(db), { withSettings: tables.has("instance_setting") });
  if (stored !== null) {
    if (!box.hasKey())
      throw new RestoreRefused(
        `${keyFile} is missing: this backup's secrets are sealed with a key (fingerprint ${stored}); put the key file kept with the backup there (or point PIGEON_KEY_FILE at it)`,
      );
    if (box.fingerprint() !== stored)
      throw new RestoreRefused(
        `${keyFile} is not this backup's key (its fingerprint is ${box.fingerprint()}, the backup's ${stored}); put the key file kept with the backup there (or point PIGEON_KEY_FILE at it)`,
      );
    return;
  }
  // A backup from before fingerprints were recorded: try the key on one of its sealed secrets.
  if (sample === null) return;
  if (!box.hasKey())
    throw new RestoreRefused(`${keyFile} is missing: this backup holds encrypted secrets; put the key file kept with the backup there`);
  try {
    box.open(sample);
  } catch (error) {
    if (error instanceof SecretKeyError)
      throw new RestoreRefused(`${keyFile} is not this backup's key: it does not open the secrets the backup holds`);
    throw error;
  }
}

/** Copies `from` to `to` and makes it durable before it is renamed into place. */
function durableCopy(from: string, to: string): void {
  copyFileSync(from, to);
  chmodSync(to, 0o600);
  const fd = openSync(to, "r+");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Restores `from` into `dataDir` (whose lock the caller holds). Throws RestoreRefused, having
 * written nothing, when the backup or the key would not do, or a database is there and `force` is
 * not given.
 */
export async function restoreSqlite(opts: {
  from: string;
  dataDir: string;
  keyFile: string;
  force: boolean;
  now: number;
}): Promise<RestoreReport> {
  const target = join(opts.dataDir, DB_FILE);
  await inspect(opts.from, opts.keyFile);
  const present = existsSync(target);
  if (present && !opts.force)
    throw new RestoreRefused(`${target} already holds a database: add --force to replace it (the one replaced is kept beside it)`);
  const incoming = `${target}.restoring`;
  rmSync(incoming, { force: true });
  durableCopy(opts.from, incoming);
  let replaced: string | null = null;
  if (present) {
    replaced = `${target}.replaced-${new Date(opts.now).toISOString().replace(/[:.]/g, "-")}`;
    // The WAL and its index belong to the database they sit beside: they move with it.
    for (const suffix of ["-wal", "-shm"]) if (existsSync(`${target}${suffix}`)) renameSync(`${target}${suffix}`, `${replaced}${suffix}`);
    renameSync(target, replaced);
  }
  renameSync(incoming, target);
  const db = openDatabase(target);
  try {
    const { applied } = migrate(db);
    return { database: target, replaced, migrated: applied };
  } finally {
    closeDatabase(db);
  }
}
