// Runs test files a few at a time, each group in a `bun test` process of its own, one group after
// another. One process for a whole pass keeps every file's test contexts alive to the end (a
// file's module, and the app and services its tests built, stay reachable): the heap grew past a
// gigabyte, and the collector's work with it, until a file late in the PostgreSQL pass ran ten to
// seventeen times slower than it does alone. A fresh process per group starts each group on a
// small heap; `--isolate` (a fresh global per file in one process) did not help. Each group's
// "N pass" / "N fail" lines reach the output as they come, for .ci/run to count.
import { Glob } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const ROOT = join(import.meta.dir, "..");

/** Files under test/, sorted (the order bun test would run them in). */
export function testFiles(): string[] {
  return [...new Glob("test/**/*.test.ts").scanSync(ROOT)].sort();
}

/** The calls that build a test context: createTestContext itself, and the helpers that call it for a file. */
const CONTEXT_BUILDERS = ["createTestContext(", "startTwilioRig("];

/** The files the PostgreSQL pass runs: those that build a test context (scripts/test-postgres.ts). */
export function postgresFiles(): string[] {
  return testFiles().filter((file) => CONTEXT_BUILDERS.some((builder) => readFileSync(join(ROOT, file), "utf8").includes(builder)));
}

/** `files` cut into groups of `size`, in order. */
export function groupsOf(files: string[], size: number): string[][] {
  const out: string[][] = [];
  for (let at = 0; at < files.length; at += size) out.push(files.slice(at, at + size));
  return out;
}

/** Runs `files` in groups of `size`, each group's bun test in turn; the worst exit code. */
export async function runInGroups(files: string[], size: number, env: Record<string, string | undefined>): Promise<number> {
  let worst = 0;
  for (const group of groupsOf(files, size)) {
    const proc = Bun.spawn([process.execPath, "test", "--timeout", "60000", ...group.map((f) => `./${f}`)], {
      cwd: ROOT,
      env,
      stdout: "inherit",
      stderr: "inherit",
    });
    const code = await proc.exited;
    if (code !== 0) worst = code;
  }
  return worst;
}
