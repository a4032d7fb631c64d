// Secrets at rest, checked on the bytes: after a cloud number, a webhook, a paired phone and a
// one-time code exist, none of their secrets appears in pigeon.db or its WAL files; the data
// directory is 0700 and its files 0600; after a restart the decrypted secrets still work (the
// provider accepts the auth token, the receiver verifies the webhook signature); a database copied
// without its pigeon.key reveals nothing and the CLI says what is missing.
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { createHmac, randomBytes } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureDataDir } from "../../src/config";
import { waitFor } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type RunningServer } from "../helpers/binary";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { startFakeChatApp } from "../helpers/fake-chatapp";
import { startFakeCloud } from "../helpers/fake-cloud";
import { startReceiver } from "../helpers/receiver";
import { RECIPIENT, CLOUD_NUMBER } from "../helpers/numbers";

const bin = isolatedBinary();
const running: RunningServer[] = [];
const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const s of running) if (s.proc.exitCode === null) await s.stop("SIGKILL");
  for (const c of cleanups) c();
});

/** Every byte the database keeps on disk: the file and its WAL files. */
function databaseBytes(dir: string, name = "pigeon.db"): Buffer {
  return Buffer.concat(
    ["", "-wal", "-shm"]
      .map((s) => join(dir, name + s))
      .filter(existsSync)
      .map((p) => readFileSync(p)),
  );
}

const mode = (path: string) => statSync(path).mode & 0o777;

function verifySignature(header: string, raw: string, secret: string): boolean {
  const t = /t=(\d+)/.exec(header)?.[1];
  const v1 = /v1=([0-9a-f]{64})/.exec(header)?.[1];
  return !!t && !!v1 && createHmac("sha256", secret).update(`${t}.${raw}`).digest("hex") === v1;
}

