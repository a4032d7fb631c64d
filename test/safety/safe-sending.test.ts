// Safe sending in process, with the clock moved rather than waited for: opt-out keywords from a
// paired phone, refusals at send, the audit and the API; workspace settings; quiet hours read in
// the recipient's zone; failover from an offline phone or a rejecting carrier to the next route;
// and the preview agreeing with what a send then does.
import { afterEach, describe, expect, test } from "bun:test";
import { notificationOf, postSend, SEND_PATH, settle } from "../helpers/api";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { appPhone } from "../helpers/phone";
import { RECIPIENT, ABROAD } from "../helpers/numbers";

const ADA = RECIPIENT; // +1 415: the United States, read in America/New_York
const BOB = ABROAD;
let fake: FakeCloud | null = null;
afterEach(() => fake?.stop());

const eventsOf = async (ctx: TestContext, type: string) =>
  (await ctx.sql.all<{ data: string }>("SELECT data FROM event WHERE type = ? ORDER BY id", [type])).map((r) => JSON.parse(r.data));
const notificationsTo = (ctx: TestContext, to: string) =>
  ctx.sql.all<{ id: number; message: string; status: string }>(
    "SELECT id, message, status FROM notification WHERE recipient = ? ORDER BY id",
    [to],
  );
const audit = async (ctx: TestContext, query: Record<string, string | number | boolean> = {}) =>
  expectEnvelope(await ctx.get("/v1/api/optout/list", { query }), 200).data;

describe("opt-out keywords from a paired phone", () => {
  test("STOP: suppressed, audited, announced, confirmed once; sends are 403 with nothing stored; a scheduled one fails refunded", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    const cloud = await ctx.cloudDevice(fake);
    await ctx.topUp(10);
    const scheduled = (
      await postSend(ctx, {
        recipient_contact: ADA,
        message: "Your table tomorrow",
        device_id: cloud.device_id,
        schedule_time: "2026-01-16 12:00:00",
      })
    ).data.notification_id;
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(9);

    await phone.receive(ADA, "  Stop ");

    const thread = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads.find((t: { peer: string }) => t.peer === ADA);
    const messages = expectEnvelope(await ctx.get(`/v1/api/thread/${thread.thread_id}/messages`), 200).data.messages;
    const inbound = messages.find((m: { direction: string }) => m.direction === "inbound");
    expect(inbound.body).toBe("  Stop ");

    const entries = (await audit(ctx)).entries;
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      phone: ADA,
      action: "opted_out",
      source: "keyword",
      message_id: inbound.message_id,
      channel: "sms",
      device_id: phone.deviceId,
    });
    expect(await eventsOf(ctx, "contact.opted_out")).toEqual([
      expect.objectContaining({ phone: ADA, source: "keyword", message_id: inbound.message_id }),
    ]);

    // The confirmation goes back through the phone it came in on, as the only new message to Ada.
    const replies = (await notificationsTo(ctx, ADA)).filter((n) => n.id !== scheduled);
    expect(replies).toHaveLength(1);
    expect(replies[0].message).toContain("Reply START");
    expect((await notificationOf(ctx, replies[0].id)).device_id).toBe(phone.deviceId);

    // The scheduled message will never go: failed, its credit back.
    expect(await notificationOf(ctx, scheduled)).toMatchObject({ status: "failed", error_code: "recipient_opted_out" });
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(10);

    const before = (await notificationsTo(ctx, ADA)).length;
    const refused = expectEnvelope(
      await ctx.post(SEND_PATH, { recipient_contact: "+1 (415) 555-2671", message: "Hello again", device_id: cloud.device_id }),
      403,
    ).data;
    expect(refused).toMatchObject({ error_code: "recipient_opted_out", source: "keyword", opted_out_at: "2026-01-15T12:00:00.000Z" });
    expect(await notificationsTo(ctx, ADA)).toHaveLength(before);
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(10);

    // Bulk: the opted-out item fails alone.
    const bulk = expectEnvelope(
      await ctx.post("/v1/api/sms/send/bulk", {
        messages: [
          { recipient_contact: ADA, message: "a" },
          { recipient_contact: BOB, message: "b" },
        ],
      }),
      200,
    ).data;
    expect(bulk).toMatchObject({ accepted: 1, failed: 1 });
    expect(bulk.results[0]).toMatchObject({ ok: false, error: { status_id: 403, error_code: "recipient_opted_out" } });

    // A second STOP changes nothing: no audit entry, no second confirmation.
    await phone.receive(ADA, "STOP");
    expect((await audit(ctx)).entries).toHaveLength(1);
    expect((await notificationsTo(ctx, ADA)).length).toBe(before);
  });

  test("START lifts it with a confirmation; YES from someone who never opted out is an ordinary answer", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    await phone.receive(ADA, "unsubscribe");
    await phone.receive(ADA, "start");
    expect((await audit(ctx)).entries.map((e: { action: string }) => e.action)).toEqual(["opted_in", "opted_out"]);
    expect(await eventsOf(ctx, "contact.opted_in")).toHaveLength(1);
    expect((await notificationsTo(ctx, ADA)).map((n) => n.message)).toEqual([
      expect.stringContaining("Reply START"),
      expect.stringContaining("subscribed again"),
    ]);
    await postSend(ctx, { recipient_contact: ADA, message: "Welcome back" });

    await phone.receive(BOB, "Yes");
    expect(await notificationsTo(ctx, BOB)).toEqual([]);
    expect((await audit(ctx, { phone: BOB })).entries).toEqual([]);
  });

  test("HELP answers with the help text; a sentence containing STOP is not a keyword", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    await phone.receive(ADA, "help");
    // The reply is sent once the inbound message is stored (after its unit of work commits).
    expect(await settle(async () => (await notificationsTo(ctx, ADA)).length > 0, 5000)).toBe(true);
    expect((await notificationsTo(ctx, ADA)).map((n) => n.message)).toEqual([expect.stringContaining("Reply STOP")]);
    await phone.receive(BOB, "please stop calling me");
    expect((await audit(ctx)).entries).toEqual([]);
    expect(await notificationsTo(ctx, BOB)).toEqual([]);
  });

  test("the keyword lists and replies are settings: a word in another language, a silent opt-out, STOP turned off", async () => {
    const ctx = await createTestContext();
    const phone = await appPhone(ctx);
    const saved = expectEnvelope(
      await ctx.post("/v1/api/workspace/settings", { opt_out_keywords: ["stop", "Arrêt"], opt_out_reply: "" }),
      200,
    ).data;
    expect(saved.opt_out_keywords).toEqual(["STOP", "ARRÊT"]);
    await phone.receive(ADA, "arrêt");
    expect((await audit(ctx)).entries[0]).toMatchObject({ phone: ADA, action: "opted_out" });
    expect(await notificationsTo(ctx, ADA)).toEqual([]);

    expectEnvelope(await ctx.post("/v1/api/workspace/settings", { opt_out_keywords: [] }), 200);
    await phone.receive(BOB, "STOP");
    expect((await audit(ctx, { phone: BOB })).entries).toEqual([]);
  });
});

