// SMSGate's /settings in process: every key the released app reads is accepted, checked as the app
// checks it, read back, and served to each paired phone in the app's shape; the judge of what the
// phone does with them is the app's own import code, transcribed in test/helpers/app-importers.ts
// (MessagesSettings.kt and its siblings, v1.68.0 and the v1.66 Period). The published npm client
// (android-sms-gateway 3.0.0) makes the calls its types carry. Pigeon's pacing of the phone under
// each limit period is checked through GET /mobile/v1/message with the manual clock.
import { describe, expect, test } from "bun:test";
import Client, { LimitPeriod, SimSelectionMode } from "android-sms-gateway";
import { createTestContext, type TestContext } from "../helpers/context";
import { smsSender } from "../helpers/api";
import { AppSettingsStore } from "../helpers/app-importers";
import { mobile, openStream, pairMobile } from "../helpers/mobile";
import { RECIPIENT } from "../helpers/numbers";
import { inProcessHttpClient } from "../helpers/smsgate-client";

const OLD_UA = "me.capcom.smsgateway/1.66.1";
const sendSms = smsSender({ recipient_contact: RECIPIENT, message: "Settings test" });

function gateOf(ctx: TestContext) {
  const authorization = `Basic ${btoa(`${ctx.key.api_key}:${ctx.key.api_secret}`)}`;
  return (method: string, path: string, body?: unknown) =>
    ctx.call(method, `/3rdparty/v1${path}`, { body, key: null, headers: { authorization } });
}

/** Every key the app 1.68.0 imports that Pigeon serves, each away from the app's default. */
const EVERY_KEY = {
  messages: {
    send_interval_min: 3,
    send_interval_max: 11,
    limit_period: "Per30Minutes",
    limit_value: 40,
    sim_selection_mode: "RoundRobin",
    processing_order: "FIFO",
    log_lifetime_days: 14,
  },
  webhooks: { internet_required: false, retry_count: 4 },
  ping: { interval_seconds: 600 },
  logs: { lifetime_days: 7 },
  gateway: { notification_channel: "SSE_ONLY" },
};

const EVERY_KEY_IMPORTED = {
  sendIntervalMin: 3,
  sendIntervalMax: 11,
  limitPeriod: "Per30Minutes",
  limitValue: 40,
  simSelectionMode: "RoundRobin",
  processingOrder: "FIFO",
  logLifetimeDays: 14,
  internetRequired: false,
  retryCount: 4,
  pingIntervalSeconds: 600,
  logsLifetimeDays: 7,
  notificationChannel: "SSE_ONLY",
};

/** What a phone on a fresh install ends with after reading its settings (app 1.68.0's import). */
async function imported(ctx: TestContext, bearer: string, opts: { ua?: string; store?: AppSettingsStore } = {}) {
  const served = (await mobile(ctx, "GET", "/settings", { auth: bearer, ua: opts.ua })).json;
  const store = opts.store ?? new AppSettingsStore({ old: opts.ua === OLD_UA });
  store.update(served);
  return { served, store };
}