describe("the binary keeps secrets sealed on disk", () => {
  test("no secret in pigeon.db or its WAL, owner-only modes, and everything still works after a restart", async () => {
    const dir = tempDir();
    const env = { PIGEON_DATA_DIR: dir, PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1" };
    const fake = await startFakeCloud({ authToken: `cloudtok_${randomBytes(12).toString("hex")}` });
    cleanups.push(() => fake.stop());

    let server = await startServer(bin, env);
    running.push(server);
    const key = server.initialKey!;
    const api = async (path: string, body?: unknown) => {
      const r = await server.fetch(path, {
        method: body === undefined ? "GET" : "POST",
        key,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await r.json()) as { status_id: number; data: any };
      expect(json.status_id).toBe(200);
      return json.data;
    };

    await api("/v1/api/device/batch/register", {
      devices: [
        {
          name: "cloud",
          kind: "cloud",
          cloud: { account_sid: fake.accountSid, auth_token: fake.authToken, from_number: CLOUD_NUMBER, base_url: fake.url },
        },
      ],
    });
    // An event that will not fire here; the receiver is started and pointed at only when needed.
    const webhook = await api("/v1/api/webhook/create", { url: "http://127.0.0.1:9/later", events: ["template.status"] });
    const pairingToken: string = (await api("/v1/api/device/pairing")).pairing_token;
    const phone = await fetch(`${server.url}/mobile/v1/device`, {
      method: "POST",
      headers: { authorization: `Bearer ${pairingToken}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Phone" }),
    }).then((r) => r.json() as Promise<{ token: string; login: string; password: string }>);
    const settings = await fetch(`${server.url}/mobile/v1/settings`, { headers: { authorization: `Bearer ${phone.token}` } }).then(
      (r) => r.json() as Promise<any>,
    );
    const signingKey: string = settings.webhooks.signing_key;
    const code = await fetch(`${server.url}/mobile/v1/user/code`, {
      headers: { authorization: `Basic ${Buffer.from(`${phone.login}:${phone.password}`).toString("base64")}` },
    }).then((r) => r.json() as Promise<{ code: string }>);
    expect(code.code).toMatch(/^\d{6}$/);

    const secrets = {
      auth_token: fake.authToken,
      webhook_secret: webhook.secret as string,
      pairing_token: pairingToken,
      signing_key: signingKey,
      device_token: phone.token,
    };
    for (const value of Object.values(secrets)) expect(value.length).toBeGreaterThanOrEqual(16);

    // Read while the server runs (the WAL holds the newest pages) and again after it stops.
    const check = () => {
      const bytes = databaseBytes(dir);
      for (const [name, value] of Object.entries(secrets)) expect({ name, found: bytes.includes(value) }).toEqual({ name, found: false });
      const db = new Database(join(dir, "pigeon.db"), { readonly: true });
      try {
        const codes = (db.query("SELECT code FROM mobile_code").all() as { code: string }[]).map((r) => r.code);
        expect(codes).toHaveLength(1);
        expect(codes).not.toContain(code.code);
      } finally {
        db.close();
      }
    };
    check();
    expect(mode(dir)).toBe(0o700);
    for (const f of ["pigeon.db", "pigeon.db-wal", "pigeon.key", "pigeon.lock"])
      if (existsSync(join(dir, f))) expect({ f, mode: mode(join(dir, f)) }).toEqual({ f, mode: 0o600 });
    expect(existsSync(join(dir, "pigeon.key"))).toBe(true);

    expect(await server.stop("SIGTERM")).toBe(0);
    check();

    // A backup is owner-only too, holds no secret, and says it needs the key.
    const backupDir = mkdtempSync(join(tmpdir(), "pigeon-backup-"));
    const out = join(backupDir, "backup.db");
    const backup = await runCommand(bin, ["backup", "--out", out], env);
    expect(backup.code).toBe(0);
    expect(backup.stdout).toContain("pigeon.key");
    expect(mode(out)).toBe(0o600);
    for (const value of Object.values(secrets)) expect(readFileSync(out).includes(value)).toBe(false);

    // Restart: the decrypted secrets are the ones handed out.
    expect((await runCommand(bin, ["credits", "add", "--workspace", "1", "--amount", "10"], env)).code).toBe(0);
    server = await startServer(bin, env);
    running.push(server);
    expect((await api("/v1/api/device/pairing")).pairing_token).toBe(pairingToken);
    await api("/v1/notification/sms/api/send", { recipient_contact: RECIPIENT, message: "after restart" });
    await waitFor("the provider to take the message", () => fake.messages.size === 1, { timeoutMs: 10_000 }); // the fake answers 401 to a wrong auth token
    const receiver = startReceiver();
    cleanups.push(() => receiver.stop());
    await api("/v1/api/webhook/update", { webhook_id: webhook.webhook_id, url: receiver.url });
    const test = await api("/v1/api/webhook/test", { webhook_id: webhook.webhook_id });
    expect({ delivered: test.delivered, error: test.error }).toEqual({ delivered: true, error: null });
    const got = receiver.received.find((r) => r.body?.type === "webhook.test" && r.headers.get("x-pigeon-delivery") === test.delivery_id)!;
    expect(verifySignature(got.headers.get("x-pigeon-signature") ?? "", got.raw, secrets.webhook_secret)).toBe(true);
    const again = await fetch(`${server.url}/mobile/v1/settings`, { headers: { authorization: `Bearer ${phone.token}` } }).then(
      (r) => r.json() as Promise<any>,
    );
    expect(again.webhooks.signing_key).toBe(signingKey);
    await server.stop("SIGTERM");

    // The database copied without its key: commands refuse with one clear line, exit 2.
    const stolen = tempDir();
    for (const f of ["pigeon.db", "pigeon.db-wal"]) if (existsSync(join(dir, f))) copyFileSync(join(dir, f), join(stolen, f));
    const r = await runCommand(bin, ["keys", "list"], { PIGEON_DATA_DIR: stolen });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("pigeon.key");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  }, 60_000);
});

describe("plain secrets written by an older version", () => {
  test("are sealed at start-up and keep working", async () => {
    const dbPath = join(mkdtempSync(join(tmpdir(), "pigeon-legacy-")), "pigeon.db");
    const receiver = startReceiver();
    cleanups.push(() => receiver.stop());
    const old = await createTestContext({ dbPath });
    const w = expectEnvelope(await old.post("/v1/api/webhook/create", { url: receiver.url, events: "*" }), 200).data;
    const fake = await startFakeCloud({ authToken: "legacy-plain-auth-token-0001" });
    cleanups.push(() => fake.stop());
    const device = await old.cloudDevice(fake);
    // What the previous version stored: everything in plain text.
    const sqlite = old.db!.$client;
    sqlite.run("UPDATE webhook_subscription SET secret = 'whsec_legacyPlainSecret000000000001'");
    sqlite.run("UPDATE workspace SET pairing_token = 'legacyPlainPairingToken00000000001'");
    sqlite.run("UPDATE device SET config = json_set(config, '$.authToken', 'legacy-plain-auth-token-0001') WHERE id = ?", [
      device.device_id,
    ]);
    sqlite.close();

    const ctx = await createTestContext({ dbPath });
    const raw = databaseBytes(join(dbPath, ".."));
    for (const s of ["whsec_legacyPlainSecret000000000001", "legacyPlainPairingToken00000000001", "legacy-plain-auth-token-0001"])
      expect(raw.includes(s)).toBe(false);

    expect(expectEnvelope(await ctx.get("/v1/api/device/pairing", { key: ctx.key }), 200).data.pairing_token).toBe(
      "legacyPlainPairingToken00000000001",
    );
    expectEnvelope(await ctx.post("/v1/api/webhook/test", { webhook_id: w.webhook_id }), 200);
    const got = receiver.received.at(-1)!;
    expect(verifySignature(got.headers.get("x-pigeon-signature") ?? "", got.raw, "whsec_legacyPlainSecret000000000001")).toBe(true);
    await ctx.topUp(5);
    expectEnvelope(await ctx.post("/v1/notification/sms/api/send", { recipient_contact: RECIPIENT, message: "hi" }), 200);
    await ctx.services.dispatcher.dispatchDue();
    expect(fake.messages.size).toBe(1);
  });
});

describe("file modes", () => {
  test("start-up makes an existing data directory 0700 and its files 0600", () => {
    const dir = mkdtempSync(join(tmpdir(), "pigeon-modes-"));
    chmodSync(dir, 0o755);
    for (const f of ["pigeon.db", "pigeon.db-wal", "pigeon.db-shm", "pigeon.key", "notes.txt"]) {
      writeFileSync(join(dir, f), "x");
      chmodSync(join(dir, f), 0o644);
    }
    ensureDataDir(dir);
    expect(mode(dir)).toBe(0o700);
    for (const f of ["pigeon.db", "pigeon.db-wal", "pigeon.db-shm", "pigeon.key"])
      expect({ f, mode: mode(join(dir, f)) }).toEqual({ f, mode: 0o600 });
    // Not ours: left as it is.
    expect(mode(join(dir, "notes.txt"))).toBe(0o644);
  });

  test("a new data directory is created 0700", () => {
    const dir = join(mkdtempSync(join(tmpdir(), "pigeon-modes-")), "nested", "data");
    ensureDataDir(dir);
    expect(mode(dir)).toBe(0o700);
  });
});

describe("a chat-app access token", () => {
  test("is sealed in the database and still used to call the platform", async () => {
    const token = `EAAG${randomBytes(16).toString("hex")}`;
    const holder: { handle?: (r: Request) => Promise<Response> } = {};
    const fake = startFakeChatApp({
      appSecret: "s3cret",
      accessToken: token,
      webhookUrl: "http://localhost/v1/webhooks/chatapp",
      deliverWebhook: (req) => holder.handle!(req),
      wabas: [
        {
          id: "1001",
          name: "Shop",
          phoneNumbers: [{ id: "2002", display_phone_number: "1 555 010 0100", verified_name: "Shop", quality_rating: "GREEN" }],
          templates: [],
        },
      ],
    });
    cleanups.push(() => fake.stop());
    const dbPath = join(mkdtempSync(join(tmpdir(), "pigeon-chatapp-")), "pigeon.db");
    const ctx = await createTestContext({
      dbPath,
      config: { chatapp: { graphUrl: fake.url, graphVersion: "v23.0", appSecret: "s3cret", verifyToken: "v" } },
    });
    holder.handle = (r) => ctx.app.handle(r);
    const device = expectEnvelope(await ctx.post("/v1/api/chatapp/connect", { access_token: token }), 200).data.devices[0];
    expect(databaseBytes(join(dbPath, "..")).includes(token)).toBe(false);
    // The stored value opens to the token the platform accepts.
    expect(((await ctx.services.channelCore.devices.byId(device.device_id))!.config as { accessToken: string }).accessToken).toBe(token);
  });
});
