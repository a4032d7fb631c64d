import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, ensureDataDir, loadConfig } from "../../src/config";

describe("configuration from the environment", () => {
  test("defaults", () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 8080, host: "0.0.0.0", publicUrl: null, tls: null });
    expect(c.dbPath).toEndWith("/data/pigeon.db");
    expect(c.chatapp.graphUrl).toBe("https://graph.facebook.com");
  });

  test("reads every documented variable", () => {
    const c = loadConfig({
      PIGEON_PORT: "9090",
      PIGEON_HOST: "127.0.0.1",
      PIGEON_DATA_DIR: "/var/lib/pigeon",
      PIGEON_PUBLIC_URL: "https://sms.example.com/",
      PIGEON_CHATAPP_GRAPH_URL: "http://127.0.0.1:9999",
      PIGEON_CHATAPP_APP_SECRET: "s3cret",
      PIGEON_CHATAPP_VERIFY_TOKEN: "verify",
    });
    expect(c).toMatchObject({
      port: 9090,
      host: "127.0.0.1",
      dataDir: "/var/lib/pigeon",
      dbPath: "/var/lib/pigeon/pigeon.db",
      publicUrl: "https://sms.example.com",
    });
    expect(c.chatapp).toMatchObject({ graphUrl: "http://127.0.0.1:9999", appSecret: "s3cret", verifyToken: "verify" });
  });

  test.each([
    [{ PIGEON_PORT: "70000" }, "PIGEON_PORT"],
    [{ PIGEON_PORT: "-1" }, "PIGEON_PORT"],
    [{ PIGEON_PORT: "http" }, "PIGEON_PORT"],
    [{ PIGEON_PUBLIC_URL: "not a url" }, "PIGEON_PUBLIC_URL"],
    [{ PIGEON_PUBLIC_URL: "ftp://x" }, "PIGEON_PUBLIC_URL"],
    [{ PIGEON_TLS_CERT: "/nonexistent.pem" }, "PIGEON_TLS"],
    [{ PIGEON_TRUSTED_PROXIES: "10.0.0.1, proxy.local" }, "PIGEON_TRUSTED_PROXIES"],
    [{ PIGEON_TRUSTED_PROXIES: "10.0.0.0/33" }, "PIGEON_TRUSTED_PROXIES"],
    [{ PIGEON_OFFLINE_AFTER: "0" }, "PIGEON_OFFLINE_AFTER"],
    [{ PIGEON_TLS_CERT: "/nonexistent.pem", PIGEON_TLS_KEY: "/nonexistent.key" }, "PIGEON_TLS_CERT"],
  ])("%o is refused with a message naming %s", (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });

  test("an unusable data dir is refused", () => {
    const dir = mkdtempSync(join(tmpdir(), "pigeon-cfg-"));
    const file = join(dir, "file");
    writeFileSync(file, "x");
    expect(() => ensureDataDir(join(file, "data"))).toThrow(ConfigError);
    expect(() => ensureDataDir(join(dir, "fresh", "nested"))).not.toThrow();
  });
});