describe("the opt-out API", () => {
  test("add and remove by hand, each audited with source api; active lists the numbers suppressed now; a contact shows it", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const contact = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Ada", phone: ADA }), 200).data;
    expect(contact).toMatchObject({ opted_out: false, opted_out_at: null, timezone: null });

    const added = expectEnvelope(
      await ctx.post("/v1/api/optout/add", { phone: "+1 415 555 2671", reason: "asked at the counter" }),
      200,
    ).data;
    expect(added).toMatchObject({ phone: ADA, opted_out: true, source: "api", reason: "asked at the counter", changed: true });
    expect(expectEnvelope(await ctx.post("/v1/api/optout/add", { phone: ADA }), 200).data.changed).toBe(false);
    expect(expectEnvelope(await ctx.get(`/v1/api/contact/${contact.contact_id}`), 200).data).toMatchObject({
      opted_out: true,
      opted_out_at: "2026-01-15T12:00:00.000Z",
    });
    expect((await eventsOf(ctx, "contact.opted_out"))[0]).toMatchObject({ phone: ADA, source: "api", contact_id: contact.contact_id });

    expectEnvelope(await ctx.post("/v1/api/optout/add", { phone: BOB }), 200);
    ctx.clock.advance(1000);
    expectEnvelope(await ctx.post("/v1/api/optout/remove", { phone: BOB }), 200);
    expect(expectEnvelope(await ctx.post("/v1/api/optout/remove", { phone: BOB }), 200).data.changed).toBe(false);

    const all = await audit(ctx);
    expect(all.pagination.total).toBe(3);
    expect(all.entries.map((e: { phone: string; action: string }) => `${e.phone} ${e.action}`)).toEqual([
      `${BOB} opted_in`,
      `${BOB} opted_out`,
      `${ADA} opted_out`,
    ]);
    expect((await audit(ctx, { phone: BOB, limit: 1 })).entries).toEqual([expect.objectContaining({ action: "opted_in" })]);
    const active = await audit(ctx, { active: true });
    expect(active.entries).toEqual([
      expect.objectContaining({ phone: ADA, action: "opted_out", source: "api", reason: "asked at the counter" }),
    ]);

    expect(expectEnvelope(await ctx.post("/v1/api/optout/add", { phone: "not a number" }), 400).data.error_code).toBe(
      "invalid_phone_number",
    );
    expect(expectEnvelope(await ctx.post("/v1/api/optout/add", { phone: ADA, extra: 1 }), 400).data.error_code).toBe("validation_error");
    expect(expectEnvelope(await ctx.get("/v1/api/optout/list", { query: { active: "maybe" } }), 400).data.error_code).toBe(
      "validation_error",
    );
    // Another workspace's list is its own.
    const other = await ctx.otherWorkspace();
    expect(expectEnvelope(await ctx.get("/v1/api/optout/list", { key: other.key }), 200).data.entries).toEqual([]);
  });
});

