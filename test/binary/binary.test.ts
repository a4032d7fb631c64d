// The compiled binary, copied alone into an empty folder, on a temp data dir, over real HTTP.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "../helpers/binary";
import { RECIPIENT } from "../helpers/numbers";

const bin = isolatedBinary();
const dataDir = tempDir();
const env = { PIGEON_DATA_DIR: dataDir };
let server: RunningServer;

beforeAll(async () => {
  server = await startServer(bin, env);
});
afterAll(async () => {
  await server?.stop("SIGKILL");
});

describe("the binary", () => {
  test("--version and --help", async () => {
    const v = await runCommand(bin, ["--version"], env);
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(/^pigeon \d+\.\d+\.\d+/);
    const h = await runCommand(bin, ["--help"], env);
    expect(h.code).toBe(0);
    expect(h.stdout).toContain("keys create --name N");
  });

  test("first start prints one key and secret that work", async () => {
    expect(server.initialKey?.api_key).toStartWith("pk_");
    expect(server.output()).toContain("shown only this once");
    const r = await server.fetch("/v1/api/device/list", { key: server.initialKey! });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      status_id: 200,
      message: "Devices fetched",
      data: { devices: [], pagination: { page: 1, limit: 20, total: 0 } },
    });
  });

  test("serves /health, /openapi.json and /docs with its assets from the binary", async () => {
    expect((await server.fetch("/health")).status).toBe(200);
    expect((await (await server.fetch("/openapi.json")).json()).info.title).toBe("Pigeon API");
    const page = await (await server.fetch("/docs")).text();
    for (const m of page.matchAll(/(?:src|href)="([^"]+)"/g)) {
      const asset = await server.fetch(m[1]);
      expect(asset.status).toBe(200);
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(10);
    }
  });

  test("`keys create --json` works while the server runs, and the key is accepted at once", async () => {
    const r = await runCommand(bin, ["keys", "create", "--name", "ci", "--json"], env);
    expect(r.code).toBe(0);
    const created = JSON.parse(r.stdout);
    expect(created).toMatchObject({ name: "ci", status: "active" });
    expect(created.api_key).toStartWith("pk_");
    expect(created.api_secret).toStartWith("sk_");
    expect((await server.fetch("/v1/api/project/list", { key: created })).status).toBe(200);

    const list = await runCommand(bin, ["keys", "list", "--json"], env);
    const keys = JSON.parse(list.stdout);
    expect(keys.map((k: { name: string }) => k.name)).toEqual(["Initial key", "ci"]);
    expect(list.stdout).not.toContain(created.api_secret);
  });

  test("keys disable, rotate and accounts suspend take effect on the running server", async () => {
    const created = JSON.parse((await runCommand(bin, ["keys", "create", "--name", "tmp", "--json"], env)).stdout);
    // Each key is used before the CLI changes it: the server keeps what it read (the cache
    // generation's triggers, migrations/0034), and the CLI's write must reach it all the same.
    expect((await server.fetch("/v1/api/project/list", { key: created })).status).toBe(200);
    expect((await runCommand(bin, ["keys", "disable", created.api_key], env)).code).toBe(0);
    expect((await server.fetch("/v1/api/project/list", { key: created })).status).toBe(403);
    await runCommand(bin, ["keys", "enable", created.api_key], env);
    expect((await server.fetch("/v1/api/project/list", { key: created })).status).toBe(200);
    const rotated = JSON.parse((await runCommand(bin, ["keys", "rotate", created.api_key, "--json"], env)).stdout);
    expect((await server.fetch("/v1/api/project/list", { key: created })).status).toBe(401);
    expect((await server.fetch("/v1/api/project/list", { key: rotated })).status).toBe(200);

    const acct = JSON.parse((await runCommand(bin, ["accounts", "create", "--name", "Tenant", "--json"], env)).stdout);
    const tenantKey = JSON.parse(
      (await runCommand(bin, ["keys", "create", "--name", "t", "--workspace", String(acct.workspace_id), "--json"], env)).stdout,
    );
    expect((await server.fetch("/v1/api/project/list", { key: tenantKey })).status).toBe(200);
    await runCommand(bin, ["accounts", "suspend", String(acct.account_id)], env);
    const r = await server.fetch("/v1/api/project/list", { key: tenantKey });
    expect(r.status).toBe(403);
    expect((await r.json()).data.error_code).toBe("account_suspended");
    await runCommand(bin, ["accounts", "resume", String(acct.account_id)], env);
    expect((await server.fetch("/v1/api/project/list", { key: tenantKey })).status).toBe(200);
  });

  test("workspaces create|list, and a key of another workspace sees none of this one's rows", async () => {
    const ws = JSON.parse((await runCommand(bin, ["workspaces", "create", "--name", "Branch", "--json"], env)).stdout);
    const key = JSON.parse(
      (await runCommand(bin, ["keys", "create", "--name", "b", "--workspace", String(ws.workspace_id), "--json"], env)).stdout,
    );
    const list = JSON.parse((await runCommand(bin, ["workspaces", "list", "--json"], env)).stdout);
    expect(list.map((w: { name: string }) => w.name)).toContain("Branch");
    const created = await server.fetch("/v1/api/contact/create", {
      method: "POST",
      key: server.initialKey!,
      body: JSON.stringify({ name: "Ada", phone: RECIPIENT }),
    });
    const contact = (await created.json()).data;
    expect((await server.fetch(`/v1/api/contact/${contact.contact_id}`, { key })).status).toBe(404);
  });

  test("bad input over real HTTP: malformed JSON 400, oversized body 413, in the envelope", async () => {
    const bad = await server.fetch("/v1/api/contact/create", { method: "POST", key: server.initialKey!, body: "{nope" });
    expect(bad.status).toBe(400);
    expect((await bad.json()).data.error_code).toBe("invalid_json");
    const big = await server.fetch("/v1/api/contact/create", {
      method: "POST",
      key: server.initialKey!,
      body: JSON.stringify({ name: "x".repeat(2 * 1024 * 1024), phone: "+1" }),
    });
    expect(big.status).toBe(413);
    expect((await big.json()).data.error_code).toBe("payload_too_large");
  });

  test("`backup --out` writes a consistent copy while the server runs", async () => {
    const out = join(tempDir(), "backup.db");
    const r = await runCommand(bin, ["backup", "--out", out, "--json"], env);
    expect(r.code).toBe(0);
    // The backup's secrets open only with the data directory's key, so the answer names it.
    expect(JSON.parse(r.stdout)).toEqual({ backup: out, key_file: join(dataDir, "pigeon.key") });
    const { Database } = await import("bun:sqlite");
    const copy = new Database(out, { readonly: true });
    expect((copy.query("SELECT count(*) AS n FROM api_key").get() as { n: number }).n).toBeGreaterThan(0);
    copy.close();
  });

  test("usage errors and bad configuration exit 2 with a clear message", async () => {
    const unknown = await runCommand(bin, ["frobnicate"], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command");
    const port = await runCommand(bin, ["serve"], { ...env, PIGEON_PORT: "70000" });
    expect(port.code).toBe(2);
    expect(port.stderr).toContain("PIGEON_PORT must be between 0 and 65535");
    const file = join(tempDir(), "not-a-dir");
    writeFileSync(file, "x");
    const dir = await runCommand(bin, ["serve"], { PIGEON_DATA_DIR: join(file, "data") });
    expect(dir.code).toBe(2);
    expect(dir.stderr).toContain("PIGEON_DATA_DIR");
    const missing = await runCommand(bin, ["keys", "create"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--name is required");
  });
});

describe("restart on an existing data dir", () => {
  test("keeps the data, prints no new key, stops cleanly on SIGTERM", async () => {
    const dir = tempDir();
    const first = await startServer(bin, { PIGEON_DATA_DIR: dir });
    const key = first.initialKey!;
    await first.fetch("/v1/api/contact/create", { method: "POST", key, body: JSON.stringify({ name: "Kept", phone: RECIPIENT }) });
    expect(await first.stop("SIGTERM")).toBe(0);

    const second = await startServer(bin, { PIGEON_DATA_DIR: dir });
    try {
      expect(second.initialKey).toBeNull();
      expect(second.output()).not.toContain("API secret");
      const list = await (await second.fetch("/v1/api/contact/list", { key })).json();
      expect(list.data.contacts.map((c: { name: string }) => c.name)).toEqual(["Kept"]);
    } finally {
      await second.stop();
    }
  });
});

describe("HTTPS", () => {
  test("with PIGEON_TLS_CERT and PIGEON_TLS_KEY the binary serves TLS itself", async () => {
    const dir = tempDir();
    const cert = join(dir, "cert.pem");
    const keyFile = join(dir, "key.pem");
    const made = Bun.spawnSync([
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      cert,
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ]);
    expect(made.exitCode).toBe(0);
    const tls = await startServer(bin, { PIGEON_DATA_DIR: join(dir, "data"), PIGEON_TLS_CERT: cert, PIGEON_TLS_KEY: keyFile });
    try {
      expect(tls.output()).toContain("listening on https://");
      const res = await fetch(`https://127.0.0.1:${tls.port}/health`, { tls: { ca: readFileSync(cert, "utf8") } } as RequestInit);
      expect(res.status).toBe(200);
      const pairing = await (
        await fetch(`https://127.0.0.1:${tls.port}/v1/api/device/pairing`, {
          headers: { authorization: `Bearer ${tls.initialKey!.api_key}`, "x-api-secret": tls.initialKey!.api_secret },
          tls: { ca: readFileSync(cert, "utf8") },
        } as RequestInit)
      ).json();
      expect(pairing.data.server_url).toBe(`https://127.0.0.1:${tls.port}/mobile/v1`);
    } finally {
      await tls.stop();
    }
  });

  test("a certificate that cannot be read stops start-up with exit code 2", async () => {
    const r = await runCommand(bin, ["serve"], {
      PIGEON_DATA_DIR: tempDir(),
      PIGEON_TLS_CERT: "/nonexistent/cert.pem",
      PIGEON_TLS_KEY: "/nonexistent/key.pem",
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("PIGEON_TLS_CERT");
  });
});
