// Runs the compiled binary the way a self-hoster does: copied alone into an empty folder, started
// on a temp data dir, talked to over HTTP.
import { copyFileSync, existsSync, linkSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { tempDirsToRemove } from "./temp-dirs";

const BUILT = join(import.meta.dir, "../../dist/pigeon");

// Every folder made here is removed when the test run ends (test/helpers/preload.ts): a full run
// makes dozens, and they would fill a small /tmp over a few runs.
function madeDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirsToRemove.push(dir);
  return dir;
}

/** A folder holding nothing but the binary (a hard link where the file system allows, else a copy). */
export function isolatedBinary(): string {
  if (!existsSync(BUILT)) throw new Error("dist/pigeon is missing: run `bun run build` first (npm test does)");
  const bin = join(madeDir("pigeon-bin-"), "pigeon");
  try {
    linkSync(BUILT, bin);
  } catch {
    copyFileSync(BUILT, bin);
  }
  return bin;
}

export function tempDir(prefix = "pigeon-data-"): string {
  return madeDir(prefix);
}

export interface Credentials {
  api_key: string;
  api_secret: string;
}

export interface RunningServer {
  url: string;
  port: number;
  output: () => string;
  /** What it printed on each stream alone. */
  stdout: () => string;
  stderr: () => string;
  /** The key and secret printed on first start, if any. */
  initialKey: Credentials | null;
  proc: Subprocess;
  stop(signal?: NodeJS.Signals): Promise<number>;
  fetch(path: string, init?: RequestInit & { key?: Credentials }): Promise<Response>;
  /** GET `path`, or POST `body` as JSON to it, with `key`; the status and the parsed answer. */
  api(path: string, key: Credentials, body?: unknown): Promise<{ status: number; body: any }>;
}

/**
 * Runs a CLI command to completion (optionally with `stdin`). Synchronously: reading an async
 * child's pipes sometimes fails in Bun with EBADF from epoll_ctl late in a long run, and a CLI
 * command is short and talks to nothing in this process.
 */
export async function runCommand(bin: string, args: string[], env: Record<string, string>, stdin?: string) {
  const proc = Bun.spawnSync([bin, ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdin: stdin === undefined ? "ignore" : Buffer.from(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  return { stdout: proc.stdout.toString(), stderr: proc.stderr.toString(), code: proc.exitCode };
}

/** Everything a piped child prints, stdout and stderr together, read as it comes. */
export function collectOutput(proc: Subprocess): () => string {
  return collectStreams(proc).all;
}

/** What a piped child prints: both streams together as it comes, and each stream alone. */
export function collectStreams(proc: Subprocess) {
  let all = "";
  const alone = { stdout: "", stderr: "" };
  const pump = async (name: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    const reader = (proc[name] as ReadableStream<Uint8Array>).getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      const text = decoder.decode(r.value, { stream: true });
      all += text;
      alone[name] += text;
    }
  };
  void pump("stdout");
  void pump("stderr");
  return { all: () => all, stdout: () => alone.stdout, stderr: () => alone.stderr };
}

/** `prefix`: a command the server runs under (it execs `bin serve` in the end), such as a namespace. */
export async function startServer(
  bin: string,
  env: Record<string, string>,
  timeoutMs = 15_000,
  prefix: string[] = [],
): Promise<RunningServer> {
  const proc = Bun.spawn([...prefix, bin, "serve"], {
    env: { PATH: process.env.PATH ?? "", PIGEON_HOST: "127.0.0.1", PIGEON_PORT: "0", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const streams = collectStreams(proc);
  const output = streams.all;

  const deadline = Date.now() + timeoutMs;
  let port = 0;
  while (Date.now() < deadline) {
    const m = /listening on https?:\/\/[^:]+:(\d+)/.exec(output());
    if (m) {
      port = Number(m[1]);
      break;
    }
    if (proc.exitCode !== null) throw new Error(`pigeon exited with ${proc.exitCode}: ${output()}`);
    await Bun.sleep(25);
  }
  if (!port) {
    proc.kill("SIGKILL");
    throw new Error(`pigeon did not start in time: ${output()}`);
  }
  const jsonLine = output()
    .split("\n")
    .find((l) => l.startsWith("{") && l.includes("api_secret"));
  const initialKey = jsonLine ? (JSON.parse(jsonLine) as Credentials) : null;
  const url = `http://127.0.0.1:${port}`;
  const server: RunningServer = {
    url,
    port,
    output,
    stdout: streams.stdout,
    stderr: streams.stderr,
    initialKey,
    proc,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      proc.kill(signal);
      return await proc.exited;
    },
    fetch(path, init = {}) {
      const headers = new Headers(init.headers);
      if (init.key) {
        headers.set("authorization", `Bearer ${init.key.api_key}`);
        headers.set("x-api-secret", init.key.api_secret);
      }
      if (init.body && !headers.has("content-type")) headers.set("content-type", "application/json");
      return fetch(url + path, { ...init, headers });
    },
    async api(path, key, body) {
      const res = await server.fetch(path, body === undefined ? { key } : { method: "POST", key, body: JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    },
  };
  return server;
}