describe("SMSGate settings reach every phone as the app reads them", () => {
  test("every key the app reads is accepted, read back, and imported by each phone as set", async () => {
    const ctx = await createTestContext();
    const gate = gateOf(ctx);
    const a = await pairMobile(ctx, { name: "One" });
    const b = await pairMobile(ctx, { name: "Two" });
    const set = await gate("PATCH", "/settings", EVERY_KEY);
    expect(set.status).toBe(200);
    // A read also says whether a passphrase is pushed (never the passphrase): none here.
    const readBack = { ...EVERY_KEY, encryption: { passphrase_set: false } };
    expect(set.body).toEqual(readBack);
    expect((await gate("GET", "/settings")).body).toEqual(readBack);
    for (const phone of [a, b]) {
      const { served, store } = await imported(ctx, phone.bearer);
      expect(served.webhooks.signing_key).toEqual(expect.any(String));
      expect(store.snapshot()).toEqual(EVERY_KEY_IMPORTED);
    }
  });

  test("the npm client's patchSettings and getSettings, in its camelCase types", async () => {
    const ctx = await createTestContext();
    const phone = await pairMobile(ctx);
    const client = new Client(ctx.key.api_key, ctx.key.api_secret, inProcessHttpClient(ctx), "http://localhost/3rdparty/v1");
    await client.patchSettings({
      messages: { limitPeriod: LimitPeriod.PerHour, limitValue: 120, simSelectionMode: SimSelectionMode.Random, logLifetimeDays: 30 },
      webhooks: { internetRequired: false, retryCount: 2 },
      ping: { intervalSeconds: 900 },
      logs: { lifetimeDays: 3 },
    });
    // SMSGate's server answers in the app's snake_case, whatever the client's types say.
    const read = (await client.getSettings()) as unknown as Record<string, Record<string, unknown>>;
    expect(read.messages).toMatchObject({ limit_period: "PerHour", limit_value: 120, sim_selection_mode: "Random", log_lifetime_days: 30 });
    expect(read.webhooks).toEqual({ internet_required: false, retry_count: 2 });
    expect(read.ping).toEqual({ interval_seconds: 900 });
    expect(read.logs).toEqual({ lifetime_days: 3 });
    const { store } = await imported(ctx, phone.bearer);
    expect(store.snapshot()).toMatchObject({
      limitPeriod: "PerHour",
      limitValue: 120,
      simSelectionMode: "Random",
      logLifetimeDays: 30,
      internetRequired: false,
      retryCount: 2,
      pingIntervalSeconds: 900,
      logsLifetimeDays: 3,
    });
    // updateSettings (PUT) applies what it is given as PATCH does.
    await client.updateSettings({ messages: { limitPeriod: LimitPeriod.PerDay, limitValue: 500 } });
    expect((await imported(ctx, phone.bearer)).store.snapshot()).toMatchObject({ limitPeriod: "PerDay", limitValue: 500 });
  });

  test("keys the user never set are left out, so the phone keeps its own choice", async () => {
    const ctx = await createTestContext();
    const gate = gateOf(ctx);
    const phone = await pairMobile(ctx);
    expect((await gate("PATCH", "/settings", { ping: { interval_seconds: 120 } })).status).toBe(200);
    const { served } = await imported(ctx, phone.bearer);
    expect(served).toEqual({
      ping: { interval_seconds: 120 },
      webhooks: { signing_key: expect.any(String) },
      gateway: { notification_channel: "SSE_ONLY" },
    });
    // A phone that chose FIFO and round robin itself keeps them.
    const own = new AppSettingsStore();
    own.update({ messages: { processing_order: "FIFO", sim_selection_mode: "RoundRobin" } });
    await imported(ctx, phone.bearer, { store: own });
    expect(own.snapshot()).toMatchObject({ processingOrder: "FIFO", simSelectionMode: "RoundRobin", pingIntervalSeconds: 120 });
  });

  test("a key set to null is cleared: the phone is given null and goes back to the app's default", async () => {
    const ctx = await createTestContext();
    const gate = gateOf(ctx);
    const phone = await pairMobile(ctx);
    expect((await gate("PATCH", "/settings", EVERY_KEY)).status).toBe(200);
    const { store } = await imported(ctx, phone.bearer);
    expect(store.snapshot()).toEqual(EVERY_KEY_IMPORTED);
    const cleared = {
      messages: Object.fromEntries(Object.keys(EVERY_KEY.messages).map((k) => [k, null])),
      webhooks: { internet_required: null, retry_count: null },
      ping: { interval_seconds: null },
      logs: { lifetime_days: null },
    };
    const r = await gate("PATCH", "/settings", cleared);
    expect(r.status).toBe(200);
    expect(r.body.messages).toMatchObject(cleared.messages);
    const again = await imported(ctx, phone.bearer, { store });
    expect(again.served.messages).toEqual(cleared.messages);
    expect(again.served.webhooks).toEqual({ internet_required: null, retry_count: null, signing_key: expect.any(String) });
    // The app's defaults: no pause, no limit, OSDefault, LIFO, logs kept, webhooks need internet
    // and retry 15 times, ping off, logs kept for ever.
    expect(store.snapshot()).toEqual({
      sendIntervalMin: 0,
      sendIntervalMax: null,
      limitPeriod: "Disabled",
      limitValue: 0,
      simSelectionMode: "OSDefault",
      processingOrder: "LIFO",
      logLifetimeDays: null,
      internetRequired: true,
      retryCount: 15,
      pingIntervalSeconds: null,
      logsLifetimeDays: null,
      notificationChannel: "SSE_ONLY",
    });
    // Pigeon's own pacing is back to its per-minute limit once the period is cleared.
    expect((await gate("GET", "/settings")).body.messages.limit_period).toBeNull();
  });

  test("a bad value answers 400 naming the key with its error_code, and nothing is stored", async () => {
    const ctx = await createTestContext();
    const gate = gateOf(ctx);
    const phone = await pairMobile(ctx);
    expect((await gate("PATCH", "/settings", { messages: { limit_period: "PerHour", limit_value: 10 } })).status).toBe(200);
    const before = (await gate("GET", "/settings")).body;
    const servedBefore = (await mobile(ctx, "GET", "/settings", { auth: phone.bearer })).json;
    const cases: [unknown, string, string][] = [
      [{ messages: { limit_period: "PerWeek" } }, "messages.limit_period", "validation_error"],
      [{ messages: { limit_value: -1 } }, "messages.limit_value", "validation_error"],
      [{ messages: { limit_value: 2.5 } }, "messages.limit_value", "validation_error"],
      [{ messages: { sim_selection_mode: "First" } }, "messages.sim_selection_mode", "validation_error"],
      [{ messages: { processing_order: "fifo" } }, "messages.processing_order", "validation_error"],
      [{ messages: { log_lifetime_days: 0 } }, "messages.log_lifetime_days", "validation_error"],
      [{ messages: { send_interval_min: 4000 } }, "messages.send_interval_min", "validation_error"],
      [{ messages: { send_interval_min: 50 } }, "messages.send_interval_min", "validation_error"],
      [{ webhooks: { internet_required: "yes" } }, "webhooks.internet_required", "validation_error"],
      [{ webhooks: { retry_count: 0 } }, "webhooks.retry_count", "validation_error"],
      [{ ping: { interval_seconds: -5 } }, "ping.interval_seconds", "validation_error"],
      [{ logs: { lifetime_days: "7" } }, "logs.lifetime_days", "validation_error"],
      [{ gateway: { notification_channel: "AUTO" } }, "gateway.notification_channel", "option_not_supported"],
      [{ gateway: { cloud_url: "https://elsewhere.example" } }, "gateway.cloud_url", "option_not_supported"],
      [{ messages: { work_hours_enabled: true } }, "messages.work_hours_enabled", "option_not_supported"],
      // Names every object inherits are unknown settings too (the fuzzer over /openapi.json found a 500).
      [{ constructor: { prototype: 1 } }, "constructor", "option_not_supported"],
      [{ messages: { constructor: 1 } }, "messages.constructor", "option_not_supported"],
      // A good key beside a bad one: the good one is not stored either.
      [
        { ping: { interval_seconds: 60 }, messages: { processing_order: "LIFO", limit_period: "Hourly" } },
        "messages.limit_period",
        "validation_error",
      ],
    ];
    for (const [body, field, code] of cases) {
      const r = await gate("PATCH", "/settings", body);
      expect({ body, status: r.status, field: r.body.data?.field, code: r.body.data?.error_code }).toEqual({
        body,
        status: 400,
        field,
        code,
      });
      expect(r.body.message).toContain(field);
    }
    expect((await gate("GET", "/settings")).body).toEqual(before);
    expect((await mobile(ctx, "GET", "/settings", { auth: phone.bearer })).json).toEqual(servedBefore);
  });

  test("a settings change tells each phone's event stream SettingsUpdated", async () => {
    const ctx = await createTestContext();
    const gate = gateOf(ctx);
    const phones = [await pairMobile(ctx, { name: "One" }), await pairMobile(ctx, { name: "Two" })];
    const streams = await Promise.all(phones.map((p) => openStream(ctx, p.bearer)));
    for (const s of streams) await s.until(":connected");
    expect((await gate("PATCH", "/settings", { ping: { interval_seconds: 300 } })).status).toBe(200);
    for (const s of streams) await s.until("event: SettingsUpdated\ndata: null\n\n");
    for (const s of streams) await s.close();
  });
});

