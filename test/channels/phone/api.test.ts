// The companion-app protocol under /mobile/v1, with exactly the bodies, headers and User-Agent the
// SMS Gateway for Android app sends (read from its source, capcom6/android-sms-gateway), checking every
// field the app reads back.
import { describe, expect, test } from "bun:test";
import { notificationOf, smsSender } from "../../helpers/api";
import { createTestContext, expectEnvelope, type TestContext, sqliteOnly } from "../../helpers/context";
import { phoneSignature } from "../../helpers/phone";
import { createPhonePairing } from "../../../src/channels/phone/pairing";
import { createPhoneRepository, PHONE_QUEUE_SQL } from "../../../src/channels/phone/repository";
import { RECIPIENT } from "../../helpers/numbers";

const UA = "me.capcom.smsgateway/1.68.0";
const TO = "+79990001234";
const THREE_DIGITS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(Z|[+-]\d{2}:\d{2})$/;

const REGISTER_BODY = {
  name: "Xiaomi/vayu_eea",
  simCards: [{ slotIndex: 0, simNumber: 1, phoneNumber: "*******1234", carrierName: "***ile", iccid: "****************5678" }],
};

async function mobile(
  ctx: TestContext,
  method: string,
  path: string,
  opts: { auth?: string; body?: unknown; raw?: string; ua?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { "user-agent": opts.ua ?? UA, ...(opts.headers ?? {}) };
  if (opts.auth) headers.authorization = opts.auth;
  let body: string | undefined = opts.raw;
  if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await ctx.app.handle(new Request(`http://localhost/mobile/v1${path}`, { method, headers, body }));
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : null };
}

async function pairingToken(ctx: TestContext): Promise<string> {
  return expectEnvelope(await ctx.get("/v1/api/device/pairing"), 200).data.pairing_token;
}

/** Registers a phone the way the app does; returns its id and Bearer token. */
/** Registers a phone. A second phone needs another name: the same name and SIMs are the same phone returning. */
async function pairPhone(ctx: TestContext, name = REGISTER_BODY.name) {
  const body = { ...REGISTER_BODY, name };
  const r = await mobile(ctx, "POST", "/device", { auth: `Bearer ${await pairingToken(ctx)}`, body });
  expect(r.status).toBe(201);
  const deviceId = ((await ctx.sql.get("SELECT id FROM device WHERE external_id = ?", [r.json.id])) as { id: number }).id;
  return { ...r.json, bearer: `Bearer ${r.json.token}`, deviceId } as {
    id: string;
    token: string;
    login: string;
    password?: string;
    bearer: string;
    deviceId: number;
  };
}

const sendSms = smsSender({ recipient_contact: TO, message: "Hello from Pigeon" });

function signed(key: string, body: unknown, at: number) {
  const raw = JSON.stringify(body);
  return { raw, headers: phoneSignature(key, raw, at) };
}

