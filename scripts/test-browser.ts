// The browser tests (test-browser/), each file in its own `bun test` process. Chromium is driven
// over pipes, and in one long test process Bun has been seen to lose a child's pipe (EBADF from
// epoll_ctl) and so Chromium's: a browser in a later file then dies. A process per file keeps each
// browser's pipes in a fresh process. Output goes straight through, so each file's "N pass" /
// "N fail" lines reach the log; the exit code is non-zero when any file fails.
import { Glob } from "bun";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const files = [...new Glob("test-browser/*.test.ts").scanSync(root)].sort();
let failed = 0;
for (const file of files) {
  const proc = Bun.spawn([process.execPath, "test", "--timeout", "30000", `./${file}`], {
    cwd: root,
    stdout: "inherit",
    stderr: "inherit",
  });
  if ((await proc.exited) !== 0) failed++;
}
console.log(`browser test files: ${files.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
