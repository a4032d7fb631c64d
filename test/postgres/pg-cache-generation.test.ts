// On PostgreSQL a server keeps a key's caller, a workspace's safety settings, its opt-outs and its
// devices between requests, and uses them only while the database's cache generation says they
// are current (src/lib/generation-cache.ts). Two servers (two sets of services and apps, each with
// its own connections) share one database here: each change is made through B after A has kept
// what it changes, and A's very next request must see it. Without the triggers of
// migrations-pg/0011, A would answer from what it kept: every test below would fail.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext, type TestContext } from "../helpers/context";
import { postgresBin } from "../helpers/postgres";
import { tempDirsToRemove } from "../helpers/temp-dirs";
import { RECIPIENT } from "../helpers/numbers";

describe.skipIf(!postgresBin())("cached reads on PostgreSQL follow changes made through another server", () => {
  let a: TestContext;
  let b: TestContext;

  beforeAll(async () => {
    // Both servers seal and open secrets with the same key file, as replicas must.
    const dir = mkdtempSync(join(tmpdir(), "pigeon-cache-"));
    tempDirsToRemove.push(dir);
    const keyFile = join(dir, "pigeon.key");
    a = await createTestContext({ backend: "postgres", config: { keyFile } });
    b = await createTestContext({ databaseUrl: a.databaseUrl!, config: { keyFile } });
    await a.phone("Front desk");
  });
  afterAll(() => {
    a?.services.closeChannels();
    b?.services.closeChannels();
  });

  const send = (ctx: TestContext, key = a.key, to = RECIPIENT) =>
    ctx.post("/v1/api/sms/send", { recipient_contact: to, message: "hello" }, { key });

  /** Two sends through A: the second is answered from what A keeps, so a stale cache would show. */
  async function warm(key = a.key, to = RECIPIENT) {
    for (let i = 0; i < 2; i++) expect((await send(a, key, to)).status).toBe(200);
  }

  test("a key disabled through B is refused by A at once, and works again once enabled", async () => {
    const key = await a.services.accounts.createKey("disabled later", a.workspace.id);
    await warm(key);
    await b.services.accounts.setKeyStatus(key.api_key, "disabled");
    const refused = await send(a, key);
    expect(refused.status).toBe(403);
    expect(refused.body.data.error_code).toBe("key_disabled");
    await b.services.accounts.setKeyStatus(key.api_key, "active");
    expect((await send(a, key)).status).toBe(200);
  });

  test("a secret rotated through B: A refuses the old one and takes the new one at once", async () => {
    const key = await a.services.accounts.createKey("rotated", a.workspace.id);
    await warm(key);
    const rotated = await b.services.accounts.rotateKey(key.api_key);
    const old = await send(a, key);
    expect(old.status).toBe(401);
    expect((await send(a, { ...key, api_secret: rotated.api_secret })).status).toBe(200);
  });

  test("a number opted out through B is refused by A at once, and taken again once opted in", async () => {
    const to = "+14155550123";
    await warm(a.key, to);
    expect((await b.post("/v1/api/optout/add", { phone: to })).status).toBe(200);
    const refused = await send(a, a.key, to);
    expect(refused.status).toBe(403);
    expect(refused.body.data.error_code).toBe("recipient_opted_out");
    // A bulk request reads its recipients' opt-outs up front: the same answer.
    const bulk = await a.post("/v1/api/sms/send/bulk", {
      messages: [
        { recipient_contact: to, message: "x" },
        { recipient_contact: RECIPIENT, message: "y" },
      ],
    });
    expect(JSON.stringify(bulk.body)).toContain("recipient_opted_out");
    expect((await b.post("/v1/api/optout/remove", { phone: to })).status).toBe(200);
    expect((await send(a, a.key, to)).status).toBe(200);
  });

  test("a device deactivated through B is no longer chosen by A", async () => {
    await warm();
    const list = await a.get("/v1/api/device/list");
    const ids = (list.body.data.devices ?? list.body.data).map((d: { device_id?: number; id?: number }) => d.device_id ?? d.id);
    expect((await b.post("/v1/api/device/batch/update-status", { device_ids: ids, status: "inactive" })).status).toBe(200);
    const refused = await send(a);
    expect(refused.status).toBe(400);
    expect(refused.body.data.error_code).toBe("no_active_device");
    expect((await b.post("/v1/api/device/batch/update-status", { device_ids: ids, status: "active" })).status).toBe(200);
    expect((await send(a)).status).toBe(200);
  });

  test("quiet hours set through B hold A's next send", async () => {
    await warm();
    const set = await b.post("/v1/api/workspace/settings", { quiet_hours: { start: "00:00", end: "23:59" } });
    expect(set.status).toBe(200);
    const held = await send(a);
    expect(held.status).toBe(200);
    expect(JSON.stringify(held.body)).toMatch(/quiet|scheduled_(for|at)":"/);
    expect((await b.post("/v1/api/workspace/settings", { quiet_hours: null })).status).toBe(200);
  });

  test("a change that touches none of it (a send's last-contact writes) leaves what A keeps in place", async () => {
    await warm();
    const before = Number(
      (await a.sql.get<{ value: string }>("SELECT value FROM instance_setting WHERE name = 'cache_generation'"))?.value ?? 0,
    );
    await a.sql.run("UPDATE api_key SET last_used_at = ? WHERE id > 0", [Date.now()]);
    await a.sql.run("UPDATE device SET last_seen_at = ? WHERE id > 0", [Date.now()]);
    await a.sql.run("UPDATE workspace SET credit_balance = credit_balance WHERE id > 0");
    const after = Number(
      (await a.sql.get<{ value: string }>("SELECT value FROM instance_setting WHERE name = 'cache_generation'"))?.value ?? 0,
    );
    expect(after).toBe(before);
    await a.sql.run("UPDATE device SET status = status WHERE id > 0");
    const changed = Number(
      (await a.sql.get<{ value: string }>("SELECT value FROM instance_setting WHERE name = 'cache_generation'"))?.value ?? 0,
    );
    expect(changed).toBe(before + 1);
  });
});