describe("pairing", () => {
  test("GET /api/device/pairing gives the server URL, the token and a QR code; rotate retires the old token", async () => {
    const ctx = await createTestContext();
    const info = expectEnvelope(await ctx.get("/v1/api/device/pairing"), 200).data;
    expect(info.server_url).toBe("https://pigeon.test/mobile/v1");
    expect(info.pairing_token).toMatch(/^[\w-]{32}$/);
    expect(info.qr_svg).toStartWith("<svg");
    expect(JSON.parse(info.qr_text)).toEqual({ url: info.server_url, token: info.pairing_token });
    const rotated = expectEnvelope(await ctx.post("/v1/api/device/pairing/rotate"), 200).data;
    expect(rotated.pairing_token).not.toBe(info.pairing_token);
    const r = await mobile(ctx, "POST", "/device", { auth: `Bearer ${info.pairing_token}`, body: REGISTER_BODY });
    expect(r.status).toBe(401);
    expect(r.json).toMatchObject({ message: expect.any(String), code: 401 });
    expect((await mobile(ctx, "POST", "/device", { auth: `Bearer ${rotated.pairing_token}`, body: REGISTER_BODY })).status).toBe(201);
  });

  test("POST /device with the pairing token: 201 {id, token, login, password}; the phone is an online sms device", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    expect(phone.id).toMatch(/^[\w-]{21}$/);
    expect(phone.token).toMatch(/^[\w-]{21}$/);
    expect(phone.login).toMatch(/^[A-Z0-9]{6}$/);
    expect(phone.password).toMatch(/^[a-z0-9_-]{14}$/);
    const device = expectEnvelope(await ctx.get(`/v1/api/device/${phone.deviceId}`), 200).data;
    expect(device).toMatchObject({ name: "Xiaomi/vayu_eea", kind: "sms", status: "active", online: true });
    const second = await mobile(ctx, "POST", "/device", { auth: `Bearer ${await pairingToken(ctx)}`, body: { name: "Google/sdk" } });
    expect(second.json.login).toBe(phone.login);
    expect(second.json.password).toBeUndefined();
  });

  test("the first phones of a workspace pairing at once all get in, with one login and its password shown once", async () => {
    const ctx = await createTestContext();
    const token = await pairingToken(ctx);
    // On PostgreSQL each registration is a unit on its own connection: the first of a workspace
    // also writes its app login, and those units once deadlocked on the workspace's row (500s).
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) => mobile(ctx, "POST", "/device", { auth: `Bearer ${token}`, body: { name: `Phone/${i}` } })),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(new Set(replies.map((r) => r.json.login)).size).toBe(1);
    const shown = replies.filter((r) => r.json.password !== undefined);
    expect(shown).toHaveLength(1);
    // The password shown is the one the login takes.
    const basic = Buffer.from(`${shown[0]!.json.login}:${shown[0]!.json.password}`).toString("base64");
    expect((await mobile(ctx, "POST", "/device", { auth: `Basic ${basic}`, body: { name: "Phone/basic" } })).status).toBe(201);
  });

  test("a phone registering again with the same name and SIM cards gets its device back under a new token; another SIM list is another phone", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const again = await pairPhone(ctx);
    expect(again.id).toBe(phone.id);
    expect(again.deviceId).toBe(phone.deviceId);
    expect(again.token).not.toBe(phone.token);
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).status).toBe(401);
    expect((await mobile(ctx, "GET", "/message", { auth: again.bearer })).status).toBe(200);
    const otherSims = await mobile(ctx, "POST", "/device", {
      auth: `Bearer ${await pairingToken(ctx)}`,
      body: { name: REGISTER_BODY.name, simCards: [{ ...REGISTER_BODY.simCards[0], iccid: "****************9999" }] },
    });
    expect(otherSims.json.id).not.toBe(phone.id);
    // Without SIM cards there is nothing to tell two phones of one model apart: each is new.
    const bare1 = await mobile(ctx, "POST", "/device", {
      auth: `Bearer ${await pairingToken(ctx)}`,
      body: { name: "Google/sdk", simCards: [] },
    });
    const bare2 = await mobile(ctx, "POST", "/device", {
      auth: `Bearer ${await pairingToken(ctx)}`,
      body: { name: "Google/sdk", simCards: [] },
    });
    expect(bare2.json.id).not.toBe(bare1.json.id);
    const devices = expectEnvelope(await ctx.get("/v1/api/device/list?limit=100"), 200).data.devices as { name: string }[];
    expect(devices.filter((d) => d.name === REGISTER_BODY.name)).toHaveLength(2);
  });
  test("POST /device with Basic login:password, and with a one-time Code", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const basic = `Basic ${Buffer.from(`${phone.login}:${phone.password}`).toString("base64")}`;
    const byBasic = await mobile(ctx, "POST", "/device", { auth: basic, body: REGISTER_BODY });
    expect(byBasic.status).toBe(201);
    expect(byBasic.json.password).toBeUndefined();
    const wrong = `Basic ${Buffer.from(`${phone.login}:nope`).toString("base64")}`;
    expect((await mobile(ctx, "POST", "/device", { auth: wrong, body: REGISTER_BODY })).status).toBe(401);

    const code = await mobile(ctx, "GET", "/user/code", { auth: basic });
    expect(code.status).toBe(200);
    expect(code.json.code).toMatch(/^\d{6}$/);
    expect(code.json.validUntil).toMatch(THREE_DIGITS);
    expect((await mobile(ctx, "POST", "/device", { auth: `Code ${code.json.code}`, body: REGISTER_BODY })).status).toBe(201);
    expect((await mobile(ctx, "POST", "/device", { auth: `Code ${code.json.code}`, body: REGISTER_BODY })).status).toBe(401);
    const late = await mobile(ctx, "GET", "/user/code", { auth: basic });
    ctx.clock.advance(61_000);
    expect((await mobile(ctx, "POST", "/device", { auth: `Code ${late.json.code}`, body: REGISTER_BODY })).status).toBe(401);
    expect((await mobile(ctx, "POST", "/device", { body: REGISTER_BODY })).status).toBe(401);
  });

  // A one-time code is its row's key. Six digits drawn at random meet a live code now and then (the
  // fuzzer, asking for many, once got a 500 from the clash): a drawn code already taken is drawn anew.
  test("a one-time code drawn while the same code is still live is drawn again, not a 500", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const draws = ["123456", "123456", "654321"];
    const pairing = createPhonePairing({
      storage: ctx.services.storage,
      repo: createPhoneRepository(ctx.services.storage, ctx.services.channelCore.notifications),
      clock: ctx.clock,
      secrets: ctx.services.secrets,
      drawCode: () => draws.shift() ?? "000000",
    });
    const headers = new Headers({ authorization: `Basic ${Buffer.from(`${phone.login}:${phone.password}`).toString("base64")}` });
    expect((await pairing.oneTimeCode(headers)).code).toBe("123456");
    expect((await pairing.oneTimeCode(headers)).code).toBe("654321");
    // Both work, once each.
    for (const code of ["123456", "654321"]) {
      expect((await mobile(ctx, "POST", "/device", { auth: `Code ${code}`, body: REGISTER_BODY })).status).toBe(201);
      expect((await mobile(ctx, "POST", "/device", { auth: `Code ${code}`, body: REGISTER_BODY })).status).toBe(401);
    }
  });

  test("a bad register body is 400 in the app's error shape", async () => {
    const ctx = await createTestContext();
    const r = await mobile(ctx, "POST", "/device", { auth: `Bearer ${await pairingToken(ctx)}`, body: { name: "x".repeat(129) } });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ message: expect.stringContaining("name"), code: 400, data: { error_code: "validation_error" } });
  });

  test("PATCH /user/password", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    expect(
      (
        await mobile(ctx, "PATCH", "/user/password", {
          auth: phone.bearer,
          body: { currentPassword: "wrong", newPassword: "a-new-long-password" },
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await mobile(ctx, "PATCH", "/user/password", {
          auth: phone.bearer,
          body: { currentPassword: phone.password, newPassword: "short" },
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await mobile(ctx, "PATCH", "/user/password", {
          auth: phone.bearer,
          body: { currentPassword: phone.password, newPassword: "a-new-long-password" },
        })
      ).status,
    ).toBe(204);
    const basic = `Basic ${Buffer.from(`${phone.login}:a-new-long-password`).toString("base64")}`;
    expect((await mobile(ctx, "GET", "/user/code", { auth: basic })).status).toBe(200);
  });
});

describe("device endpoints", () => {
  test("GET /device: externalIp always, the device with a token", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const anon = await mobile(ctx, "GET", "/device", { headers: { "x-forwarded-for": "203.0.113.7" } });
    expect(anon.json).toEqual({ externalIp: "203.0.113.7" });
    const mine = await mobile(ctx, "GET", "/device", { auth: phone.bearer });
    expect(mine.json.device).toMatchObject({ id: phone.id, name: "Xiaomi/vayu_eea", simCards: REGISTER_BODY.simCards });
    expect(mine.json.device.lastSeen).toMatch(THREE_DIGITS);
  });

  test("PATCH /device: 204 for its own id, 403 for another's, 401 for an unknown token", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const other = await pairPhone(ctx, "Other/phone");
    expect(
      (await mobile(ctx, "PATCH", "/device", { auth: phone.bearer, body: { id: phone.id, pushToken: null, simCards: [] } })).status,
    ).toBe(204);
    expect((await mobile(ctx, "PATCH", "/device", { auth: phone.bearer, body: { id: other.id, pushToken: "x" } })).status).toBe(403);
    const unknown = await mobile(ctx, "PATCH", "/device", { auth: "Bearer notarealtoken000000000", body: { id: phone.id } });
    expect(unknown.status).toBe(401);
    expect(unknown.json.code).toBe(401);
  });

  test("a device deleted through the API can no longer authenticate", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    await ctx.post("/v1/api/device/batch/delete", { device_ids: [phone.deviceId] });
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).status).toBe(401);
  });
});