describe("workspace settings", () => {
  test("defaults, a change, and every mistake a 400 that stores nothing", async () => {
    const ctx = await createTestContext();
    const defaults = expectEnvelope(await ctx.get("/v1/api/workspace/settings"), 200).data;
    expect(defaults).toMatchObject({
      quiet_hours: null,
      opt_out_keywords: ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"],
      opt_in_keywords: ["START", "UNSTOP", "YES"],
      help_keywords: ["HELP", "INFO"],
      default_routes: null,
    });
    const changed = expectEnvelope(
      await ctx.post("/v1/api/workspace/settings", { quiet_hours: { start: "21:00", end: "08:00" }, default_routes: ["phone", "cloud"] }),
      200,
    ).data;
    expect(changed).toMatchObject({
      quiet_hours: { start: "21:00", end: "08:00" },
      default_routes: ["phone", "cloud"],
      opt_out_keywords: defaults.opt_out_keywords,
    });

    for (const [body, code, field] of [
      [{ quiet_hours: { start: "25:00", end: "08:00" } }, "validation_error", "quiet_hours.start"],
      [{ quiet_hours: { start: "9:00", end: "08:00" } }, "validation_error", "quiet_hours.start"],
      [{ quiet_hours: { start: "08:00", end: "08:00" } }, "validation_error", "quiet_hours"],
      [{ default_routes: ["phone", "pigeon"] }, "validation_error", "default_routes"],
      [{ default_routes: ["phone", "sms"] }, "validation_error", "default_routes"],
      [{ opt_in_keywords: ["STOP"] }, "keyword_conflict", undefined],
      [{ opt_out_keywords: ["   "] }, "validation_error", "opt_out_keywords"],
      [{ quiet: true }, "validation_error", "quiet"],
    ] as const) {
      const r = expectEnvelope(await ctx.post("/v1/api/workspace/settings", body), 400).data;
      expect({ body, code: r.error_code, field: r.field }).toEqual({ body, code, field });
    }
    expect(expectEnvelope(await ctx.get("/v1/api/workspace/settings"), 200).data).toEqual(changed);
    expect(expectEnvelope(await ctx.post("/v1/api/workspace/settings", { quiet_hours: null }), 200).data.quiet_hours).toBeNull();
  });
});

