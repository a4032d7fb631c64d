// Scheduled backups (PIGEON_BACKUP_DIR, _EVERY, _KEEP), on the compiled binary: the first is taken
// at start, then one an interval, each whole, 0600, logged, the newest KEEP kept, their age in
// /health; a restart with a backup younger than the interval takes none at start; a directory
// that cannot be written is reported, and the server goes on serving.
import { afterAll, expect, test } from "bun:test";
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { settle } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "../helpers/binary";

const bin = isolatedBinary();
const running: RunningServer[] = [];
afterAll(async () => {
  for (const server of running) if (server.proc.exitCode === null) await server.stop("SIGKILL");
});

const backupsIn = (dir: string) => readdirSync(dir).filter((name) => /^pigeon-\d{8}T\d{9}Z\.db$/.test(name));
const written = (server: RunningServer) =>
  server
    .output()
    .split("\n")
    .filter((line) => line.includes("backup written to")).length;

async function health(server: RunningServer) {
  const res = await server.fetch("/health");
  expect(res.status).toBe(200);
  return (await res.json()).data;
}

test("the first at start, then one an interval, the newest KEEP kept, each 0600 and whole; /health shows their age", async () => {
  const dataDir = tempDir();
  const backups = join(tempDir(), "nested", "backups");
  const env = { PIGEON_DATA_DIR: dataDir, PIGEON_BACKUP_DIR: backups, PIGEON_BACKUP_EVERY: "0.0005", PIGEON_BACKUP_KEEP: "2" };
  const server = await startServer(bin, env);
  running.push(server);
  const key = server.initialKey!;
  expect((await server.api("/v1/api/contact/create", key, { name: "Backed up", phone: "+14155550100" })).status).toBe(200);
  // 0.0005 h is 1.8 s: four backups within about six seconds of the start.
  expect(await settle(() => written(server) >= 4, 30_000, 100)).toBe(true);
  const files = backupsIn(backups);
  expect(files).toHaveLength(2);
  expect(readdirSync(backups).filter((name) => name.endsWith(".partial"))).toEqual([]);
  for (const name of files) expect(statSync(join(backups, name)).mode & 0o777).toBe(0o600);
  const answer = await health(server);
  const status = answer.backup;
  expect(status).toMatchObject({ dir: backups, every_hours: 0.0005, keep: 2, last_error: null });
  // The age is the newest backup's, read against the answer's own time (a second either way: the
  // two are read a moment apart).
  const age = (Date.parse(answer.time) - Date.parse(status.last_success_at)) / 1000;
  expect(Math.abs(status.age_seconds - Math.floor(age))).toBeLessThanOrEqual(1);
  // Its time is the newest file's.
  const newest = files.sort().at(-1)!;
  expect(newest).toBe(`pigeon-${status.last_success_at.replace(/[-:.]/g, "")}.db`);
  expect(await server.stop("SIGTERM")).toBe(0);

  // The newest restores, with the contact made before it.
  const target = tempDir();
  const restored = await runCommand(bin, ["restore", "--from", join(backups, newest)], {
    PIGEON_DATA_DIR: target,
    PIGEON_KEY_FILE: join(dataDir, "pigeon.key"),
  });
  expect(restored.code).toBe(0);
  const again = await startServer(bin, { PIGEON_DATA_DIR: target, PIGEON_KEY_FILE: join(dataDir, "pigeon.key") });
  running.push(again);
  const contacts = await again.api("/v1/api/contact/list", key);
  expect(contacts.body.data.contacts.map((c: { name: string }) => c.name)).toEqual(["Backed up"]);
  expect(await again.stop("SIGTERM")).toBe(0);
}, 60_000);

test("a restart finding a backup younger than the interval takes none at start", async () => {
  const dataDir = tempDir();
  const backups = tempDir();
  const env = { PIGEON_DATA_DIR: dataDir, PIGEON_BACKUP_DIR: backups, PIGEON_BACKUP_EVERY: "1" };
  const first = await startServer(bin, env);
  running.push(first);
  expect(await settle(() => written(first) === 1, 10_000, 50)).toBe(true);
  expect(await first.stop("SIGTERM")).toBe(0);
  const taken = backupsIn(backups);
  expect(taken).toHaveLength(1);

  const second = await startServer(bin, env);
  running.push(second);
  await Bun.sleep(2_500);
  expect(written(second)).toBe(0);
  expect(backupsIn(backups)).toEqual(taken);
  const status = (await health(second)).backup;
  expect(`pigeon-${status.last_success_at.replace(/[-:.]/g, "")}.db`).toBe(taken[0]);
  expect(status.age_seconds).toBeGreaterThanOrEqual(2);
  expect(await second.stop("SIGTERM")).toBe(0);
}, 30_000);

test("a backup directory that cannot be written: each failure logged and shown in /health, the server still serves", async () => {
  const dataDir = tempDir();
  const blocker = join(tempDir(), "a-file");
  writeFileSync(blocker, "not a directory");
  const server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_BACKUP_DIR: join(blocker, "backups") });
  running.push(server);
  expect(await settle(() => server.output().includes("scheduled backup into"), 10_000, 50)).toBe(true);
  const status = (await health(server)).backup;
  expect(status.last_success_at).toBeNull();
  expect(status.last_error).toContain(blocker);
  expect((await server.api("/v1/api/contact/list", server.initialKey!)).status).toBe(200);
  expect(await server.stop("SIGTERM")).toBe(0);
}, 30_000);