describe("messages", () => {
  test("GET /message: the app's fields, three fraction digits, and reading changes nothing", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const id = await sendSms(ctx);
    const first = await mobile(ctx, "GET", "/message?order=lifo", { auth: phone.bearer });
    expect(first.status).toBe(200);
    expect(first.json).toHaveLength(1);
    const m = first.json[0];
    expect(m).toEqual({
      id: expect.stringMatching(/^[\w-]{21}$/),
      message: "Hello from Pigeon",
      textMessage: { text: "Hello from Pigeon" },
      phoneNumbers: [TO],
      isEncrypted: false,
      withDeliveryReport: true,
      priority: 0,
      state: "Pending",
      createdAt: "2026-01-15T12:00:00.000Z",
    });
    expect(m.createdAt).toMatch(THREE_DIGITS);
    const again = await mobile(ctx, "GET", "/message", { auth: phone.bearer });
    expect(again.json).toEqual(first.json);
    expect((await notificationOf(ctx, id)).status).toBe("pending");
  });

  test("order=fifo and lifo", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    await sendSms(ctx, { message: "first" });
    ctx.clock.advance(1000);
    await sendSms(ctx, { message: "second" });
    const fifo = await mobile(ctx, "GET", "/message?order=fifo", { auth: phone.bearer });
    expect(fifo.json.map((m: { message: string }) => m.message)).toEqual(["first", "second"]);
    const lifo = await mobile(ctx, "GET", "/message", { auth: phone.bearer });
    expect(lifo.json.map((m: { message: string }) => m.message)).toEqual(["second", "first"]);
  });

  test("PATCH /message: Pending changes nothing, Processed keeps it pending (and uncancellable), Sent → sent, Delivered → delivered; repeats change nothing", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const id = await sendSms(ctx);
    const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
    const patch = (state: string, states: Record<string, string>) =>
      mobile(ctx, "PATCH", "/message", {
        auth: phone.bearer,
        body: [{ id: m.id, state, recipients: [{ phoneNumber: TO, state }], states }],
      });

    // Pending: the app still holds it in its own queue (a repeated download); nothing changes.
    expect((await patch("Pending", {})).status).toBe(204);
    expect((await notificationOf(ctx, id)).logs.map((l: { event: string }) => l.event)).toEqual(["accepted"]);
    expect((await patch("Processed", { Processed: "2026-01-15T19:00:01.357+07:00" })).status).toBe(204);
    expect((await notificationOf(ctx, id)).status).toBe("pending");
    expect((await ctx.post("/v1/api/notification/cancel", { notification_id: id })).status).toBe(409);
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json).toEqual([]);

    await patch("Sent", { Processed: "2026-01-15T19:00:01.357+07:00", Sent: "2026-01-15T19:00:02.100+07:00" });
    expect(await notificationOf(ctx, id)).toMatchObject({ status: "sent", sent_at: "2026-01-15T12:00:02.100Z" });
    await patch("Delivered", { Delivered: "2026-01-15T19:00:09.000+07:00" });
    await patch("Delivered", { Delivered: "2026-01-15T19:00:09.000+07:00" });
    await patch("Sent", {});
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "delivered", delivered_at: "2026-01-15T12:00:09.000Z" });
    expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "processed", "sent", "delivered"]);
  });

  test("Failed: the phone's error string (the carrier's reason) goes to the log", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const id = await sendSms(ctx);
    const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
    const error = "Send result: RESULT_ERROR_NO_SERVICE (no service)";
    await mobile(ctx, "PATCH", "/message", {
      auth: phone.bearer,
      body: [
        {
          id: m.id,
          state: "Failed",
          recipients: [{ phoneNumber: TO, state: "Failed", error }],
          states: { Processed: "2026-01-15T12:00:00.100Z", Failed: "2026-01-15T12:00:00.900Z" },
        },
      ],
    });
    const n = await notificationOf(ctx, id);
    expect(n).toMatchObject({ status: "failed", error_code: "RESULT_ERROR_NO_SERVICE", error_reason: error });
    expect(n.logs.at(-1)).toMatchObject({ event: "failed", detail: expect.stringContaining(error) });
  });

  test("PATCH /message: unknown ids, and other devices' messages, are 204 and change nothing; a non-array is 400", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const other = await pairPhone(ctx, "Other/phone");
    const id = await sendSms(ctx, { device_id: phone.deviceId });
    const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
    expect(
      (await mobile(ctx, "PATCH", "/message", { auth: other.bearer, body: [{ id: m.id, state: "Sent", recipients: [], states: {} }] }))
        .status,
    ).toBe(204);
    expect(
      (
        await mobile(ctx, "PATCH", "/message", {
          auth: phone.bearer,
          body: [{ id: "unknown-id", state: "Sent", recipients: [], states: {} }],
        })
      ).status,
    ).toBe(204);
    expect((await notificationOf(ctx, id)).status).toBe("pending");
    const bad = await mobile(ctx, "PATCH", "/message", { auth: phone.bearer, body: { id: m.id, state: "Sent" } });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(400);
  });

  // Cancelling a downloaded message: test/channels/phone/cancel.test.ts.

  test("pacing: never more new messages a minute than the device allows; the rest wait, no error", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    expectEnvelope(await ctx.post("/v1/api/device/update", { device_id: phone.deviceId, send_limit_per_minute: 2 }), 200);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 10));
    for (let i = 0; i < 5; i++) await sendSms(ctx, { message: `m${i}` });
    const take = async () =>
      (await mobile(ctx, "GET", "/message?order=fifo", { auth: phone.bearer })).json.map((m: { message: string }) => m.message);
    expect(await take()).toEqual(["m0", "m1"]);
    expect(await take()).toEqual(["m0", "m1"]);
    const rl = expectEnvelope(await ctx.get(`/v1/api/device/${phone.deviceId}/rate-limit`), 200).data;
    expect(rl).toMatchObject({ limit: 2, requests_remaining: 0 });
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 1, 0));
    expect(await take()).toEqual(["m0", "m1", "m2", "m3"]);
  });

  test("a phone whose pacing is spent for the minute is not told of new sends, except expedited ones, and is told when the next minute starts", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    expectEnvelope(await ctx.post("/v1/api/device/update", { device_id: phone.deviceId, send_limit_per_minute: 2 }), 200);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 10));
    const events = await ctx.app.handle(
      new Request("http://localhost/mobile/v1/events", { headers: { authorization: phone.bearer, "user-agent": UA } }),
    );
    const reader = events.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    // One read in flight at a time, kept across waits, so no chunk is lost to a read given up on.
    let reading: Promise<void> | null = null;
    const readMore = () =>
      (reading ??= reader.read().then((r) => {
        buffer += decoder.decode(r.value);
        reading = null;
      }));
    const enqueued = () => buffer.split("event: MessageEnqueued").length - 1;
    const until = async (count: number) => {
      while (enqueued() < count) await readMore();
    };
    // An announcement is coalesced for 50 ms before it goes out (or is dropped): wait well past that.
    const settle = async () => {
      const until = Date.now() + 200;
      while (Date.now() < until) await Promise.race([readMore(), Bun.sleep(until - Date.now())]);
    };
    const take = async () =>
      (await mobile(ctx, "GET", "/message?order=fifo", { auth: phone.bearer })).json.map((m: { message: string }) => m.message);

    await sendSms(ctx, { message: "m0" });
    await sendSms(ctx, { message: "m1" });
    await until(1);
    // The two are announced together, or (on a slow machine, past the coalescing) one by one: both
    // were sent within the budget. What follows is counted from there.
    await settle();
    const base = enqueued();
    expect(base).toBeLessThanOrEqual(2);
    expect(await take()).toEqual(["m0", "m1"]);
    // The budget is spent: a pull now would hand out nothing new, so the phone is not asked to make one.
    await sendSms(ctx, { message: "m2" });
    await sendSms(ctx, { message: "m3" });
    await settle();
    expect(enqueued()).toBe(base);
    // A one-time code skips the pacing, so it is announced.
    await sendSms(ctx, { message: "code 1234", priority: 100 });
    await until(base + 1);
    expect(await take()).toEqual(["m0", "m1", "code 1234"]);
    await settle();
    expect(enqueued()).toBe(base + 1);
    // A new minute: the waiting messages are announced, and handed out within the new budget.
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 1, 0));
    expect(await ctx.services.phone.announceDue()).toBe(1);
    await until(base + 2);
    // (The phone confirmed none, so it sees them all again, in the order they were handed out:
    // the first minute's three by priority, then this minute's.)
    expect(await take()).toEqual(["code 1234", "m0", "m1", "m2", "m3"]);
    await reader.cancel();
  });

  sqliteOnly("a pull reads the phone's queue through its own index, never sorting the backlog behind it", async () => {
    const ctx = await createTestContext();
    for (const [name, sql] of Object.entries(PHONE_QUEUE_SQL)) {
      const plan = (ctx.db!.$client.query(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join("; ");
      expect(plan, name).toContain("USING INDEX notification_phone_queue_idx");
      expect(plan, name).not.toContain("TEMP B-TREE");
    }
  });

  test("re-homing moves only what a quiet phone never downloaded; what it downloaded waits for it, then fails device_offline at its time to live", async () => {
    const ctx = await createTestContext();
    const away = await pairPhone(ctx, "Away/phone");
    const other = await pairPhone(ctx, "Other/phone");
    const downloaded = await sendSms(ctx, { message: "downloaded", device_id: away.deviceId, ttl: 600 });
    expect((await mobile(ctx, "GET", "/message", { auth: away.bearer })).json.map((m: { message: string }) => m.message)).toEqual([
      "downloaded",
    ]);
    const untouched = await sendSms(ctx, { message: "never downloaded", device_id: away.deviceId, ttl: 600 });
    // The first phone goes quiet for six minutes; the other keeps calling in.
    ctx.clock.advance(6 * 60_000);
    await mobile(ctx, "GET", "/settings", { auth: other.bearer });
    expect(await ctx.services.phone.watchPresence()).toBe(1);
    await ctx.services.phone.rehomeOffline();
    expect(await notificationOf(ctx, untouched)).toMatchObject({ status: "pending", device_id: other.deviceId });
    expect(await notificationOf(ctx, downloaded)).toMatchObject({ status: "pending", device_id: away.deviceId });
    expect((await mobile(ctx, "GET", "/message", { auth: other.bearer })).json.map((m: { message: string }) => m.message)).toEqual([
      "never downloaded",
    ]);
    // Past its time to live, the downloaded one fails as device_offline.
    ctx.clock.advance(5 * 60_000);
    await mobile(ctx, "GET", "/settings", { auth: other.bearer });
    await ctx.services.phone.rehomeOffline();
    expect(await notificationOf(ctx, downloaded)).toMatchObject({
      status: "failed",
      error_code: "device_offline",
      device_id: away.deviceId,
    });
  });

  test("a scheduled message reaches the phone only when due", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    await sendSms(ctx, { schedule_time: "2026-01-15 12:30:00" });
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json).toEqual([]);
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 30, 0));
    expect(await ctx.services.phone.announceDue()).toBe(1);
    expect((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json).toHaveLength(1);
    expect(await ctx.services.phone.announceDue()).toBe(0);
  });
});