describe("default country", () => {
  test("a national number is read in the workspace's country once it has one; an unknown code is a 400", async () => {
    const ctx = await createTestContext();
    await appPhone(ctx);
    // Without a default country a national number is refused, as before.
    const before = await ctx.post(SEND_PATH, { recipient_contact: "030 1234567", message: "Hallo" });
    expect(expectEnvelope(before, 400).data.error_code).toBe("invalid_phone_number");
    expect(expectEnvelope(await ctx.get("/v1/api/workspace/settings"), 200).data.default_country).toBeNull();

    const bad = expectEnvelope(await ctx.post("/v1/api/workspace/settings", { default_country: "XX" }), 400).data;
    expect({ code: bad.error_code, field: bad.field }).toEqual({ code: "invalid_country", field: "default_country" });
    expect(expectEnvelope(await ctx.post("/v1/api/workspace/settings", { default_country: " de " }), 200).data.default_country).toBe("DE");

    await postSend(ctx, { recipient_contact: "030 1234567", message: "Hallo" });
    expect((await notificationsTo(ctx, "+49301234567")).map((n) => n.message)).toEqual(["Hallo"]);
    // The international prefix and a number with its code are read as they say, whatever the country.
    await postSend(ctx, { recipient_contact: "0044 20 7946 0018", message: "Hello" });
    expect(await notificationsTo(ctx, "+442079460018")).toHaveLength(1);
    // A national number that is no number there is still a 400.
    expect(expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: "12", message: "x" }), 400).data.error_code).toBe(
      "invalid_phone_number",
    );
    expect(expectEnvelope(await ctx.post("/v1/api/workspace/settings", { default_country: null }), 200).data.default_country).toBeNull();
  });
});

describe("quiet hours", () => {
  // The manual clock starts at 2026-01-15 12:00 UTC: 07:00 in New York, 21:00 in Tokyo, 12:00 in London.
  async function quietWorkspace() {
    const ctx = await createTestContext();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    await ctx.cloudDevice(fake);
    await ctx.topUp(10);
    expectEnvelope(await ctx.post("/v1/api/workspace/settings", { quiet_hours: { start: "21:00", end: "08:00" } }), 200);
    return ctx;
  }

  test("a send inside the recipient's quiet hours is held until they end, then goes (clock moved)", async () => {
    const ctx = await quietWorkspace();
    const held = (await postSend(ctx, { recipient_contact: ADA, message: "Sale starts today" })).data;
    expect(held).toMatchObject({
      scheduled_for: "2026-01-15T13:00:00.000Z",
      scheduled_at: "2026-01-15T13:00:00.000Z",
      quiet_hours: { until: "2026-01-15T13:00:00.000Z", timezone: "America/New_York" },
    });
    // London is awake: not held, and the reply carries nothing extra.
    const awake = (await postSend(ctx, { recipient_contact: BOB, message: "Sale starts today" })).data;
    expect(awake.scheduled_for).toBeNull();
    expect(awake.quiet_hours).toBeUndefined();

    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    expect(fake!.creates.map((c) => c.To)).toEqual([BOB]);
    ctx.clock.set(Date.parse("2026-01-15T12:59:59Z"));
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(0);
    ctx.clock.set(Date.parse("2026-01-15T13:00:00Z"));
    expect(await ctx.services.dispatcher.dispatchDue()).toBe(1);
    expect(fake!.creates.map((c) => c.To)).toEqual([BOB, ADA]);
    const n = await notificationOf(ctx, held.notification_id);
    expect(n.status).toBe("sent");
    expect(n.logs.map((l: { event: string }) => l.event)).toEqual(["scheduled", "quiet_hours", "attempt", "sent"]);
  });

  test("the contact's own zone wins over the number's country; urgent and transactional sends are not held; a schedule inside them moves to their end", async () => {
    const ctx = await quietWorkspace();
    expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Bob in Tokyo", phone: BOB, timezone: "Asia/Tokyo" }), 200);
    const tokyo = (await postSend(ctx, { recipient_contact: BOB, message: "x" })).data;
    expect(tokyo.quiet_hours).toEqual({ until: "2026-01-15T23:00:00.000Z", timezone: "Asia/Tokyo" });
    expect((await postSend(ctx, { recipient_contact: ADA, message: "Your code is 1234", priority: 100 })).data.scheduled_for).toBeNull();
    expect((await postSend(ctx, { recipient_contact: ADA, message: "Your receipt", transactional: true })).data.scheduled_for).toBeNull();
    // 10:00 New York time is awake; 06:00 the day after is not, and waits for 08:00.
    expect(
      (await postSend(ctx, { recipient_contact: ADA, message: "x", schedule_time: "2026-01-15 10:00:00", timezone: "America/New_York" }))
        .data.quiet_hours,
    ).toBeUndefined();
    const early = (
      await postSend(ctx, { recipient_contact: ADA, message: "x", schedule_time: "2026-01-16 06:00:00", timezone: "America/New_York" })
    ).data;
    expect(early.scheduled_at).toBe("2026-01-16T13:00:00.000Z");
    expect(
      expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Nowhere", phone: "+12125550100", timezone: "Mars/Olympus" }), 400)
        .data.error_code,
    ).toBe("invalid_timezone");
    // A zone name the runtime's ICU data lacks (EST5EDT, a link to New York since tzdata 2024b) is
    // accepted for a contact, so quiet hours must read it too, not fail the send.
    expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "Eve", phone: "+12125550111", timezone: "EST5EDT" }), 200);
    expect((await postSend(ctx, { recipient_contact: "+12125550111", message: "x" })).data.quiet_hours).toEqual({
      until: "2026-01-15T13:00:00.000Z",
      timezone: "America/New_York",
    });
  });
});