describe("an app too old for Per30Minutes", () => {
  test("is given no limit rather than a period its import would fail on; 1.67.0 and later get it", async () => {
    const ctx = await createTestContext();
    const gate = gateOf(ctx);
    const old = await pairMobile(ctx, { name: "Old", ua: OLD_UA });
    const current = await pairMobile(ctx, { name: "Current" });
    expect(
      (await gate("PATCH", "/settings", { messages: { limit_period: "Per30Minutes", limit_value: 25, processing_order: "FIFO" } })).status,
    ).toBe(200);
    const served = (await mobile(ctx, "GET", "/settings", { auth: current.bearer })).json;
    // The judge: app 1.66's Period has no Per30Minutes, so the 1.68 answer fails its whole import.
    expect(() => new AppSettingsStore({ old: true }).update(served)).toThrow("Failed to import messages");
    const { served: oldServed, store } = await imported(ctx, old.bearer, { ua: OLD_UA });
    expect(oldServed.messages).toEqual({ processing_order: "FIFO" });
    expect(store.snapshot()).toMatchObject({ processingOrder: "FIFO", limitPeriod: "Disabled" });
    expect((await imported(ctx, current.bearer)).store.snapshot()).toMatchObject({ limitPeriod: "Per30Minutes", limitValue: 25 });
    // Other periods reach the old app as they are.
    expect((await gate("PATCH", "/settings", { messages: { limit_period: "PerHour" } })).status).toBe(200);
    expect((await imported(ctx, old.bearer, { ua: OLD_UA })).store.snapshot()).toMatchObject({ limitPeriod: "PerHour", limitValue: 25 });
  });
});