describe("settings, webhooks and events", () => {
  test("GET /settings provisions a stable signing key and serves the pacing", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    await ctx.post("/v1/api/device/update", {
      device_id: phone.deviceId,
      send_limit_per_minute: 7,
      send_interval_min: 2,
      send_interval_max: 9,
    });
    const s1 = (await mobile(ctx, "GET", "/settings", { auth: phone.bearer })).json;
    expect(s1.messages).toMatchObject({ limit_period: "PerMinute", limit_value: 7, send_interval_min: 2, send_interval_max: 9 });
    expect(s1.webhooks.signing_key).toMatch(/^[\w-]{16}$/);
    expect(s1.gateway.notification_channel).toBe("SSE_ONLY");
    const s2 = (await mobile(ctx, "GET", "/settings", { auth: phone.bearer })).json;
    expect(s2.webhooks.signing_key).toBe(s1.webhooks.signing_key);
    expect(
      expectEnvelope(
        await ctx.post("/v1/api/device/update", { device_id: phone.deviceId, send_interval_min: 10, send_interval_max: 3 }),
        400,
      ).data.field,
    ).toBe("send_interval_min");
  });

  test("GET /settings leaves out what the user did not choose in Pigeon, so the phone keeps its own", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const fresh = (await mobile(ctx, "GET", "/settings", { auth: phone.bearer })).json;
    // The app resets a key given as null and keeps its own value only for a key left out.
    expect(Object.keys(fresh).sort()).toEqual(["gateway", "webhooks"]);
    expect(Object.keys(fresh.webhooks)).toEqual(["signing_key"]);
    expect(fresh.ping).toBeUndefined();
    await ctx.post("/v1/api/device/update", { device_id: phone.deviceId, send_limit_per_minute: 12 });
    const limited = (await mobile(ctx, "GET", "/settings", { auth: phone.bearer })).json;
    expect(limited.messages).toEqual({ limit_period: "PerMinute", limit_value: 12 });
    // Choosing one end of the pause gives the phone the range Pigeon shows; the limit stays chosen.
    await ctx.post("/v1/api/device/update", { device_id: phone.deviceId, send_interval_max: 8 });
    const paced = (await mobile(ctx, "GET", "/settings", { auth: phone.bearer })).json;
    expect(paced.messages).toEqual({ limit_period: "PerMinute", limit_value: 12, send_interval_min: 1, send_interval_max: 8 });
  });

  test("GET /webhooks lists Pigeon's own https receiver for the SMS events, the data SMS, the two MMS events, the ping and the app's start", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const hooks = (await mobile(ctx, "GET", "/webhooks", { auth: phone.bearer })).json;
    expect(hooks.map((h: { event: string }) => h.event)).toEqual([
      "sms:received",
      "sms:data-received",
      "sms:sent",
      "sms:delivered",
      "sms:failed",
      "mms:received",
      "mms:downloaded",
      "system:ping",
      "sms:cancelled",
      "app:started",
    ]);
    for (const h of hooks)
      expect(h).toEqual({ id: expect.any(String), deviceId: null, url: "https://pigeon.test/mobile/v1/webhook", event: h.event });
  });

  test("GET /events: an event stream that announces new work, cancels and settings changes", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const res = await ctx.app.handle(
      new Request("http://localhost/mobile/v1/events", { headers: { authorization: phone.bearer, "user-agent": UA } }),
    );
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    const until = async (needle: string) => {
      while (!buffer.includes(needle)) buffer += decoder.decode((await reader.read()).value);
    };
    await until(":connected");
    const id = await sendSms(ctx);
    await until("event: MessageEnqueued\ndata: null\n\n");
    const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
    await ctx.post("/v1/api/notification/cancel", { notification_id: id });
    await until(`event: MessageCancelled\ndata: {"messageId":"${m.id}"}\n\n`);
    await ctx.post("/v1/api/device/update", { device_id: phone.deviceId, send_limit_per_minute: 3 });
    await until("event: SettingsUpdated\ndata: null\n\n");
    await reader.cancel();
  });
});