describe("failover", () => {
  async function twoRoutes(credits = 10) {
    const ctx = await createTestContext();
    const phone = await ctx.phone();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    const cloud = await ctx.cloudDevice(fake);
    if (credits > 0) await ctx.topUp(credits);
    return { ctx, phone, cloud, fake };
  }

  test("a phone offline at send: skipped at once, the cloud number carries it and is paid once", async () => {
    const { ctx, phone, cloud, fake } = await twoRoutes();
    ctx.clock.advance(6 * 60_000);
    const sent = (await postSend(ctx, { recipient_contact: ADA, message: "Table ready", routes: ["phone", "cloud"] })).data;
    expect(sent).toMatchObject({
      route: "cloud",
      device_id: cloud.device_id,
      skipped_routes: [{ route: "phone", error_code: "device_offline" }],
    });
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(9);
    await ctx.services.dispatcher.dispatchDue();
    expect(fake.creates).toHaveLength(1);
    const n = await notificationOf(ctx, sent.notification_id);
    expect(n).toMatchObject({ status: "sent", route: "cloud", device_id: cloud.device_id });
    expect(n.logs[1]).toMatchObject({
      event: "route_skipped",
      error_code: "device_offline",
      detail: expect.stringContaining(`Device ${phone.device_id} is offline`),
    });
    // Without a route order the same send is refused, as before.
    expect(
      expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: ADA, message: "x", device_id: phone.device_id }), 400).data.error_code,
    ).toBe("device_offline");
  });

  test("a phone that goes quiet with the message waiting: given up on after the grace period, the message moves to the cloud number", async () => {
    const { ctx, phone, cloud, fake } = await twoRoutes();
    const id = (await postSend(ctx, { recipient_contact: ADA, message: "Table ready", routes: ["phone", "cloud"] })).data.notification_id;
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(10);
    // Offline after 5 minutes of silence, given up on 2 minutes later.
    ctx.clock.advance(5 * 60_000 + 119_000);
    expect(await ctx.services.sending.failoverStranded(120_000)).toBe(0);
    ctx.clock.advance(2000);
    expect(await ctx.services.sending.failoverStranded(120_000)).toBe(1);
    const moved = await notificationOf(ctx, id);
    expect(moved).toMatchObject({ status: "pending", route: "cloud", device_id: cloud.device_id });
    // The first line still names the phone it was stored for (kept before the reroute changed the row).
    expect(moved.logs[0]).toMatchObject({ event: "accepted", detail: `queued for device ${phone.device_id} (sms)` });
    expect(moved.logs.at(-1)).toMatchObject({
      event: "failover",
      error_code: "device_offline",
      detail: expect.stringContaining(`device ${phone.device_id}`),
    });
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(9);
    await ctx.services.dispatcher.dispatchDue();
    expect(fake.creates.map((c) => c.Body)).toEqual(["Table ready"]);
    expect((await notificationOf(ctx, id)).status).toBe("sent");
    expect(await ctx.services.sending.failoverStranded(120_000)).toBe(0);
  });

  test("a carrier rejection on the cloud number moves it to the phone, with the credit refunded; an unsubscribed recipient does not move", async () => {
    const { ctx, phone, cloud, fake } = await twoRoutes();
    const id = (await postSend(ctx, { recipient_contact: ADA, message: "Table ready", routes: ["cloud", "phone"] })).data.notification_id;
    await ctx.services.dispatcher.dispatchDue();
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(9);
    await fake.callback([...fake.messages.keys()][0], "undelivered", { ErrorCode: "30003" });
    const moved = await notificationOf(ctx, id);
    expect(moved).toMatchObject({ status: "pending", route: "sms", device_id: phone.device_id, error_code: null, sent_at: null });
    expect(moved.provider_message_id).not.toBe([...fake.messages.keys()][0]);
    expect(moved.logs.map((l: { event: string }) => l.event)).toEqual(["accepted", "attempt", "sent", "failover"]);
    expect(moved.logs[0].detail).toBe(`queued for device ${cloud.device_id} (cloud)`);
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(10);

    const other = (await postSend(ctx, { recipient_contact: BOB, message: "x", routes: ["cloud", "phone"] })).data.notification_id;
    await ctx.services.dispatcher.dispatchDue();
    await fake.callback([...fake.messages.keys()][1], "undelivered", { ErrorCode: "21610" });
    expect(await notificationOf(ctx, other)).toMatchObject({ status: "failed", route: "cloud", error_code: "21610" });
  });

  test("the workspace's default order applies to sends that name no route or device; every route unusable answers the first one's error with each listed", async () => {
    const { ctx, cloud } = await twoRoutes(0);
    expectEnvelope(await ctx.post("/v1/api/workspace/settings", { default_routes: ["phone", "cloud"] }), 200);
    ctx.clock.advance(6 * 60_000);
    const r = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: ADA, message: "x" }), 400).data;
    expect(r).toMatchObject({
      error_code: "device_offline",
      routes: [
        { route: "phone", error_code: "device_offline" },
        { route: "cloud", error_code: "insufficient_credits" },
      ],
    });
    await ctx.topUp(5);
    expect((await postSend(ctx, { recipient_contact: ADA, message: "x" })).data).toMatchObject({
      route: "cloud",
      device_id: cloud.device_id,
    });
    expect(
      expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: ADA, message: "x", routes: ["phone", "phone"] }), 400).data,
    ).toMatchObject({ error_code: "validation_error", field: "routes" });
  });
});

