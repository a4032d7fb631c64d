// `pigeon devices pair-info` on the compiled binary prints what a phone must enter: the public URL
// when one is set, else the address the running server actually bound (port 0 picks one), else
// PIGEON_PORT/PIGEON_HOST when no server is running.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "./helpers/binary";

const bin = isolatedBinary();
const servers: RunningServer[] = [];

afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.stop("SIGKILL");
});

async function pairInfo(dataDir: string, env: Record<string, string> = {}) {
  const r = await runCommand(bin, ["devices", "pair-info", "--json"], { PIGEON_DATA_DIR: dataDir, ...env });
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout.trim()) as { server_url: string; pairing_token: string };
}

describe("devices pair-info", () => {
  test("prints the port the running server bound, not 8080", async () => {
    const dataDir = tempDir();
    const server = await startServer(bin, { PIGEON_DATA_DIR: dataDir, PIGEON_PORT: "0" });
    servers.push(server);
    expect(server.port).not.toBe(8080);
    expect((await pairInfo(dataDir)).server_url).toBe(`http://127.0.0.1:${server.port}/mobile/v1`);
    // The record is the server's alone to read and goes away with a clean stop.
    const record = join(dataDir, "pigeon.listen");
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
    expect(existsSync(join(dataDir, "pigeon.listen"))).toBe(true);
    expect((await pairInfo(dataDir, { PIGEON_PORT: "9124", PIGEON_HOST: "127.0.0.1" })).server_url).toBe("http://127.0.0.1:9124/mobile/v1");
  });
});