describe("webhooks the phone posts", () => {
  async function setup() {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    const key = (await mobile(ctx, "GET", "/settings", { auth: phone.bearer })).json.webhooks.signing_key as string;
    const post = (body: unknown, opts: { key?: string; at?: number } = {}) => {
      const { raw, headers } = signed(opts.key ?? key, body, opts.at ?? ctx.clock.now());
      return mobile(ctx, "POST", "/webhook", { raw, headers });
    };
    return { ctx, phone, key, post };
  }

  const received = (deviceId: string, id = "Ey6ECgOkVVFjz3CL48B8C") => ({
    id,
    webhookId: "pigeon-sms-received",
    event: "sms:received",
    deviceId,
    payload: {
      messageId: "a1b2c3d4",
      message: "Is my order ready?",
      sender: RECIPIENT,
      recipient: "+15550009999",
      simNumber: 1,
      phoneNumber: RECIPIENT,
      receivedAt: "2026-01-15T19:00:00.000+07:00",
    },
  });

  test("sms:received lands in the sender's thread, linked to the contact with that phone", async () => {
    const { ctx, phone, post } = await setup();
    const contact = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Ada", phone: RECIPIENT }), 200).data;
    const r = await post(received(phone.id));
    expect(r.status).toBe(204);
    const thread = (await ctx.sql.get("SELECT * FROM thread WHERE peer = '+14155552671'")) as Record<string, unknown>;
    expect(thread).toMatchObject({
      channel: "sms",
      contact_id: contact.contact_id,
      unread_count: 1,
      last_direction: "inbound",
      last_message_preview: "Is my order ready?",
    });
    const msgs = await ctx.sql.all("SELECT direction, body, at FROM thread_message WHERE thread_id = ?", [thread.id as number]);
    expect(msgs).toEqual([{ direction: "inbound", body: "Is my order ready?", at: Date.UTC(2026, 0, 15, 12) }]);
  });

  test("a replayed event id, a forged signature and a stale timestamp change nothing", async () => {
    const { ctx, phone, post } = await setup();
    expect((await post(received(phone.id))).status).toBe(204);
    expect((await post(received(phone.id))).status).toBe(204);
    const forged = await post(received(phone.id, "another-event-id-001"), { key: "not-the-key" });
    expect(forged.status).toBe(401);
    const stale = await post(received(phone.id, "another-event-id-002"), { at: ctx.clock.now() - 10 * 60_000 });
    expect(stale.status).toBe(400);
    const unknown = await post({ ...received("no-such-device"), id: "x3" });
    expect(unknown.status).toBe(401);
    expect(((await ctx.sql.get("SELECT count(*) AS n FROM thread_message")) as { n: number }).n).toBe(1);
  });

  test("status webhooks move the notification like PATCH /message", async () => {
    const { ctx, phone, post } = await setup();
    const id = await sendSms(ctx);
    const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
    const base = { webhookId: "w", deviceId: phone.id };
    await post({
      ...base,
      id: "e1",
      event: "sms:sent",
      payload: { messageId: m.id, sender: null, recipient: TO, simNumber: 1, partsCount: 1, sentAt: "2026-01-15T12:00:05.000Z" },
    });
    expect((await notificationOf(ctx, id)).status).toBe("sent");
    await post({
      ...base,
      id: "e2",
      event: "sms:delivered",
      payload: { messageId: m.id, recipient: TO, deliveredAt: "2026-01-15T12:00:09.000Z" },
    });
    expect(await notificationOf(ctx, id)).toMatchObject({ status: "delivered", delivered_at: "2026-01-15T12:00:09.000Z" });
  });

  test("sms:failed records the phone's reason", async () => {
    const { ctx, phone, post } = await setup();
    const id = await sendSms(ctx);
    const [m] = (await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json;
    await post({
      id: "f1",
      webhookId: "w",
      deviceId: phone.id,
      event: "sms:failed",
      payload: { messageId: m.id, recipient: TO, failedAt: "2026-01-15T12:00:05.000Z", reason: "Send result: RESULT_ERROR_RADIO_OFF" },
    });
    expect(await notificationOf(ctx, id)).toMatchObject({
      status: "failed",
      error_code: "RESULT_ERROR_RADIO_OFF",
      error_reason: "Send result: RESULT_ERROR_RADIO_OFF",
    });
  });
});

describe("presence", () => {
  test("every authorised phone request keeps it online; 5 minutes of silence makes sends 400 device_offline", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    ctx.clock.advance(4 * 60_000);
    await mobile(ctx, "GET", "/message", { auth: phone.bearer });
    ctx.clock.advance(4 * 60_000);
    await sendSms(ctx);
    expect(expectEnvelope(await ctx.get(`/v1/api/device/${phone.deviceId}/health`), 200).data).toMatchObject({
      online: true,
      health_score: 100,
    });
    ctx.clock.advance(5 * 60_000 + 1);
    const r = expectEnvelope(await ctx.post("/v1/notification/sms/api/send", { recipient_contact: TO, message: "x" }), 400);
    expect(r.data.error_code).toBe("device_offline");
    const health = expectEnvelope(await ctx.get(`/v1/api/device/${phone.deviceId}/health`), 200).data;
    expect(health).toMatchObject({ online: false, health_score: 70 });
  });
});