describe("Pigeon paces the phone by the limit period chosen", () => {
  async function setup(limit: Record<string, unknown>, sends: number) {
    const ctx = await createTestContext();
    const phone = await pairMobile(ctx);
    expect((await gateOf(ctx)("PATCH", "/settings", { messages: limit })).status).toBe(200);
    for (let i = 0; i < sends; i++) await sendSms(ctx);
    // Only messages never handed before count: one the phone has not confirmed is handed again.
    const seen = new Set<string>();
    const pull = async () => {
      const got = ((await mobile(ctx, "GET", "/message", { auth: phone.bearer })).json as { id: string }[]).filter((m) => !seen.has(m.id));
      for (const m of got) seen.add(m.id);
      return got.length;
    };
    return { ctx, pull };
  }
  const MIN = 60_000;

  for (const [period, ms] of [
    ["Per30Minutes", 30 * MIN],
    ["PerHour", 60 * MIN],
    ["PerDay", 24 * 60 * MIN],
  ] as const) {
    test(`${period}: the limit counts over the ${period} just past, as the app counts it`, async () => {
      const { ctx, pull } = await setup({ limit_period: period, limit_value: 2 }, 5);
      expect(await pull()).toBe(2);
      // A new clock minute (and, for the day, a new hour) brings nothing: the period is not over.
      ctx.clock.advance(Math.min(ms / 2, 2 * 60 * MIN));
      expect(await pull()).toBe(0);
      ctx.clock.advance(ms - Math.min(ms / 2, 2 * 60 * MIN) - 1000);
      expect(await pull()).toBe(0);
      ctx.clock.advance(2000);
      expect(await pull()).toBe(2);
      ctx.clock.advance(ms + 1000);
      expect(await pull()).toBe(1);
    });
  }

  test("PerMinute counts the clock minute; Disabled and a value of 0 set no limit", async () => {
    const perMinute = await setup({ limit_period: "PerMinute", limit_value: 2 }, 3);
    expect(await perMinute.pull()).toBe(2);
    perMinute.ctx.clock.advance(MIN);
    expect(await perMinute.pull()).toBe(1);
    for (const limit of [
      { limit_period: "Disabled", limit_value: 2 },
      { limit_period: "PerHour", limit_value: 0 },
    ]) {
      const open = await setup(limit, 5);
      expect(await open.pull()).toBe(5);
    }
  });

  test("a limit set in Pigeon's device API replaces the period chosen through SMSGate", async () => {
    const { ctx, pull } = await setup({ limit_period: "PerDay", limit_value: 1 }, 4);
    expect(await pull()).toBe(1);
    const [device] = (await ctx.get("/v1/api/device/list")).body.data.devices;
    expect((await ctx.post("/v1/api/device/update", { device_id: device.device_id, send_limit_per_minute: 2 })).status).toBe(200);
    ctx.clock.advance(MIN);
    expect(await pull()).toBe(2);
    expect((await gateOf(ctx)("GET", "/settings")).body.messages).toMatchObject({ limit_period: "PerMinute", limit_value: 2 });
  });
});
