// The README's test command, after the builds and checks: the suite on SQLite, the suite again on
// PostgreSQL (the files that build a test context), and the browser tests, as jobs shared by two
// lanes. A job is a `bun test` process: ten SQLite files, eight PostgreSQL files (each with its own
// throwaway cluster) or one browser file (scripts/test-browser.ts, which retries Playwright's own
// protocol race). One process for a whole pass kept every file's contexts alive and slowed the
// late files many times over (scripts/test-chunks.ts); two passes side by side left one lane idle
// while the other still had half its work. Jobs use their own databases, data directories and
// ports, so two share nothing but the machine. The longest come first (the compiled binary's,
// then PostgreSQL's), so neither lane is left with a long one at the end. Each job's output is
// printed whole when it ends, with its own "N pass" / "N fail" lines for .ci/run to count.
// PIGEON_TEST_SERIAL=1 runs one job at a time. Each test's bound is 60 s: room for a machine at
// half our speed, busy beside the run; no test is meant to come near it.
import { Glob } from "bun";
import { mkdtempSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupsOf, postgresFiles, ROOT, testFiles } from "./test-chunks";

const bun = process.execPath;
const LANES = process.env.PIGEON_TEST_SERIAL === "1" ? 1 : 2;

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

type Pass = "SQLite" | "PostgreSQL" | "browser";
interface Job {
  pass: Pass;
  argv: string[];
  env: Record<string, string | undefined>;
  files: string[];
}

const test = (files: string[]) => [bun, "test", "--timeout", "60000", ...files.map((f) => `./${f}`)];
const sqliteGroups = groupsOf(testFiles(), 10);
const binary = (group: string[]) => group.some((f) => f.startsWith("test/binary/"));
const postgres = postgresFiles();
const jobs: Job[] = [
  ...sqliteGroups.filter(binary).map((files) => ({ pass: "SQLite" as const, argv: test(files), env: process.env, files })),
  ...groupsOf(postgres, 8).map((files) => ({
    pass: "PostgreSQL" as const,
    argv: test(files),
    env: { ...process.env, PIGEON_TEST_BACKEND: "postgres" },
    files,
  })),
  ...sqliteGroups.filter((g) => !binary(g)).map((files) => ({ pass: "SQLite" as const, argv: test(files), env: process.env, files })),
  ...[...new Glob("test-browser/*.test.ts").scanSync(ROOT)]
    .sort()
    .map((file) => ({ pass: "browser" as const, argv: [bun, "run", "scripts/test-browser.ts", file], env: process.env, files: [file] })),
];
console.log(
  `${jobs.length} jobs in ${LANES} lane(s): the suite on SQLite, ${postgres.length} of its files again on PostgreSQL, then the browser`,
);

const failed = new Set<Pass>();
async function run(job: Job): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "pigeon-test-job-"));
  const log = join(dir, "log");
  const started = performance.now();
  // bun test reports on stderr and the tests log on stdout: both go to the one file, in the order they came.
  const proc = Bun.spawn(["sh", "-c", 'log=$1; shift; exec "$@" >"$log" 2>&1', "sh", log, ...job.argv], {
    cwd: ROOT,
    env: job.env,
    stdout: "ignore",
    stderr: "ignore",
  });
  const code = await proc.exited;
  const out = readFileSync(log, "utf8");
  rmSync(dir, { recursive: true, force: true });
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  printAll(`\n===== ${job.pass}: ${job.files.join(" ")} (${seconds} s) =====\n${out}\n`);
  if (code !== 0) failed.add(job.pass);
}

let next = 0;
async function lane(): Promise<void> {
  while (next < jobs.length) await run(jobs[next++]!);
}
await Promise.all(Array.from({ length: LANES }, lane));
const state = (pass: Pass) => `${pass} ${failed.has(pass) ? "failed" : "passed"}`;
console.log(`passes: ${state("SQLite")}, ${state("PostgreSQL")}, ${state("browser")}`);
process.exit(failed.size === 0 ? 0 : 1);