describe("a phone that only polls (the app's AUTO channel with a push token)", () => {
  test("is online for its 15-minute poll interval and 5 minutes more, and goes offline after that, once", async () => {
    const ctx = await createTestContext();
    const token = await pairingToken(ctx);
    const r = await mobile(ctx, "POST", "/device", {
      auth: `Bearer ${token}`,
      body: { ...REGISTER_BODY, pushToken: "fcm-token:APA91b-example" },
    });
    expect(r.status).toBe(201);
    const id = ((await ctx.sql.get("SELECT id FROM device WHERE external_id = ?", [r.json.id])) as { id: number }).id;
    // Another phone (same name and SIMs would be this one returning).
    const sse = await pairPhone(ctx, "Google/oriole");
    // Each calls once (a poll; for the SSE phone, any call), which marks it online.
    await mobile(ctx, "GET", "/message", { auth: `Bearer ${r.json.token}` });
    await mobile(ctx, "GET", "/message", { auth: sse.bearer });
    ctx.clock.advance(19 * 60_000);
    expect(await ctx.services.phone.watchPresence()).toBe(1); // the SSE phone only
    const device = expectEnvelope(await ctx.get(`/v1/api/device/${id}`), 200).data;
    expect(device).toMatchObject({ online: true, notification_channel: "polling" });
    expect(device.channel_hint).toContain("SSE Only");
    expect(expectEnvelope(await ctx.get(`/v1/api/device/${sse.deviceId}`), 200).data).toMatchObject({
      online: false,
      notification_channel: "sse",
      channel_hint: null,
    });
    expectEnvelope(
      await ctx.post("/v1/notification/sms/api/send", { recipient_contact: TO, message: "waits for the poll", device_id: id }),
      200,
    );
    ctx.clock.advance(60_000 + 1);
    expect(await ctx.services.phone.watchPresence()).toBe(1);
    expect(expectEnvelope(await ctx.get(`/v1/api/device/${id}/health`), 200).data).toMatchObject({
      online: false,
      notification_channel: "polling",
    });
    expect(await ctx.services.phone.watchPresence()).toBe(0);
  });

  test("switching to SSE Only (a PATCH without the token, or an event stream) makes it an SSE phone", async () => {
    const ctx = await createTestContext();
    const token = await pairingToken(ctx);
    const r = await mobile(ctx, "POST", "/device", {
      auth: `Bearer ${token}`,
      body: { ...REGISTER_BODY, pushToken: "fcm-token:APA91b-example" },
    });
    const id = ((await ctx.sql.get("SELECT id FROM device WHERE external_id = ?", [r.json.id])) as { id: number }).id;
    const channel = async () => expectEnvelope(await ctx.get(`/v1/api/device/${id}`), 200).data.notification_channel;
    expect(await channel()).toBe("polling");
    // The app's Gson leaves a null token out of the PATCH it sends after switching.
    expect((await mobile(ctx, "PATCH", "/device", { auth: `Bearer ${r.json.token}`, body: { id: r.json.id, simCards: [] } })).status).toBe(
      204,
    );
    expect(await channel()).toBe("sse");
    await mobile(ctx, "PATCH", "/device", { auth: `Bearer ${r.json.token}`, body: { id: r.json.id, pushToken: "fcm-token:APA91b-again" } });
    expect(await channel()).toBe("polling");
    const events = await ctx.app.handle(
      new Request("http://localhost/mobile/v1/events", { headers: { authorization: `Bearer ${r.json.token}` } }),
    );
    expect(events.status).toBe(200);
    await events.body?.cancel();
    expect(await channel()).toBe("sse");
  });
});

describe("a changed server address", () => {
  test("a phone that read its webhooks at another address is told WebhooksUpdated when its stream opens", async () => {
    const ctx = await createTestContext();
    const phone = await pairPhone(ctx);
    await mobile(ctx, "GET", "/webhooks", { auth: phone.bearer });
    ctx.config.publicUrl = "https://new-address.example";
    const res = await ctx.app.handle(new Request("http://localhost/mobile/v1/events", { headers: { authorization: phone.bearer } }));
    const reader = res.body!.getReader();
    let buffer = "";
    while (!buffer.includes("WebhooksUpdated")) buffer += new TextDecoder().decode((await reader.read()).value);
    expect(buffer).toContain("event: WebhooksUpdated\ndata: null\n\n");
    await reader.cancel();
    const hooks = (await mobile(ctx, "GET", "/webhooks", { auth: phone.bearer })).json;
    expect(hooks[0].url).toBe("https://new-address.example/mobile/v1/webhook");
  });
});