describe("preview", () => {
  test("says what a send then does: text, encoding, segments, route, cost, hold and refusal, storing nothing", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    const cloud = await ctx.cloudDevice(fake);
    await ctx.topUp(10);
    const body = { recipient_contact: ADA, message: "Grüße 😀 ".repeat(10), device_id: cloud.device_id };
    const preview = expectEnvelope(await ctx.post("/v1/api/sms/preview", body), 200).data;
    expect(preview).toMatchObject({
      would: "send",
      encoding: "UCS-2",
      ucs2_characters: ["😀"],
      route: "cloud",
      device_id: cloud.device_id,
      balance: 10,
      opted_out: null,
      error: null,
    });
    expect(await notificationsTo(ctx, ADA)).toEqual([]);
    const sent = (await postSend(ctx, body)).data;
    const n = await notificationOf(ctx, sent.notification_id);
    expect({ segments: n.segments, cost: n.cost, message: n.message }).toEqual({
      segments: preview.segments,
      cost: preview.cost,
      message: preview.message,
    });
    expect(preview.segments).toBeGreaterThan(1);
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(10 - preview.cost);

    expect(
      expectEnvelope(await ctx.post("/v1/api/sms/preview", { recipient_contact: BOB, message: "Plain text" }), 200).data,
    ).toMatchObject({ encoding: "GSM-7", ucs2_characters: [], segments: 1, route: "sms", cost: 0 });

    expectEnvelope(await ctx.post("/v1/api/workspace/settings", { quiet_hours: { start: "21:00", end: "08:00" } }), 200);
    const hold = expectEnvelope(await ctx.post("/v1/api/sms/preview", { recipient_contact: ADA, message: "x" }), 200).data;
    expect(hold).toMatchObject({ would: "hold", scheduled_at: "2026-01-15T13:00:00.000Z" });
    expect((await postSend(ctx, { recipient_contact: ADA, message: "x" })).data.scheduled_at).toBe(hold.scheduled_at);

    expectEnvelope(await ctx.post("/v1/api/optout/add", { phone: ADA }), 200);
    const refused = expectEnvelope(await ctx.post("/v1/api/sms/preview", { recipient_contact: ADA, message: "x" }), 200).data;
    const real = expectEnvelope(await ctx.post(SEND_PATH, { recipient_contact: ADA, message: "x" }), 403).data;
    expect(refused).toMatchObject({
      would: "refuse",
      message: "x",
      encoding: "GSM-7",
      opted_out: { source: "api" },
      error: { status_id: 403, error_code: real.error_code, opted_out_at: real.opted_out_at },
    });
    expect(expectEnvelope(await ctx.post("/v1/api/sms/preview", { message: "x" }), 400).data.error_code).toBe("validation_error");
  });
});
