// `pigeon prune` and PIGEON_RETENTION_DAYS on the compiled binary: beside a running server, a
// prune with a cut-off in the future removes every delivered message and nothing scheduled, and the
// statistics read the same; a dry run removes nothing; a bad date is refused. The server's own
// retention task removes a large old history in pieces while /health keeps answering, the data
// file stops growing under a steady load, and an older database (no incremental vacuum) is
// converted once when no server holds it.
import { afterAll, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { settle } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "../helpers/binary";
import { crashRig, readDb, sendBulk, waitSettled } from "../helpers/crash-setup";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { startStallProbe } from "../helpers/stall-probe";
import { RECIPIENT } from "../helpers/numbers";

const bin = isolatedBinary();
const running: RunningServer[] = [];
const fakes: FakeCloud[] = [];
afterAll(async () => {
  for (const server of running) if (server.proc.exitCode === null) await server.stop("SIGKILL");
  for (const fake of fakes) fake.stop();
});

const DAY = 86_400_000;

/** Old finished history written straight into the file: `n` delivered messages `days` old, each with two log lines. */
function oldHistory(dataDir: string, n: number, days: number) {
  readDb(dataDir, (db) => {
    const at = Date.now() - days * DAY;
    db.run(
      `INSERT INTO notification (workspace_id, delivery_type, route, recipient, message, status, stage, next_attempt_at, created_at, updated_at)
       WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
       SELECT 1, 'sms', 'cloud', '+14155552671', hex(randomblob(150)), 'delivered', 'done', ?, ? - i, ? FROM k`,
      [n, at, at, at],
    );
    db.run(
      `INSERT INTO notification_log (notification_id, at, event, status)
       SELECT id, created_at, 'accepted', 'pending' FROM notification WHERE created_at <= ?
       UNION ALL SELECT id, created_at, 'delivered', 'delivered' FROM notification WHERE created_at <= ?`,
      [at, at],
    );
  });
}

async function stats(server: RunningServer, key: { api_key: string; api_secret: string }) {
  const out: Record<string, unknown> = {};
  for (const period of ["day", "week", "month"]) {
    const reply = await server.api(`/v1/api/stats/notifications?period=${period}`, key);
    expect(reply.status).toBe(200);
    out[period] = { ...reply.body.data, from: undefined, to: undefined };
  }
  return out;
}

test("beside a running server: a dry run counts, a prune removes what was delivered, never what is scheduled; stats stay", async () => {
  const fake = await startFakeCloud();
  fakes.push(fake);
  // A fixed port, so the provider's status callbacks have a public URL to go to.
  const spare = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = String(spare.port);
  spare.stop(true);
  const { rig, server } = await crashRig(fake, { PIGEON_PORT: port, PIGEON_PUBLIC_URL: `http://127.0.0.1:${port}` });
  running.push(server);
  const key = rig.key;
  const sentIds = await sendBulk(
    server,
    key,
    Array.from({ length: 30 }, (_, i) => `Order ${i} is ready`),
  );
  expect(await waitSettled(server, key, 20_000)).toBe(0);
  // The provider reports 25 delivered; 5 stay `sent`, their report still to come, and are kept.
  const sids = [...fake.messages.keys()];
  expect(sids).toHaveLength(30);
  for (const sid of sids.slice(0, 25)) expect((await fake.callback(sid, "delivered")).status).toBeLessThan(300);
  const deliveredTotal = async () =>
    (await server.api("/v1/api/notification/list?status=delivered&limit=1", key)).body.data.pagination.total;
  expect(await settle(async () => (await deliveredTotal()) === 25, 10_000)).toBe(true);
  const scheduled = await server.api("/v1/api/sms/send", key, {
    recipient_contact: RECIPIENT,
    message: "Tomorrow's reminder",
    schedule_time: new Date(Date.now() + 2 * DAY).toISOString().slice(0, 19).replace("T", " "),
  });
  expect(scheduled.status).toBe(200);
  const scheduledId = scheduled.body.data.notification_id;
  const before = await stats(server, key);

  const dry = await runCommand(bin, ["prune", "--before", "2099-01-01", "--dry-run", "--json"], rig.env);
  expect(dry.code).toBe(0);
  expect(JSON.parse(dry.stdout)).toMatchObject({ dry_run: true, notifications: 25, before: "2099-01-01T00:00:00.000Z" });
  expect(await deliveredTotal()).toBe(25);

  const done = await runCommand(bin, ["prune", "--before", "2099-01-01", "--json"], rig.env);
  expect(done.code).toBe(0);
  const report = JSON.parse(done.stdout);
  expect(report).toMatchObject({ dry_run: false, notifications: 25 });
  expect(report.notification_logs).toBeGreaterThanOrEqual(2 * 25);
  expect(await deliveredTotal()).toBe(0);
  const statusOf = async (id: number) => {
    const reply = await server.api(`/v1/api/notification/${id}`, key);
    return reply.status === 200 ? reply.body.data.status : reply.status;
  };
  const after = await Promise.all(sentIds.map(statusOf));
  expect(after.filter((s) => s === 404)).toHaveLength(25);
  expect(after.filter((s) => s === "sent")).toHaveLength(5);
  expect((await server.api(`/v1/api/notification/${scheduledId}`, key)).body.data.status).toBe("pending");
  expect(await stats(server, key)).toEqual(before);

  // The human output names what went; bad dates are refused before anything is touched.
  const again = await runCommand(bin, ["prune", "--before", "2099-01-01"], rig.env);
  expect(again.code).toBe(0);
  expect(again.stdout).toContain("Removed, for what finished before 2099-01-01");
  for (const bad of ["2026-02-30", "tomorrow", "2026-1-5", ""]) {
    const refused = await runCommand(bin, ["prune", "--before", bad], rig.env);
    expect({ bad, code: refused.code }).toEqual({ bad, code: 2 });
    expect(refused.stderr).toContain("--before");
  }
  expect((await server.api(`/v1/api/notification/${scheduledId}`, key)).status).toBe(200);
});

test("PIGEON_RETENTION_DAYS: the server removes a large old history in pieces while /health keeps answering", async () => {
  const dataDir = tempDir();
  const env = { PIGEON_DATA_DIR: dataDir };
  const first = await startServer(bin, env);
  expect(await first.stop("SIGTERM")).toBe(0);
  // Ten of the task's largest pieces (1000 messages): enough to be done in pieces, and to hold
  // /health if a piece were too large.
  oldHistory(dataDir, 10_000, 10);
  const server = await startServer(bin, { ...env, PIGEON_RETENTION_DAYS: "7" });
  running.push(server);
  const probe = startStallProbe(server.url, 100);
  await probe.ready;
  const left = () => readDb(dataDir, (db) => (db.query("SELECT count(*) AS n FROM notification").get() as { n: number }).n);
  expect(await settle(() => left() === 0, 60_000, 200)).toBe(true);
  const report = await probe.stop();
  expect(report.failed).toBe(0);
  expect(report.n).toBeGreaterThan(5);
  expect(report.stalls).toEqual([]);
  // The report line follows once the freed pages are given back too.
  expect(await settle(() => server.output().includes("retention removed 10000 notifications"), 30_000, 100)).toBe(true);
  // Room for a machine at half our speed, busy with other work.
}, 120_000);

test("under a steady load the data file stops growing; an older database is converted once, with no server on it", async () => {
  const dataDir = tempDir();
  const env = { PIGEON_DATA_DIR: dataDir };
  const first = await startServer(bin, env);
  expect(await first.stop("SIGTERM")).toBe(0);
  // An older database: made before incremental vacuum was asked for.
  readDb(dataDir, (db) => {
    db.run("PRAGMA auto_vacuum = NONE");
    db.run("VACUUM");
  });
  oldHistory(dataDir, 5000, 40);
  const converted = await runCommand(bin, ["prune", "--before", "2099-01-01", "--json"], env);
  expect(converted.code).toBe(0);
  expect(JSON.parse(converted.stdout)).toMatchObject({ notifications: 5000, space: "converted" });
  expect(readDb(dataDir, (db) => (db.query("PRAGMA auto_vacuum").get() as { auto_vacuum: number }).auto_vacuum)).toBe(2);

  const file = join(dataDir, "pigeon.db");
  const sizes: number[] = [];
  for (let round = 0; round < 4; round++) {
    oldHistory(dataDir, 5000, 40);
    const pruned = await runCommand(bin, ["prune", "--before", "2099-01-01", "--json"], env);
    expect(JSON.parse(pruned.stdout)).toMatchObject({ notifications: 5000, space: "returned" });
    sizes.push(statSync(file).size);
  }
  // Each round writes some megabytes and gives them back: the file ends each round at the same size.
  expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThan(64 * 1024);
});
