// What the Dockerfile's image is, tested without a container engine (none runs here): the compiled
// binary serves from an otherwise empty root holding only the libraries `ldd` lists (and what a
// container runtime always provides: /proc, /dev/null, /dev/urandom), as a non-root uid, with
// everything but /data read-only to it; `pigeon health`, the image's HEALTHCHECK, answers 0 from
// inside it. Then the Dockerfile and compose.yaml are read for what this run stands for. Needs root
// (chroot, a mount namespace), as the PostgreSQL tests do.
import { afterAll, expect, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Subprocess } from "bun";
import { collectOutput, tempDir } from "../helpers/binary";
import { settle } from "../helpers/api";

const ROOT = join(import.meta.dir, "../..");
const BIN = join(ROOT, "dist", "pigeon");
const NOBODY = 65534;
let server: Subprocess | null = null;
afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill("SIGKILL");
    await server.exited;
  }
});

/** Every file under `dir` with its size and modification time. */
function snapshot(dir: string, out = new Map<string, string>()): Map<string, string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    out.set(path, `${st.size} ${st.mtimeMs} ${st.mode}`);
    if (st.isDirectory() && name !== "proc") snapshot(path, out);
  }
  return out;
}

/** A root with the binary, the libraries ldd lists, /proc, two device nodes and /data; owned by root, read-only to others. */
function buildRoot(): string {
  const root = join(tempDir("pigeon-root-"), "root");
  mkdirSync(root);
  copyFileSync(BIN, join(root, "pigeon"));
  const ldd = Bun.spawnSync(["ldd", BIN], { stdout: "pipe" }).stdout.toString();
  const libs = [...ldd.matchAll(/(\/\S+)/g)].map((m) => m[1]);
  expect(libs.length).toBeGreaterThan(0);
  for (const lib of libs) {
    mkdirSync(join(root, dirname(lib)), { recursive: true });
    copyFileSync(lib, join(root, lib));
  }
  for (const dir of ["proc", "dev", "data"]) mkdirSync(join(root, dir));
  for (const [name, minor] of [
    ["null", 3],
    ["urandom", 9],
  ] as const)
    expect(Bun.spawnSync(["mknod", "-m", "666", join(root, "dev", name), "c", "1", String(minor)]).exitCode).toBe(0);
  // Read-only to everyone but root, except /data, which belongs to the uid Pigeon runs as.
  expect(Bun.spawnSync(["chmod", "-R", "a-w", root]).exitCode).toBe(0);
  chownSync(join(root, "data"), NOBODY, NOBODY);
  chmodSync(join(root, "data"), 0o700);
  return root;
}

/** `args` run as uid 65534 inside `root`, in mount and process namespaces of their own with /proc mounted. */
function inRoot(root: string, args: string[], env: Record<string, string>): Subprocess<"ignore", "pipe", "pipe"> {
  return Bun.spawn(
    [
      "unshare",
      "--mount",
      "--pid",
      "--fork",
      "--kill-child=SIGTERM",
      "sh",
      "-c",
      `mount -t proc proc "$0/proc" && exec chroot --userspec=${NOBODY}:${NOBODY} "$0" "$@"`,
      root,
      ...args,
    ],
    { env: { PATH: process.env.PATH ?? "", ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
}

test("the binary serves from an empty root as a non-root uid, writing only /data; pigeon health answers 0 inside it", async () => {
  expect(process.getuid?.()).toBe(0);
  const root = buildRoot();
  const before = snapshot(root);
  // A fixed port, as the image's PIGEON_PORT is: the health check, run on its own here (a
  // container runs it beside the server, where it also finds the server's recorded address),
  // asks 127.0.0.1 on that port.
  const free = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const freePort = String(free.port);
  free.stop(true);
  const env = { PIGEON_DATA_DIR: "/data", PIGEON_HOST: "127.0.0.1", PIGEON_PORT: freePort };
  server = inRoot(root, ["/pigeon", "serve"], env);
  const output = collectOutput(server);
  expect(await settle(() => /listening on http:\/\/127\.0\.0\.1:\d+/.test(output()) || server!.exitCode !== null, 20_000, 50)).toBe(true);
  const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output())?.[1];
  expect(port, output()).toBeDefined();
  const url = `http://127.0.0.1:${port}`;

  const health = await fetch(`${url}/health`);
  expect(health.status).toBe(200);
  const key = JSON.parse(
    output()
      .split("\n")
      .find((l) => l.startsWith("{") && l.includes("api_secret"))!,
  );
  const contacts = await fetch(`${url}/v1/api/contact/list`, {
    headers: { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret },
  });
  expect(contacts.status).toBe(200);
  // The image's HEALTHCHECK: the same binary, inside the root, finding the server by itself.
  const check = inRoot(root, ["/pigeon", "health"], env);
  expect(await check.exited, await new Response(check.stderr).text()).toBe(0);
  expect(await new Response(check.stdout).text()).toContain("healthy:");

  // unshare ignores SIGTERM while it waits: the signal goes to Pigeon, its child, as a container
  // runtime's stop would. Pigeon stops cleanly; unshare then exits with its status.
  const child = readFileSync(`/proc/${server.pid}/task/${server.pid}/children`, "utf8").trim().split(/\s+/)[0];
  expect(child).toMatch(/^\d+$/);
  process.kill(Number(child), "SIGTERM");
  expect(await server.exited).toBe(0);
  // Nothing outside /data changed; /data holds the database and key, the uid's own.
  const after = snapshot(root);
  const changed = [...after].filter(([path, sig]) => !path.startsWith(join(root, "data")) && before.get(path) !== sig).map(([p]) => p);
  expect(changed).toEqual([]);
  const data = readdirSync(join(root, "data"));
  expect(data).toContain("pigeon.db");
  expect(data).toContain("pigeon.key");
  for (const name of data) expect(statSync(join(root, "data", name)).uid).toBe(NOBODY);
}, 40_000);

test("the Dockerfile and compose.yaml describe that image: non-root, a /data volume, pigeon health as the health check", () => {
  const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");
  const lines = dockerfile.split("\n").filter((l) => !l.startsWith("#"));
  const user = lines.find((l) => l.startsWith("USER "))!;
  expect(user).toBeDefined();
  expect(user.split(/\s+/)[1].split(":")[0]).not.toBe("0");
  expect(lines).toContain('VOLUME ["/data"]');
  expect(lines.find((l) => l.startsWith("HEALTHCHECK"))).toContain('CMD ["/usr/local/bin/pigeon", "health"]');
  expect(lines.some((l) => l.includes("PIGEON_DATA_DIR=/data"))).toBe(true);
  const compose = Bun.YAML.parse(readFileSync(join(ROOT, "compose.yaml"), "utf8")) as {
    services: Record<string, { profiles?: string[]; environment?: Record<string, string>; volumes?: string[] }>;
  };
  expect(compose.services.pigeon.volumes).toContain("pigeon-data:/data");
  const replicas = Object.entries(compose.services).filter(([, s]) => s.environment?.PIGEON_DATABASE_URL);
  expect(replicas.map(([name]) => name).sort()).toEqual(["pigeon-a", "pigeon-b"]);
  for (const [, s] of replicas) {
    expect(s.profiles).toEqual(["postgres"]);
    // One key file for every replica.
    expect(s.environment!.PIGEON_KEY_FILE).toBe("/keys/pigeon.key");
    expect(s.volumes).toContain("pigeon-keys:/keys");
  }
  expect(compose.services.proxy.profiles).toEqual(["postgres"]);
});
