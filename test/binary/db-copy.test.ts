// `pigeon db copy --to URL`: a data directory made by this release — a paired phone with inbound
// texts and MMS pictures (their bytes), a cloud number, a chat-app number, webhooks with deliveries, contacts, opt-outs, threads
// and 100,000 notifications — moved into an empty PostgreSQL database by the compiled binary. The
// binary answers the same on both sides, endpoint by endpoint, sealed secrets (the pairing token)
// included; a second copy into the now non-empty database is refused, and so is a copy while a
// server runs on the directory.
import { afterAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { MMS_PICTURE_PNG } from "../../src/cli/simulate-phone/reports";
import postgres from "postgres";
import { closeDatabase } from "../../src/db/client";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { bakeryWaba, startFakeChatApp } from "../helpers/fake-chatapp";
import { startFakeCloud } from "../helpers/fake-cloud";
import { postPhoneWebhook, registerAppPhone } from "../helpers/phone";
import { postgresCluster } from "../helpers/postgres";
import { startReceiver } from "../helpers/receiver";
import { RECIPIENT } from "../helpers/numbers";

const ADA = RECIPIENT;
const BULK = 100_000;

const pg = await postgresCluster();
const bin = isolatedBinary();
const fakeCloud = await startFakeCloud();
const chat = startFakeChatApp({
  appSecret: "copy-secret",
  webhookUrl: "http://127.0.0.1:1/v1/webhooks/chatapp",
  deliverWebhook: async () => new Response("ok"),
  wabas: [bakeryWaba()],
});
const receiver = startReceiver();
const running: RunningServer[] = [];

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop("SIGKILL").catch(() => {})));
  fakeCloud.stop();
  chat.stop();
  receiver.stop();
});

/** The answers compared: every list and record a user of the API reads back. */
async function snapshot(server: RunningServer, key: Credentials) {
  const get = async (path: string) => {
    const res = await server.api(path, key);
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    return res.body;
  };
  const out: Record<string, unknown> = {};
  for (const path of [
    "/v1/api/project/list",
    "/v1/api/device/list",
    "/v1/api/device/pairing",
    "/v1/api/contact/list",
    "/v1/api/optout/list",
    "/v1/api/template/list?limit=100",
    "/v1/api/webhook/list",
    "/v1/api/thread/list",
    "/v1/api/notification/list?limit=100",
    "/v1/api/notification/list?limit=100&page=731",
    "/v1/api/notification/list?limit=50&status=pending",
    "/v1/api/stats/notifications",
    "/v1/api/stats/credits",
    "/v1/api/workspace/settings",
  ])
    out[path] = await get(path);
  // The stats' window ends now: its bounds differ by the time between the two snapshots, its counts must not.
  for (const path of ["/v1/api/stats/notifications", "/v1/api/stats/credits"]) {
    const data = (out[path] as any).data;
    delete data.from;
    delete data.to;
  }
  const devices = (out["/v1/api/device/list"] as any).data.devices as { device_id: number }[];
  for (const d of devices) out[`device ${d.device_id}`] = await get(`/v1/api/device/${d.device_id}`);
  const threads = (out["/v1/api/thread/list"] as any).data.threads as { thread_id: number }[];
  for (const t of threads) out[`thread ${t.thread_id}`] = await get(`/v1/api/thread/${t.thread_id}/messages`);
  const hooks = (out["/v1/api/webhook/list"] as any).data.webhooks as { webhook_id: number }[];
  for (const h of hooks) out[`deliveries ${h.webhook_id}`] = await get(`/v1/api/webhook/${h.webhook_id}/deliveries`);
  for (const id of [1, 2, 10, 5_000, BULK]) out[`notification ${id}`] = (await server.api(`/v1/api/notification/${id}`, key)).body;
  return out;
}

