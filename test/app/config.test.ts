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
    [{ PIGEON_SMTP_PORT: "99999" }, "PIGEON_SMTP_PORT"],
    [{ PIGEON_SMTPS_PORT: "465" }, "PIGEON_SMTPS_PORT needs a certificate"],
    [{ PIGEON_SMTP_RELAY_URL: "http://relay.example" }, "PIGEON_SMTP_RELAY_URL must start with smtp://"],
    [{ PIGEON_SMTP_RELAY_URL: "not a url" }, "PIGEON_SMTP_RELAY_URL"],
    [{ PIGEON_SMTP_FROM: "nobody" }, "PIGEON_SMTP_FROM"],
  ])("%o is refused with a message naming %s", (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });

  test("the mail relay: STARTTLS required unless on loopback, smtps:// is implicit TLS, credentials decoded", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "pigeon-cfg-"));
    const relay = (url: string) => loadConfig({ PIGEON_DATA_DIR: dataDir, PIGEON_SMTP_RELAY_URL: url }).smtp.relay;
    expect(relay("smtp://pigeon%40shop.example:p%3Ass@smtp.example.com")).toEqual({
      host: "smtp.example.com",
      port: 587,
      secure: false,
      requireTls: true,
      user: "pigeon@shop.example",
      pass: "p:ss",
    });
    expect(relay("smtp://127.0.0.1:2525")).toMatchObject({ port: 2525, secure: false, requireTls: false, user: null });
    expect(relay("smtps://smtp.example.com")).toMatchObject({ port: 465, secure: true, requireTls: false });
    expect(loadConfig({ PIGEON_DATA_DIR: dataDir }).smtp).toEqual({
      port: null,
      tlsPort: null,
      plainLoopback: false,
      relay: null,
      from: "pigeon@localhost",
    });
  });

  test("an unusable data dir is refused", () => {
    const dir = mkdtempSync(join(tmpdir(), "pigeon-cfg-"));
    const file = join(dir, "file");
    writeFileSync(file, "x");
    expect(() => ensureDataDir(join(file, "data"))).toThrow(ConfigError);
    expect(() => ensureDataDir(join(dir, "fresh", "nested"))).not.toThrow();
  });
});
