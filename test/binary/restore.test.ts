// `pigeon restore`, run as a self-hoster runs it: the compiled binary on temp data directories. A
// backup taken during a burst of sends restores every send acknowledged before the backup began;
// restore refuses a running server, a database it would replace without --force, another key or
// none, a file that is not a whole Pigeon backup, one from a newer release and PostgreSQL; an
// older backup is migrated forward.
import { Database } from "bun:sqlite";
import { embeddedMigrations } from "../../src/db/embedded-migrations";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { crashRig, json, registerCloudNumber, type CrashRig } from "../helpers/crash-setup";
import { startFakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT } from "../helpers/numbers";

const fake = await startFakeCloud({ latencyMs: 20 });
let rig: CrashRig;
let key: Credentials;
let backup: string;
/** Sends acknowledged before the backup began: id → text. */
const before = new Map<number, string>();
let after = 0;
const running: RunningServer[] = [];

afterAll(async () => {
  for (const server of running) if (server.proc.exitCode === null) await server.stop("SIGKILL");
  fake.stop();
});

/** A data directory holding only a copy of the rig's key file, as an operator restoring on a new disk has. */
function dirWithKey(): string {
  const dir = tempDir();
  copyFileSync(join(rig.dataDir, "pigeon.key"), join(dir, "pigeon.key"));
  return dir;
}

/** A copy of the backup with `statements` run on it. */
function alteredBackup(name: string, statements: string[]): string {
  const path = join(tempDir(), name);
  copyFileSync(backup, path);
  const db = new Database(path);
  for (const statement of statements) db.run(statement);
  db.close();
  return path;
}

/** The database files in a data directory (none after a refusal). */
const databaseFiles = (dir: string) => readdirSync(dir).filter((f) => f.startsWith("pigeon.db"));

const restore = (dataDir: string, args: string[], extra: Record<string, string> = {}) =>
  runCommand(rig.bin, ["restore", ...args], { PIGEON_DATA_DIR: dataDir, ...extra });

beforeAll(async () => {
  const setup = await crashRig(fake);
  rig = setup.rig;
  key = rig.key;
  const server = setup.server;
  running.push(server);
  await registerCloudNumber(server, key, fake);

  // A burst of sends; the backup starts part way through it, beside the running server.
  backup = join(tempDir(), "pigeon-backup.db");
  let backupStarted = 0;
  let backupDone: Promise<number> | null = null;
  const sends: Promise<void>[] = [];
  for (let i = 0; i < 160; i++) {
    const text = `burst message ${i}`;
    sends.push(
      server
        .fetch("/v1/api/sms/send", { method: "POST", key, body: JSON.stringify({ recipient_contact: RECIPIENT, message: text }) })
        .then(async (res) => {
          const acked = performance.now();
          expect(res.status).toBe(200);
          const id = (await json(res)).data.notification_id as number;
          if (backupStarted === 0 || acked < backupStarted) before.set(id, text);
          else after++;
        }),
    );
    if (i === 80) {
      backupStarted = performance.now();
      const proc = Bun.spawn([rig.bin, "backup", "--out", backup], {
        env: { PATH: process.env.PATH ?? "", ...rig.env },
        stdout: "pipe",
        stderr: "pipe",
      });
      backupDone = proc.exited;
    }
    await Bun.sleep(3);
  }
  await Promise.all(sends);
  expect(await backupDone).toBe(0);
  expect(await server.stop("SIGTERM")).toBe(0);
}, 60_000);

