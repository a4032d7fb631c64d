// A throwaway PostgreSQL cluster for the tests: Debian's `postgresql` package, initialised in a
// temp directory, listening on loopback only, started once per test process and stopped (and
// deleted) when it exits. Each caller gets a database of its own. PostgreSQL refuses to run as
// root, so under root the cluster belongs to the `postgres` user the package creates.
import { spawn, spawnSync } from "node:child_process";
import { accessSync, chmodSync, chownSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, statfsSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { migratePostgres } from "../../src/db/postgres-migrate";
import { connectPostgres } from "../../src/db/postgres-storage";

/** The directory of PostgreSQL's server programs, newest version first; null when none is installed. */
export function postgresBin(): string | null {
  const given = process.env.PIGEON_TEST_PG_BIN;
  if (given) return existsSync(join(given, "initdb")) ? given : null;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0], "bin") : null;
}

export interface PostgresCluster {
  /** The URL of a database on the cluster (`postgres` when none is named). */
  url(database?: string): string;
  /** A new, empty database; its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /**
   * A new database with every migration applied (a copy of a template migrated once per test
   * process); its URL. The oldest of these are dropped once more than KEEP_MIGRATED exist, so a
   * whole suite does not fill the disk: a test's context never lives that long.
   */
  migratedDatabase(): Promise<string>;
  /** The cluster's data directory (its postmaster.pid names the server process). */
  dataDir: string;
}

const KEEP_MIGRATED = 60;

let cluster: Promise<PostgresCluster> | null = null;
let databases = 0;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

function run(command: string[], asUser: string | null): void {
  const argv = asUser ? ["runuser", "-u", asUser, "--", ...command] : command;
  const result = spawnSync(argv[0], argv.slice(1), { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command.join(" ")} failed: ${result.stderr || result.stdout || result.error}`);
}

/** Whether `dir` exists, is writable and has room for a suite's databases (2 GB). */
function roomy(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize >= 2e9;
  } catch {
    return false;
  }
}

function uidOf(user: string): { uid: number; gid: number } {
  const out = spawnSync("id", ["-u", user], { encoding: "utf8" });
  const gid = spawnSync("id", ["-g", user], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`PostgreSQL will not run as root and there is no ${user} user`);
  return { uid: Number(out.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

async function start(durable: boolean): Promise<PostgresCluster> {
  const bin = postgresBin();
  if (!bin) throw new Error("PostgreSQL is not installed (apt-get install postgresql); .ci/run installs it");
  const root = process.getuid?.() === 0;
  const owner = root ? "postgres" : null;
  // The tests' cluster lives in memory where the machine has a roomy /dev/shm: its writes are
  // thrown away anyway, and on a disk they cost the PostgreSQL pass a third of its time (a
  // container's small /dev/shm would fill: then the disk). The bench's durable cluster stays on
  // disk, as a deployment's does.
  const base = !durable && roomy("/dev/shm") ? "/dev/shm" : tmpdir();
  const dir = mkdtempSync(join(base, "pigeon-pg-"));
  const data = join(dir, "data");
  const sockets = join(dir, "run");
  mkdirSync(sockets);
  if (root) {
    const { uid, gid } = uidOf("postgres");
    chmodSync(dir, 0o755);
    chownSync(dir, uid, gid);
    chownSync(sockets, uid, gid);
  }
  run([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"], owner);
  const port = await freePort();
  // Durability does not matter to a throwaway cluster: tests run faster without fsync. The bench
  // asks for PostgreSQL's defaults (fsync, synchronous_commit on), as a deployment runs it.
  const fast = durable ? "" : " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
  const settings = `-p ${port} -k ${sockets} -c listen_addresses=127.0.0.1${fast} -c max_connections=200`;
  run([join(bin, "pg_ctl"), "-D", data, "-o", settings, "-l", join(dir, "log"), "-w", "start"], owner);
  // The cluster goes when this process does, however it ends (bun test fires no exit handlers, and
  // a killed run fires nothing): a detached watcher waits for the process, then stops and deletes it.
  const stop = `${owner ? `runuser -u ${owner} -- ` : ""}${join(bin, "pg_ctl")} -D ${data} -m immediate stop`;
  const watcher = spawn(
    "sh",
    ["-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${stop} >/dev/null 2>&1; rm -rf ${dir}`],
    {
      detached: true,
      stdio: "ignore",
    },
  );
  watcher.unref();
  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const admin = postgres(url(), { max: 1, onnotice: () => {}, idle_timeout: 5 });
  let template: Promise<string> | null = null;
  const migrated: string[] = [];

  async function createDatabase(prefix = "t", from: string | null = null) {
    const name = `${prefix}_${process.pid}_${++databases}`;
    await admin.unsafe(`CREATE DATABASE ${name}${from ? ` TEMPLATE ${from}` : ""}`);
    return name;
  }

  return {
    url,
    dataDir: data,
    createDatabase: async (prefix = "t") => url(await createDatabase(prefix)),
    async migratedDatabase() {
      template ??= (async () => {
        const name = await createDatabase("template");
        const pool = connectPostgres(url(name), { max: 1 });
        try {
          await migratePostgres(pool);
        } finally {
          await pool.end();
        }
        return name;
      })();
      const name = await createDatabase("ctx", await template);
      migrated.push(name);
      while (migrated.length > KEEP_MIGRATED) await admin.unsafe(`DROP DATABASE IF EXISTS ${migrated.shift()} WITH (FORCE)`);
      return url(name);
    },
  };
}

/** The test process's cluster, started on first use. */
/**
 * `durable`: fsync and synchronous_commit on, as PostgreSQL ships (the bench); the tests' cluster
 * runs without them. The first call of a process decides.
 */
export function postgresCluster(options: { durable?: boolean } = {}): Promise<PostgresCluster> {
  cluster ??= start(options.durable ?? false);
  return cluster;
}
