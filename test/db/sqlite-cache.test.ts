// On SQLite a server keeps a key's record and a workspace's devices in memory between requests, as
// on PostgreSQL, while the database's cache generation (migrations/0034) says they are current. The
// CLI writes the same database from another process: every change it makes must reach the server's
// next request. Each change below is made through a second connection, as `pigeon keys …` would
// (test/binary/binary.test.ts makes them with the real CLI beside the compiled binary).
import { Database } from "bun:sqlite";
import { afterAll, describe, expect } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext, sqliteOnly } from "../helpers/context";
import { tempDirsToRemove } from "../helpers/temp-dirs";

const dir = mkdtempSync(join(tmpdir(), "pigeon-cache-"));
tempDirsToRemove.push(dir);
const dbPath = join(dir, "pigeon.db");

describe("what a SQLite server keeps in memory, changed by another process", async () => {
  const ctx = await createTestContext({ dbPath, backend: "sqlite" });
  // The CLI's connection: another process's writes, which the server hears of only through the database.
  const other = new Database(dbPath);
  other.run("PRAGMA busy_timeout = 5000");
  afterAll(() => other.close());
  const generation = ctx.services.accounts.cacheGeneration;
  const send = () => ctx.call("POST", "/v1/api/sms/send", { body: { recipient_contact: "+14155550100", message: "hello" } });
  const list = () => ctx.call("GET", "/v1/api/device/list");
  /** How the next request is answered: its status, and the error code when refused. */
  const answer = async () => {
    const r = await list();
    return { status: r.status, code: r.status === 200 ? null : r.body.data.error_code };
  };

  sqliteOnly("a key disabled and enabled again is refused and let in from the next request on", async () => {
    expect(await answer()).toEqual({ status: 200, code: null });
    const before = await generation();
    other.run("UPDATE api_key SET status = 'disabled' WHERE key = ?", [ctx.key.api_key]);
    expect(await generation()).toBeGreaterThan(before);
    expect(await answer()).toEqual({ status: 403, code: "key_disabled" });
    other.run("UPDATE api_key SET status = 'active' WHERE key = ?", [ctx.key.api_key]);
    expect(await answer()).toEqual({ status: 200, code: null });
  });

  sqliteOnly("a secret replaced elsewhere stops the old one at once", async () => {
    expect(await answer()).toEqual({ status: 200, code: null });
    const { secret_hash } = other.query("SELECT secret_hash FROM api_key WHERE key = ?").get(ctx.key.api_key) as { secret_hash: string };
    other.run("UPDATE api_key SET secret_hash = 'not the hash of any secret' WHERE key = ?", [ctx.key.api_key]);
    expect(await answer()).toEqual({ status: 401, code: "unauthorized" });
    other.run("UPDATE api_key SET secret_hash = ? WHERE key = ?", [secret_hash, ctx.key.api_key]);
    expect(await answer()).toEqual({ status: 200, code: null });
  });

  sqliteOnly("a suspended account and a plan's new limit hold from the next request", async () => {
    const first = await list();
    expect(first.status).toBe(200);
    const limit = Number(first.headers.get("x-ratelimit-limit"));
    other.run("UPDATE plan SET requests_per_minute = ? WHERE id = (SELECT plan_id FROM account WHERE id = ?)", [limit + 7, ctx.account.id]);
    expect(Number((await list()).headers.get("x-ratelimit-limit"))).toBe(limit + 7);
    other.run("UPDATE account SET status = 'suspended' WHERE id = ?", [ctx.account.id]);
    expect(await answer()).toEqual({ status: 403, code: "account_suspended" });
    other.run("UPDATE account SET status = 'active' WHERE id = ?", [ctx.account.id]);
    expect(await answer()).toEqual({ status: 200, code: null });
  });

  sqliteOnly("a phone deactivated elsewhere is not sent through, and a phone's last contact leaves the number alone", async () => {
    await ctx.topUp(10);
    const phone = await ctx.phone();
    expect((await send()).status).toBe(200);
    // Hot columns (a phone calling in) do not move the number: what is kept stays kept.
    const before = await generation();
    other.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [ctx.clock.now(), phone.device_id]);
    expect(await generation()).toBe(before);
    other.run("UPDATE device SET status = 'inactive' WHERE id = ?", [phone.device_id]);
    const refused = await send();
    expect(refused.status).not.toBe(200);
    expect(refused.body.data.error_code).toBe("no_active_device");
  });
});
