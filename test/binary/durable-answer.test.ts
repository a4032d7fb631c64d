// The compiled binary answers a write only after the disk has it, watched from outside with
// strace: SQLite commits without waiting for the disk and the storage flushes the WAL file itself
// (src/db/sqlite-storage.ts), so the one thing that shows the promise is kept is the order of the
// process's system calls — the WAL file's flush ends before the answer is written to the socket.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, startServer, tempDir, type RunningServer } from "../helpers/binary";

const dir = tempDir();
const trace = join(dir, "strace.log");
let server: RunningServer;

beforeAll(async () => {
  if (!Bun.which("strace")) throw new Error("strace is missing: install Debian's strace (scripts/ensure-tools.sh does)");
  // -f: the flush runs on another thread; -y: each descriptor with the file or socket it is. Each
  // flush is held 100 ms after the disk returned, so an answer that did not wait for it would be
  // written while it is still under way.
  const strace = [
    "strace",
    "-f",
    "-y",
    "-qq",
    "-s",
    "24",
    "-e",
    "trace=fdatasync,fsync,write,writev,sendto,sendmsg",
    "-e",
    "inject=fdatasync,fsync:delay_exit=100000",
    "-o",
    trace,
  ];
  server = await startServer(isolatedBinary(), { PIGEON_DATA_DIR: join(dir, "data") }, 30_000, strace);
});
afterAll(async () => {
  if (!server) return;
  // strace passes no signal on: the server it started is stopped by its own pid, then strace ends.
  const strace = server.proc.pid;
  const child = readFileSync(`/proc/${strace}/task/${strace}/children`, "utf8").trim().split(" ")[0];
  if (child) process.kill(Number(child), "SIGTERM");
  await server.proc.exited;
});

/** The trace's lines from byte `from` on. */
function calls(from: number): string[] {
  return readFileSync(trace, "utf8").slice(from).split("\n");
}

/**
 * Whether a flush of the WAL file both began and ended among `lines` (strace -f splits a call that
 * another thread interrupts into its start, "<unfinished ...>", and its "resumed" end).
 */
function walFlushed(lines: string[]): boolean {
  return lines.some((line, at) => {
    if (!/\bf(data)?sync\(\d+<[^>]*pigeon\.db-wal>/.test(line)) return false;
    if (/ = 0( \(DELAYED\))?$/.test(line)) return true;
    const pid = /^(\d+) /.exec(line)?.[1];
    return lines.slice(at + 1).some((later) => later.startsWith(`${pid} <... f`) && /sync resumed>.* = 0( \(DELAYED\))?$/.test(later));
  });
}

describe("an answered write is on disk", () => {
  test("each contact created is answered after a flush of the WAL file that ended after the request came", async () => {
    const key = server.initialKey!;
    for (let i = 0; i < 5; i++) {
      const from = readFileSync(trace, "utf8").length;
      const phone = `+1415555${String(1000 + i)}`;
      const created = await server.api("/v1/api/contact/create", key, { name: `Durable ${i}`, phone });
      expect(created.status).toBe(200);
      const lines = calls(from);
      const answer = lines.findIndex((line) => /\b(sendto|sendmsg|writev?)\(\d+<(socket|TCP)/.test(line) && line.includes("HTTP/1.1 200"));
      expect(answer).toBeGreaterThan(-1);
      expect({ contact: i, flushedBeforeAnswer: walFlushed(lines.slice(0, answer)) }).toEqual({ contact: i, flushedBeforeAnswer: true });
    }
  });
});
