// `pigeon health [--url URL]`, the container's health check, on the compiled binary: 0 while the
// server answers healthy, 1 when it answers otherwise or cannot be reached, 2 for a bad --url.
import { afterAll, expect, test } from "bun:test";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "../helpers/binary";

const bin = isolatedBinary();
const running: RunningServer[] = [];
const others: { stop(): void }[] = [];
afterAll(async () => {
  for (const server of running) if (server.proc.exitCode === null) await server.stop("SIGKILL");
  for (const other of others) other.stop();
});

test("finds the data directory's server by itself, or asks --url; 1 once it is gone", async () => {
  const dataDir = tempDir();
  const server = await startServer(bin, { PIGEON_DATA_DIR: dataDir });
  running.push(server);
  const found = await runCommand(bin, ["health"], { PIGEON_DATA_DIR: dataDir });
  expect(found.code).toBe(0);
  expect(found.stdout.trim()).toBe(`healthy: ${server.url}/health`);
  const asked = await runCommand(bin, ["health", "--url", server.url, "--json"], { PIGEON_DATA_DIR: tempDir() });
  expect(asked.code).toBe(0);
  expect(JSON.parse(asked.stdout)).toMatchObject({ status: "ok", database: "ok" });
  expect(await server.stop("SIGTERM")).toBe(0);
  const gone = await runCommand(bin, ["health", "--url", server.url], {});
  expect(gone.code).toBe(1);
  expect(gone.stderr).toContain(`unhealthy: cannot reach ${server.url}/health`);
}, 30_000);

test("a server that answers, but not healthy: 1, with its status and error code", async () => {
  const sick = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () =>
      Response.json({ status_id: 507, message: "full", data: { error_code: "storage_full", status: "degraded" } }, { status: 507 }),
  });
  others.push(sick);
  // Run beside this process's event loop, which serves the answer (runCommand would block it).
  const proc = Bun.spawn([bin, "health", "--url", `http://127.0.0.1:${sick.port}`], { stdout: "pipe", stderr: "pipe" });
  expect(await proc.exited).toBe(1);
  expect(await new Response(proc.stderr).text()).toContain("answered 507 storage_full");
  const bad = await runCommand(bin, ["health", "--url", "ftp://example.com"], {});
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--url must be an http:// or https:// URL");
});
