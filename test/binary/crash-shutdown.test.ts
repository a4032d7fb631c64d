// A SIGTERM lets the provider calls in flight finish and records their
// outcome (no "interrupted" recovery after an ordinary restart), and a clean stop or CLI command
// leaves everything in pigeon.db itself, so copying that one file is a complete backup.
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "../helpers/binary";
import { settle } from "../helpers/api";
import { crashRig, readDb, sendBulk } from "../helpers/crash-setup";
import { DISPATCH_CONCURRENCY as C } from "../../src/worker/dispatcher";
import { startFakeCloud } from "../helpers/fake-cloud";

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

test("SIGTERM with provider calls in flight: stops listening, waits for them, records them sent, exits 0; the restart has nothing to recover", async () => {
  const setup = await crashRig(fake);
  server = setup.server;
  const { rig } = setup;
  // 12 more due at once than the dispatcher has callers: those are mid-call at the signal, the 12 not started.
  const ids = await sendBulk(
    server,
    rig.key,
    Array.from({ length: C + 12 }, (_, i) => `slow goodbye ${i}`),
  );
  await settle(() => fake.creates.length >= C, 10_000, 10);
  expect(fake.creates).toHaveLength(C);

  const signalled = Date.now();
  server.proc.kill("SIGTERM");
  await Bun.sleep(300);
  // No longer listening while it waits for the provider.
  expect(server.proc.exitCode).toBeNull();
  const refused = await Bun.connect({ hostname: "127.0.0.1", port: server.port, socket: { data() {} } }).then(
    (s) => {
      s.end();
      return false;
    },
    () => true,
  );
  expect(refused).toBe(true);
  const code = await server.proc.exited;
  const took = Date.now() - signalled;
  expect(code).toBe(0);
  expect(took).toBeLessThan(10_000 + 2_000);
  // It waited for the provider's answers (about 1.5 s) rather than abandoning the calls.
  expect(took).toBeGreaterThan(1_000);

  const rows = readDb(rig.dataDir, (db) => db.query("SELECT id, status, stage, external_id FROM notification ORDER BY id").all()) as {
    id: number;
    status: string;
    stage: string;
    external_id: string | null;
  }[];
  expect(rows.map((r) => r.id)).toEqual(ids);
  const sent = rows.filter((r) => r.status === "sent");
  expect(sent).toHaveLength(C);
  for (const r of sent) expect(fake.messages.has(r.external_id!)).toBe(true);
  // The 12 never handed over wait in the queue, not half-way.
  expect(rows.filter((r) => r.status === "pending").map((r) => r.stage)).toEqual(Array(12).fill("queued"));
  expect(fake.messages.size).toBe(C);

  // An ordinary restart has nothing to recover: no attempt was left cut off. The rest go out once.
  fake.creates.length = 0;
  server = await rig.start();
  await settle(() => fake.messages.size >= C + 12, 15_000, 50);
  await Bun.sleep(200);
  expect(await server.stop("SIGTERM")).toBe(0);
  const interrupted = readDb(rig.dataDir, (db) =>
    db.query("SELECT count(*) AS n FROM notification_log WHERE event = 'interrupted'").get(),
  ) as { n: number };
  expect(interrupted.n).toBe(0);
  expect(fake.creates).toHaveLength(12);
  expect(fake.messages.size).toBe(C + 12);
  const statuses = readDb(rig.dataDir, (db) => db.query("SELECT DISTINCT status FROM notification").all());
  expect(statuses).toEqual([{ status: "sent" }]);
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