describe("a backup taken during a burst of sends", () => {
  test("restores into a new data directory with every send acknowledged before the backup began", async () => {
    // The backup really was taken mid-burst.
    expect(before.size).toBeGreaterThan(40);
    expect(after).toBeGreaterThan(0);
    const dir = dirWithKey();
    const r = await restore(dir, ["--from", backup, "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ restored: join(dir, "pigeon.db"), from: backup, replaced: null, migrations_applied: 0 });
    const server = await startServer(rig.bin, { ...rig.env, PIGEON_DATA_DIR: dir });
    running.push(server);
    // No first-start banner: the restored database has its owner and keys.
    expect(server.initialKey).toBeNull();
    for (const [id, text] of before) {
      const n = await server.api(`/v1/api/notification/${id}`, key);
      expect(n.status).toBe(200);
      expect(n.body.data.message).toBe(text);
    }
    expect(await server.stop("SIGTERM")).toBe(0);
  }, 60_000);
});

describe("restore refuses, writing nothing", () => {
  test("while a server holds the data directory", async () => {
    const dir = dirWithKey();
    const server = await startServer(rig.bin, { ...rig.env, PIGEON_DATA_DIR: dir });
    running.push(server);
    const r = await restore(dir, ["--from", backup, "--force"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("another Pigeon server");
    expect(r.stderr).toContain("stop it before restoring");
    // The running server's own data is untouched.
    expect(server.initialKey).not.toBeNull();
    expect((await server.api("/v1/api/contact/list", server.initialKey!)).status).toBe(200);
    expect(await server.stop("SIGTERM")).toBe(0);
  }, 30_000);

  test("a database already there, unless --force; with it the one replaced is kept beside it", async () => {
    const dir = dirWithKey();
    const server = await startServer(rig.bin, { ...rig.env, PIGEON_DATA_DIR: dir });
    running.push(server);
    const own = server.initialKey!;
    expect((await server.api("/v1/api/contact/create", own, { name: "Only here", phone: "+14155550100" })).status).toBe(200);
    expect(await server.stop("SIGTERM")).toBe(0);

    const refused = await restore(dir, ["--from", backup]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${join(dir, "pigeon.db")} already holds a database: add --force`);

    const forced = await restore(dir, ["--from", backup, "--force", "--json"]);
    expect(forced.code).toBe(0);
    const report = JSON.parse(forced.stdout);
    expect(report.replaced).toStartWith(join(dir, "pigeon.db.replaced-"));
    // The replaced database is whole: its own contact is in it.
    const kept = new Database(report.replaced, { readonly: true });
    expect(kept.query("SELECT name FROM contact").all()).toEqual([{ name: "Only here" }]);
    kept.close();
    const restored = await startServer(rig.bin, { ...rig.env, PIGEON_DATA_DIR: dir });
    running.push(restored);
    expect((await restored.api("/v1/api/contact/list", own)).status).toBe(401);
    const [id, text] = [...before][0];
    expect((await restored.api(`/v1/api/notification/${id}`, key)).body.data.message).toBe(text);
    expect(await restored.stop("SIGTERM")).toBe(0);
  }, 60_000);

  test("another key, or none: one line naming the key file", async () => {
    const wrong = tempDir();
    writeFileSync(join(wrong, "pigeon.key"), `${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
    const r = await restore(wrong, ["--from", backup]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(`${join(wrong, "pigeon.key")} is not this backup's key`);
    expect(existsSync(join(wrong, "pigeon.db"))).toBe(false);

    const none = tempDir();
    const missing = await restore(none, ["--from", backup]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`${join(none, "pigeon.key")} is missing`);
    expect(databaseFiles(none)).toEqual([]);

    // PIGEON_KEY_FILE pointing at the key kept with the backup is the way out.
    const elsewhere = await restore(none, ["--from", backup], { PIGEON_KEY_FILE: join(rig.dataDir, "pigeon.key") });
    expect(elsewhere.code).toBe(0);
  });

  test("a file that is not a whole Pigeon backup", async () => {
    const dir = dirWithKey();
    const text = join(tempDir(), "notes.txt");
    writeFileSync(text, "not a database at all, just some notes\n".repeat(200));
    const notDb = await restore(dir, ["--from", text]);
    expect(notDb.code).toBe(1);
    expect(notDb.stderr).toContain("not a Pigeon backup");

    const other = join(tempDir(), "other.db");
    const db = new Database(other);
    db.run("CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT)");
    db.close();
    const foreign = await restore(dir, ["--from", other]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain("not a Pigeon backup");

    // Damaged: a page in the middle overwritten.
    const damaged = join(tempDir(), "damaged.db");
    const bytes = readFileSync(backup);
    const page = 4096 * Math.floor(bytes.length / 4096 / 2);
    bytes.fill(0x5a, page, page + 4096);
    writeFileSync(damaged, bytes);
    const broken = await restore(dir, ["--from", damaged]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/damaged|cannot be read/);

    const absent = await restore(dir, ["--from", join(dir, "nothing-here.db")]);
    expect(absent.code).toBe(1);
    expect(absent.stderr).toContain("there is no backup at");
    expect(databaseFiles(dir)).toEqual([]);
  });

  test("a backup from a newer release, and PostgreSQL (pg_restore is its tool)", async () => {
    const newer = alteredBackup("newer.db", [
      "INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-a-later-release', 9999999999999)",
    ]);
    const dir = dirWithKey();
    const r = await restore(dir, ["--from", newer]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("made by a newer Pigeon");

    const pg = await restore(dir, ["--from", backup], { PIGEON_DATABASE_URL: "postgres://pigeon@127.0.0.1:1/pigeon" });
    expect(pg.code).toBe(2);
    expect(pg.stderr).toContain("pg_restore");
    expect(databaseFiles(dir)).toEqual([]);
  });
});

/**
 * The statements that take the last migration back out of a database: its indexes, its added
 * columns and its tables dropped (read from its own SQL, so the test follows each new migration).
 */
function undoLastMigration(): { statements: string[]; created: string[] } {
  const sql = embeddedMigrations.at(-1)!.sql;
  const names = (re: RegExp) => [...sql.matchAll(re)].map((m) => m.slice(1));
  const indexes = names(/CREATE (?:UNIQUE )?INDEX `(\w+)`/g).map(([name]) => name);
  const columns = names(/ALTER TABLE `(\w+)` ADD `(\w+)`/g);
  const tables = names(/CREATE TABLE `(\w+)`/g).map(([name]) => name);
  return {
    statements: [
      ...indexes.map((name) => `DROP INDEX ${name}`),
      ...columns.map(([table, column]) => `ALTER TABLE ${table} DROP COLUMN ${column}`),
      ...tables.map((name) => `DROP TABLE ${name}`),
      "DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)",
    ],
    created: [...indexes, ...tables],
  };
}

test("an older backup is migrated forward, and the server starts on it", async () => {
  // As a backup of the release before the last migration: what it made gone, its journal row too.
  const undo = undoLastMigration();
  expect(undo.statements.length).toBeGreaterThan(1);
  const older = alteredBackup("older.db", undo.statements);
  const dir = dirWithKey();
  const r = await restore(dir, ["--from", older, "--json"]);
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout).migrations_applied).toBe(1);
  const restored = new Database(join(dir, "pigeon.db"), { readonly: true });
  const names = new Set((restored.query("SELECT name FROM sqlite_master").all() as { name: string }[]).map((r) => r.name));
  expect(undo.created.filter((name) => !names.has(name))).toEqual([]);
  restored.close();
  const server = await startServer(rig.bin, { ...rig.env, PIGEON_DATA_DIR: dir });
  running.push(server);
  const [id, text] = [...before].at(-1)!;
  expect((await server.api(`/v1/api/notification/${id}`, key)).body.data.message).toBe(text);
  expect(await server.stop("SIGTERM")).toBe(0);
}, 30_000);
