// `pigeon devices pair-info` on the compiled binary prints what a phone must enter: the public URL
// when one is set, else the address the running server actually bound (port 0 picks one), else
// PIGEON_PORT/PIGEON_HOST when no server is running. On PostgreSQL too: there several servers may
// share a data directory, and with none found and no PIGEON_PORT the command says it cannot know.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "../helpers/binary";
import { postgresCluster } from "../helpers/postgres";

const bin = isolatedBinary();
const servers: RunningServer[] = [];

afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.stop("SIGKILL");
});

async function pairInfo(dataDir: string, env: Record<string, string> = {}) {
  const r = await pairInfoRun(dataDir, env);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout.trim()) as { server_url: string; pairing_token: string };
}

function pairInfoRun(dataDir: string, env: Record<string, string> = {}) {
  return runCommand(bin, ["devices", "pair-info", "--json"], { PIGEON_DATA_DIR: dataDir, ...env });
}

describe("devices pair-info", () => {
  test("prints the port the running server bound, not 8080", async () => {
    const dataDir = tempDir();
    const server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_PORT: "0" });
    servers.push(server);
    expect(server.port).not.toBe(8080);
    expect((await pairInfo(dataDir)).server_url).toBe(`http://127.0.0.1:${server.port}/mobile/v1`);
    // The record is the server's alone to read and goes away with a clean stop.
    const record = join(dataDir, `pigeon.listen.${server.proc.pid}`);
    expect(statSync(record).mode & 0o777).toBe(0o600);
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(existsSync(record)).toBe(false);
    // No server running: what PIGEON_PORT/PIGEON_HOST say.
    expect((await pairInfo(dataDir, { PIGEON_PORT: "9123", PIGEON_HOST: "127.0.0.1" })).server_url).toBe("http://127.0.0.1:9123/mobile/v1");
  });

  test("with PIGEON_PUBLIC_URL it prints that URL with /mobile/v1", async () => {
    const dataDir = tempDir();
    const server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_PORT: "0", PIGEON_PUBLIC_URL: "https://sms.example.com" });
    servers.push(server);
    const info = await pairInfo(dataDir, { PIGEON_PUBLIC_URL: "https://sms.example.com/" });
    expect(info.server_url).toBe("https://sms.example.com/mobile/v1");
    // The same URL the server gives over its API.
    const pairing = await (await server.fetch("/v1/api/device/pairing", { key: server.initialKey! })).json();
    expect(pairing.data.server_url).toBe(info.server_url);
    await server.stop("SIGTERM");
  });

  test("a record left by a killed server is not believed", async () => {
    const dataDir = tempDir();
    const server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_PORT: "0" });
    servers.push(server);
    await server.stop("SIGKILL");
    const left = join(dataDir, `pigeon.listen.${server.proc.pid}`);
    expect(existsSync(left)).toBe(true);
    expect((await pairInfo(dataDir, { PIGEON_PORT: "9124", PIGEON_HOST: "127.0.0.1" })).server_url).toBe("http://127.0.0.1:9124/mobile/v1");
    // The next server to start clears it away, and its own is the one believed.
    const next = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_PORT: "0" });
    servers.push(next);
    expect(existsSync(left)).toBe(false);
    expect((await pairInfo(dataDir)).server_url).toBe(`http://127.0.0.1:${next.port}/mobile/v1`);
    await next.stop("SIGTERM");
  });

  test("on PostgreSQL it prints a running server's port; with none found and no PIGEON_PORT it says what to set", async () => {
    const pg = await postgresCluster();
    const env = { PIGEON_DATABASE_URL: await pg.migratedDatabase(), PIGEON_HOST: "127.0.0.1" };
    const dataDir = tempDir();
    const first = await startServer(bin, { ...env, PIGEON_DATA_DIR: dataDir, PIGEON_PORT: "0" }, 30_000);
    servers.push(first);
    // A second server on the same data directory (PostgreSQL takes no lock there): either address is one a phone reaches.
    const second = await startServer(bin, { ...env, PIGEON_DATA_DIR: dataDir, PIGEON_PORT: "0" }, 30_000);
    servers.push(second);
    const urls = [first, second].map((s) => `http://127.0.0.1:${s.port}/mobile/v1`);
    expect(urls).toContain((await pairInfo(dataDir, env)).server_url);
    expect(await first.stop("SIGTERM")).toBe(0);
    expect((await pairInfo(dataDir, env)).server_url).toBe(urls[1]);
    await second.stop("SIGKILL");
    // None running: not the default port, but a plain refusal naming what to set.
    const refused = await pairInfoRun(dataDir, env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain("cannot tell the server's address");
    expect(refused.stderr).toContain("PIGEON_PUBLIC_URL");
    expect((await pairInfo(dataDir, { ...env, PIGEON_PORT: "9125" })).server_url).toBe("http://127.0.0.1:9125/mobile/v1");
    expect((await pairInfo(dataDir, { ...env, PIGEON_PUBLIC_URL: "https://sms.example.com" })).server_url).toBe(
      "https://sms.example.com/mobile/v1",
    );
  }, 90_000);
});
