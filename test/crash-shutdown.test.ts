// Items 3 and 4 of issue 9: a SIGTERM lets the provider calls in flight finish and records their
// outcome (no "interrupted" recovery after an ordinary restart), and a clean stop or CLI command
// leaves everything in pigeon.db itself, so copying that one file is a complete backup.
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "./helpers/binary";
import { crashRig, readDb, sendBulk } from "./helpers/crash-setup";
import { startFakeCloud } from "./helpers/fake-cloud";

const fake = await startFakeCloud({ latencyMs: 1_500 });
let server: RunningServer | null = null;

afterAll(async () => {
  if (server && server.proc.exitCode === null) await server.stop("SIGKILL");
  fake.stop();
});

function walSize(dataDir: string): number {
  const wal = join(dataDir, "pigeon.db-wal");
  return existsSync(wal) ? statSync(wal).size : 0;
}

/** Opens a copy of pigeon.db alone (no -wal, no -shm) in a fresh folder. */
function openCopy(dataDir: string): Database {
  const copy = join(tempDir("pigeon-copy-"), "pigeon.db");
  copyFileSync(join(dataDir, "pigeon.db"), copy);
  return new Database(copy, { readonly: true });
}

test("SIGTERM with a provider call in flight: waits for it, records it sent, exits 0, and the restart has nothing to recover", async () => {
  const setup = await crashRig(fake);
  server = setup.server;
  const { rig } = setup;
  const [id] = await sendBulk(server, rig.key, ["slow goodbye"]);
  const deadline = Date.now() + 10_000;
  while (fake.creates.length === 0 && Date.now() < deadline) await Bun.sleep(10);
  expect(fake.creates).toHaveLength(1);

  const signalled = Date.now();
  const code = await server.stop("SIGTERM");
  const took = Date.now() - signalled;
  expect(code).toBe(0);
  expect(took).toBeLessThan(10_000 + 2_000);
  // It waited for the provider's answer (about 1.5 s) rather than abandoning the call.
  expect(took).toBeGreaterThan(500);

  const row = readDb(rig.dataDir, (db) => db.query("SELECT status, stage, external_id FROM notification WHERE id = ?").get(id)) as {
    status: string;
    stage: string;
    external_id: string;
  };
  expect(row).toMatchObject({ status: "sent", stage: "handed" });
  expect(fake.messages.size).toBe(1);
  expect(row.external_id).toBe([...fake.messages.keys()][0]);

  // An ordinary restart has nothing to recover: no attempt was left cut off.
  server = await rig.start();
  await Bun.sleep(300);
  expect(await server.stop("SIGTERM")).toBe(0);
  const events = readDb(rig.dataDir, (db) => db.query("SELECT event FROM notification_log WHERE notification_id = ? ORDER BY id").all(id)) as { event: string }[];
  expect(events.map((e) => e.event)).not.toContain("interrupted");
  expect(fake.creates).toHaveLength(1);

}, 60_000);

test("after a clean stop and after a CLI command, pigeon.db alone holds everything (the WAL is checkpointed)", async () => {
  const bin = isolatedBinary();
  const dataDir = tempDir();
  const env = { PIGEON_DATA_DIR: dataDir };
  server = await startServer(bin, env);
  const key = server.initialKey!;
  expect(await server.stop("SIGTERM")).toBe(0);
  // Looked at before anything else opens the database: opening and closing it checkpoints too.
  expect(walSize(dataDir)).toBe(0);
  const copy = openCopy(dataDir);
  expect(copy.query("SELECT key FROM api_key").all()).toEqual([{ key: key.api_key }]);
  copy.close();

  const created = await runCommand(bin, ["keys", "create", "--name", "after-backup", "--json"], env);
  expect(created.code).toBe(0);
  expect(walSize(dataDir)).toBe(0);
  const copy2 = openCopy(dataDir);
  expect(copy2.query("SELECT name FROM api_key WHERE name = 'after-backup'").get()).toEqual({ name: "after-backup" });
  copy2.close();
}, 30_000);