describe("pigeon db copy", () => {
  test("moves a whole data directory to PostgreSQL, and the API answers the same after", async () => {
    // 1. A data directory with one of everything, made through the API of this release.
    const dataDir = tempDir();
    const ctx = await createTestContext({
      dbPath: join(dataDir, "pigeon.db"),
      backend: "sqlite",
      config: { chatapp: { graphUrl: chat.url, graphVersion: "v23.0", appSecret: "copy-secret", verifyToken: "v" } },
    });
    ctx.clock.set(Date.now() - 3_600_000);
    chat.setNow(ctx.clock.now());
    const phone = await registerAppPhone(ctx);
    for (const [i, text] of ["Hello?", "Are you open today?", "STOP"].entries()) {
      const raw = JSON.stringify({
        id: `in-${i}`,
        webhookId: "w",
        event: "sms:received",
        deviceId: phone.id,
        payload: {
          messageId: `m${i}`,
          message: text,
          sender: i === 2 ? "+14155550000" : ADA,
          receivedAt: new Date(ctx.clock.now()).toISOString(),
        },
      });
      expect((await postPhoneWebhook(ctx, phone.signingKey, raw)).status).toBe(204);
      ctx.clock.advance(1_000);
    }
    // Two MMS with pictures: their bytes (9 MB together) go over in more than one statement.
    const pictures = [Buffer.from(MMS_PICTURE_PNG, "base64"), randomBytes(4_500_000), randomBytes(4_500_000)];
    for (const [i, parts] of [[pictures[0], pictures[1]], [pictures[2]]].entries()) {
      const raw = JSON.stringify({
        id: `mms-${i}`,
        webhookId: "w",
        event: "mms:downloaded",
        deviceId: phone.id,
        payload: {
          messageId: `mms${i}`,
          sender: ADA,
          subject: `Picture ${i}`,
          attachments: parts.map((bytes, partId) => ({
            partId,
            contentType: "image/png",
            name: `p${partId}.png`,
            size: bytes.length,
            data: bytes.toString("base64"),
          })),
          receivedAt: new Date(ctx.clock.now()).toISOString(),
        },
      });
      expect((await postPhoneWebhook(ctx, phone.signingKey, raw)).status).toBe(204);
      ctx.clock.advance(1_000);
    }
    const attachmentUrls = (
      await ctx.sql.all<{ id: number; messageId: number; threadId: number }>(
        `SELECT a.id, a.thread_message_id AS "messageId", m.thread_id AS "threadId" FROM thread_attachment a
       JOIN thread_message m ON m.id = a.thread_message_id ORDER BY a.id`,
      )
    ).map((a) => `/v1/api/thread/${a.threadId}/message/${a.messageId}/attachment/${a.id}`);
    expect(attachmentUrls).toHaveLength(3);
    await ctx.cloudDevice(fakeCloud);
    expectEnvelope(await ctx.post("/v1/api/chatapp/connect", { access_token: "good-token" }), 200);
    expectEnvelope(
      await ctx.post("/v1/api/webhook/create", {
        url: receiver.url,
        events: ["notification.cancelled", "contact.opted_out", "message.received"],
      }),
      200,
    );
    expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Ada", phone: ADA }), 200);
    expectEnvelope(await ctx.post("/v1/api/optout/add", { phone: "+14155559999", reason: "asked at the counter" }), 200);
    await ctx.topUp(500);
    const sends: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = expectEnvelope(
        await ctx.post("/v1/api/sms/send", {
          recipient_contact: ADA,
          message: `order ${i} is ready`,
          schedule_time: "2099-01-01 09:00:00",
        }),
        200,
      );
      sends.push(r.data.notification_id);
      ctx.clock.advance(10);
    }
    expectEnvelope(await ctx.post("/v1/api/notification/cancel", { notification_id: sends[9] }), 200);
    await ctx.services.threads.catchUp(1000);
    const existing = Number((await ctx.sql.get<{ n: number }>("SELECT count(*) AS n FROM notification"))!.n);
    // The bulk: copies of a delivered send, as the worker leaves them (the rollup triggers count them).
    await ctx.sql.run(
      `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
       INSERT INTO notification (workspace_id, api_key_id, delivery_type, route, device_id, recipient, message, status, stage,
         next_attempt_at, segments, cost, attempts, created_at, updated_at, sent_at, delivered_at, dispatched_at, priority)
       SELECT workspace_id, api_key_id, delivery_type, route, device_id, recipient, 'bulk ' || i, 'delivered', 'done',
         next_attempt_at, segments, cost, 1, created_at + i, updated_at + i, created_at + i, created_at + i, created_at + i, priority
       FROM notification, k WHERE notification.id = ?`,
      [BULK - existing, sends[0]],
    );
    const key = ctx.key;
    closeDatabase(ctx.db!);

    // 2. The binary on SQLite: what it answers.
    const common = {
      PIGEON_PUBLIC_URL: "https://pigeon.example",
      PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1",
      PIGEON_CHATAPP_GRAPH_URL: chat.url,
      PIGEON_CHATAPP_APP_SECRET: "copy-secret",
    };
    const onSqlite = await startServer(bin, { ...common, PIGEON_DATA_DIR: dataDir });
    running.push(onSqlite);
    await Bun.sleep(2_500); // a few worker ticks: anything due at start is done before the snapshot
    const before = await snapshot(onSqlite, key);
    expect((before["/v1/api/notification/list?limit=100"] as any).data.pagination.total).toBe(BULK);

    // While it runs, a copy is refused: it could miss a write.
    const target = await pg.createDatabase("copy");
    const busy = await runCommand(bin, ["db", "copy", "--to", target], { PIGEON_DATA_DIR: dataDir });
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain("stop it before copying");
    expect(await onSqlite.stop("SIGTERM")).toBe(0);

    // 3. The copy.
    const copied = await runCommand(bin, ["db", "copy", "--to", target, "--json"], { PIGEON_DATA_DIR: dataDir });
    expect({ code: copied.code, stderr: copied.stderr }).toEqual({ code: 0, stderr: "" });
    const report = JSON.parse(copied.stdout);
    expect(report.tables.find((t: { table: string }) => t.table === "notification").rows).toBe(BULK);

    // 4. The binary on PostgreSQL, another data directory, the same key file: the same answers.
    const onPostgres = await startServer(bin, {
      ...common,
      PIGEON_DATA_DIR: tempDir(),
      PIGEON_DATABASE_URL: target,
      PIGEON_KEY_FILE: join(dataDir, "pigeon.key"),
    });
    running.push(onPostgres);
    expect(onPostgres.initialKey).toBeNull();
    expect(onPostgres.output()).not.toContain("setup?token=");
    await Bun.sleep(2_500);
    const after = await snapshot(onPostgres, key);
    for (const path of Object.keys(before)) expect({ path, answer: after[path] }).toEqual({ path, answer: before[path] });
    expect(report.tables.find((t: { table: string }) => t.table === "thread_attachment").rows).toBe(3);
    // The pictures' bytes came over whole: each served the same, byte for byte.
    for (const [i, url] of attachmentUrls.entries()) {
      const res = await fetch(`${onPostgres.url}${url}`, {
        headers: { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret },
      });
      expect({ url, status: res.status, type: res.headers.get("content-type") }).toEqual({ url, status: 200, type: "image/png" });
      expect(Buffer.from(await res.arrayBuffer()).equals(pictures[i])).toBe(true);
    }

    // New rows continue the ids: a send gets the next id after the copied ones.
    const next = await onPostgres.api("/v1/api/sms/send", key, {
      recipient_contact: ADA,
      message: "after the move",
      schedule_time: "2099-01-01 09:00:00",
    });
    expect({ status: next.status, id: next.body.data?.notification_id }).toEqual({ status: 200, id: BULK + 1 });

    // 5. A second copy into the same database is refused, saying why, and changes nothing.
    const sql = postgres(target, { max: 1, onnotice: () => {} });
    const count = async () => Number((await sql`SELECT count(*) AS n FROM notification`)[0].n);
    const rows = await count();
    expect(await onPostgres.stop("SIGTERM")).toBe(0);
    const again = await runCommand(bin, ["db", "copy", "--to", target], { PIGEON_DATA_DIR: dataDir });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("not empty");
    expect(await count()).toBe(rows);
    await sql.end();
  }, 240_000);
});
