// A second `pigeon serve` on the same data directory or the same port exits 2 with one clear line
// instead of starting beside the first (two workers on one database would send messages twice; a
// shared port would split the connections). A SIGKILLed server leaves its lock behind and the next
// start still succeeds; CLI commands keep working beside a running server.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "../helpers/binary";

const bin = isolatedBinary();
let running: RunningServer[] = [];
afterEach(async () => {
  for (const s of running) if (s.proc.exitCode === null) await s.stop("SIGKILL");
  running = [];
});

async function start(env: Record<string, string>) {
  const s = await startServer(bin, env);
  running.push(s);
  return s;
}

/** Runs `pigeon serve` expecting it to give up; kills it if it is still running after 10 s. */
async function serveExpectingExit(env: Record<string, string>) {
  const proc = Bun.spawn([bin, "serve"], {
    env: { PATH: process.env.PATH ?? "", PIGEON_HOST: "127.0.0.1", PIGEON_PORT: "0", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { stdout, stderr, code };
}

describe("one server per data directory and port", () => {
  test("a second server on the same data directory exits 2 with a clear message", async () => {
    const dir = tempDir();
    const first = await start({ PIGEON_DATA_DIR: dir });
    const second = await serveExpectingExit({ PIGEON_DATA_DIR: dir });
    expect(second.code).toBe(2);
    const lines = second.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("already using the data directory");
    expect(lines[0]).toContain(String(first.proc.pid));
    expect(second.stdout).not.toContain("listening");
    // The first is untouched.
    expect((await first.fetch("/health")).status).toBe(200);
  });

  test("a second server on the same port with another data directory exits 2 with a clear message", async () => {
    const first = await start({ PIGEON_DATA_DIR: tempDir() });
    const second = await serveExpectingExit({ PIGEON_DATA_DIR: tempDir(), PIGEON_PORT: String(first.port) });
    expect(second.code).toBe(2);
    const lines = second.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`port ${first.port}`);
    expect(lines[0]).toContain("already in use");
    // Every connection still reaches the first server.
    for (let i = 0; i < 10; i++) expect((await first.fetch("/health")).status).toBe(200);
  });

  test("after a SIGKILL the lock is left behind, and the next start succeeds", async () => {
    const dir = tempDir();
    const first = await start({ PIGEON_DATA_DIR: dir });
    const key = first.initialKey!;
    await first.stop("SIGKILL");
    expect(existsSync(join(dir, "pigeon.lock"))).toBe(true);
    const second = await start({ PIGEON_DATA_DIR: dir });
    expect((await second.fetch("/v1/api/project/list", { key })).status).toBe(200);
    // A clean stop removes the lock.
    expect(await second.stop("SIGTERM")).toBe(0);
    expect(existsSync(join(dir, "pigeon.lock"))).toBe(false);
  });

  test("CLI commands work beside a running server", async () => {
    const dir = tempDir();
    const server = await start({ PIGEON_DATA_DIR: dir });
    const created = await runCommand(bin, ["keys", "create", "--name", "beside", "--json"], { PIGEON_DATA_DIR: dir });
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout) as { api_key: string; api_secret: string };
    expect((await server.fetch("/v1/api/project/list", { key })).status).toBe(200);
    expect((await server.fetch("/health")).status).toBe(200);
  });
});
