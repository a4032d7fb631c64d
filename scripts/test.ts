// The README's test command, after the builds and checks: the suite on SQLite and the suite on
// PostgreSQL side by side, then the browser tests. The two passes use different databases, data
// directories and ports, so they share nothing but the machine; side by side they take about as
// long as the longer of the two, not their sum. Each pass runs its files in groups, a `bun test`
// process a group (scripts/test-chunks.ts says why). The SQLite pass prints as it runs; the PostgreSQL
// pass is written to a file and printed whole when it ends, so the two logs do not interleave
// (each keeps its own "N pass" / "N fail" lines for .ci/run to count). PIGEON_TEST_SERIAL=1 runs
// the passes one after the other (a slower machine, or to read one pass's timings alone). Each
// test's bound is 60 s: room for a machine at half our speed, busy beside the run; no test is
// meant to come near it (a long one is sized by the property it shows, not by this machine).
import { mkdtempSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runInGroups, testFiles } from "./test-chunks";

const root = join(import.meta.dir, "..");
const bun = process.execPath;
const serial = process.env.PIGEON_TEST_SERIAL === "1";

/** Writes all of `text` to stdout, waiting out a full pipe (a non-blocking stdout answers EAGAIN). */
function printAll(text: string): void {
  const bytes = Buffer.from(text);
  let at = 0;
  while (at < bytes.length) {
    try {
      at += writeSync(1, bytes, at, Math.min(64 * 1024, bytes.length - at));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
      Bun.sleepSync(5);
    }
  }
}

/** Every file under test/, ten to a process (scripts/test-chunks.ts). */
function sqlitePass(): Promise<number> {
  return runInGroups(testFiles(), 10, process.env);
}

async function postgresPass(): Promise<number> {
  if (serial) return Bun.spawn([bun, "run", "scripts/test-postgres.ts"], { cwd: root, stdout: "inherit", stderr: "inherit" }).exited;
  const dir = mkdtempSync(join(tmpdir(), "pigeon-pg-pass-"));
  const log = join(dir, "log");
  const started = performance.now();
  // bun test reports on stderr and the tests log on stdout: both go to the one file, in the order they came.
  const proc = Bun.spawn(["sh", "-c", 'exec "$0" run scripts/test-postgres.ts >"$1" 2>&1', bun, log], {
    cwd: root,
    stdout: "ignore",
    stderr: "ignore",
  });
  const code = await proc.exited;
  const out = readFileSync(log, "utf8");
  rmSync(dir, { recursive: true, force: true });
  printAll(
    `\n===== the suite on PostgreSQL (run beside the SQLite pass, ${((performance.now() - started) / 1000).toFixed(0)} s) =====\n${out}\n`,
  );
  return code;
}

let sqlite: number;
let pg: number;
if (serial) {
  sqlite = await sqlitePass();
  pg = await postgresPass();
} else {
  [sqlite, pg] = await Promise.all([sqlitePass(), postgresPass()]);
}
const browser = await Bun.spawn([bun, "run", "scripts/test-browser.ts"], { cwd: root, stdout: "inherit", stderr: "inherit" }).exited;
console.log(
  `passes: SQLite ${sqlite === 0 ? "passed" : "failed"}, PostgreSQL ${pg === 0 ? "passed" : "failed"}, browser ${browser === 0 ? "passed" : "failed"}`,
);
process.exit(sqlite === 0 && pg === 0 && browser === 0 ? 0 : 1);
