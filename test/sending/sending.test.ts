// The send endpoints: validation with the spec's errors, templates, devices, plans and credits.
import { describe, expect, test } from "bun:test";
import { notificationOf, postSend } from "../helpers/api";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { RECIPIENT } from "../helpers/numbers";

const send = postSend;

describe("POST /notification/sms/api/send", () => {
  test("accepts a message: 200, a message saying it was scheduled, the four data fields and scheduled_for", async () => {
    const ctx = await createTestContext();
    const phone = await ctx.phone();
    const body = await send(ctx, { recipient_contact: RECIPIENT, message: "Hello there", recipient_name: "Ada" });
    expect(body.message.toLowerCase()).toContain("scheduled");
    expect(Object.keys(body.data).sort()).toEqual(["message", "notification_id", "scheduled_for", "template_id", "template_vars"]);
    expect(body.data).toMatchObject({ template_id: null, template_vars: null, message: "Hello there", scheduled_for: null });
    const n = await notificationOf(ctx, body.data.notification_id);
    expect(n).toMatchObject({
      status: "pending",
      delivery_type: "sms",
      route: "sms",
      device_id: phone.device_id,
      recipient: RECIPIENT,
      recipient_name: "Ada",
      cost: 0,
    });
    expect(n.logs).toEqual([
      { at: n.created_at, event: "accepted", status: "pending", error_code: null, detail: `queued for device ${phone.device_id} (sms)` },
    ]);
    // That line is made from the notification's row when read: the send stored no log row.
    expect(await ctx.sql.all("SELECT event FROM notification_log WHERE notification_id = ?", [n.notification_id])).toEqual([]);
  });

  test("normalises the recipient to E.164", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const body = await send(ctx, { recipient_contact: "+1 (415) 555-2671", message: "x" });
    expect((await notificationOf(ctx, body.data.notification_id)).recipient).toBe(RECIPIENT);
  });

  test.each(["4155552671", "+1", "hello", "+1415555267", ""])("recipient %p: 400 with 'Invalid phone number'", async (to) => {
    const ctx = await createTestContext();
    await ctx.phone();
    const body = await send(ctx, { recipient_contact: to, message: "x" }, 400);
    expect(body.data.error_code).toBe("invalid_phone_number");
    expect(body.message).toContain("Invalid phone number");
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(0);
  });

  test("longer than the cap: 400 message_too_long naming the cap; the cap is the account's", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "a".repeat(1600) })).data.message).toHaveLength(1600);
    const body = await send(ctx, { recipient_contact: RECIPIENT, message: "a".repeat(1601) }, 400);
    expect(body.data).toMatchObject({ error_code: "message_too_long", cap: 1600, length: 1601 });
    expect(body.message).toContain("1600");
    await ctx.services.accounts.setSmsLengthCap(ctx.account.id, 100);
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "a".repeat(101) }, 400)).message).toContain("100");
  });

  test("no message and no template: 400 message_required", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    expect((await send(ctx, { recipient_contact: RECIPIENT }, 400)).data.error_code).toBe("message_required");
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "  " }, 400)).data.error_code).toBe("message_required");
  });

  test.each([
    [{ message: "x" }, "recipient_contact"],
    [{ recipient_contact: 14155552671, message: "x" }, "recipient_contact"],
    [{ recipient_contact: RECIPIENT, message: 5 }, "message"],
    [{ recipient_contact: RECIPIENT, message: "x", schedule_time: 20260101 }, "schedule_time"],
  ])("wrong types %o: 400 validation_error naming %s", async (body, field) => {
    const ctx = await createTestContext();
    await ctx.phone();
    expect((await send(ctx, body, 400)).data).toMatchObject({ error_code: "validation_error", field });
  });
});

describe("templates in sends", () => {
  test("renders the final text from template_id and variables", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const tpl = expectEnvelope(
      await ctx.post("/v1/api/template/create", { name: "greet", body: "Hi {{name}}, order {{order_id}} ready. Bye {{name}}!" }),
      200,
    ).data;
    const body = await send(ctx, {
      recipient_contact: RECIPIENT,
      template_id: String(tpl.template_id),
      variables: { name: "Ada", order_id: 42 },
    });
    expect(body.data).toEqual({
      notification_id: body.data.notification_id,
      template_id: tpl.template_id,
      template_vars: { name: "Ada", order_id: "42" },
      message: "Hi Ada, order 42 ready. Bye Ada!",
      scheduled_for: null,
    });
    const n = await notificationOf(ctx, body.data.notification_id);
    expect(n).toMatchObject({
      template_id: tpl.template_id,
      template_vars: { name: "Ada", order_id: "42" },
      message: "Hi Ada, order 42 ready. Bye Ada!",
    });
  });

  test("a system template by its code", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const body = await send(ctx, { recipient_contact: RECIPIENT, template_id: "OTP", variables: { code: "123456", minutes: 5 } });
    expect(body.data.message).toBe("Your verification code is 123456. It expires in 5 minutes.");
  });

  test("missing and misnamed variables: 400 naming them; nothing stored", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const missing = await send(ctx, { recipient_contact: RECIPIENT, template_id: "OTP", variables: { code: "1" } }, 400);
    expect(missing.data).toMatchObject({ error_code: "invalid_template_variables", missing: ["minutes"] });
    expect(missing.message).toContain("'minutes'");
    const misnamed = await send(ctx, { recipient_contact: RECIPIENT, template_id: "OTP", variables: { Code: "1", minutes: "5" } }, 400);
    expect(misnamed.data).toMatchObject({ missing: ["code"], unknown: ["Code"] });
    expect(misnamed.message).toContain("'Code'");
    expect((await send(ctx, { recipient_contact: RECIPIENT, template_id: "OTP" }, 400)).data.missing).toEqual(["code", "minutes"]);
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(0);
  });

  test("unknown template: 404; disabled template: 400 template_inactive; chat-app template over SMS: 400", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    expect((await send(ctx, { recipient_contact: RECIPIENT, template_id: "999" }, 404)).data.error_code).toBe("not_found");
    const tpl = (await ctx.post("/v1/api/template/create", { name: "t", body: "x" })).body.data;
    await ctx.post("/v1/api/template/update", { template_id: tpl.template_id, status: "disabled" });
    expect((await send(ctx, { recipient_contact: RECIPIENT, template_id: tpl.template_id }, 400)).data.error_code).toBe(
      "template_inactive",
    );
    const chat = (await ctx.post("/v1/api/template/create", { name: "c", channel: "chatapp", body: "x {{1}}" })).body.data;
    expect((await send(ctx, { recipient_contact: RECIPIENT, template_id: chat.template_id, variables: ["a"] }, 400)).data.field).toBe(
      "template_id",
    );
  });

  test("the rendered text must fit the cap too", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await ctx.services.accounts.setSmsLengthCap(ctx.account.id, 60);
    const body = await send(
      ctx,
      { recipient_contact: RECIPIENT, template_id: "OTP", variables: { code: "x".repeat(40), minutes: 5 } },
      400,
    );
    expect(body.data.error_code).toBe("message_too_long");
  });
});

describe("scheduling", () => {
  test("schedule_time in a timezone is stored as UTC and waits", async () => {
    const ctx = await createTestContext();
    const phone = await ctx.phone();
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 0));
    const body = await send(ctx, {
      recipient_contact: RECIPIENT,
      message: "x",
      schedule_time: "2026-01-16 09:30:00",
      timezone: "Europe/Berlin",
    });
    const n = await notificationOf(ctx, body.data.notification_id);
    expect(n).toMatchObject({ status: "pending", schedule_time: "2026-01-16T08:30:00.000Z", timezone: "Europe/Berlin" });
    expect(n.logs).toEqual([
      {
        at: n.created_at,
        event: "scheduled",
        status: "pending",
        error_code: null,
        detail: `scheduled for 2026-01-16T08:30:00.000Z (Europe/Berlin) via device ${phone.device_id}`,
      },
    ]);
  });

  test("default timezone is UTC", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const body = await send(ctx, { recipient_contact: RECIPIENT, message: "x", schedule_time: "2026-02-01 00:00:00" });
    expect((await notificationOf(ctx, body.data.notification_id)).schedule_time).toBe("2026-02-01T00:00:00.000Z");
  });

  test("across DST: a skipped local time is 400, a repeated one means its first occurrence", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    ctx.clock.set(Date.UTC(2026, 2, 1));
    const gap = await send(
      ctx,
      { recipient_contact: RECIPIENT, message: "x", schedule_time: "2026-03-08 02:30:00", timezone: "America/New_York" },
      400,
    );
    expect(gap.data.error_code).toBe("invalid_schedule_time");
    const summer = await send(ctx, {
      recipient_contact: RECIPIENT,
      message: "x",
      schedule_time: "2026-03-08 03:30:00",
      timezone: "America/New_York",
    });
    expect((await notificationOf(ctx, summer.data.notification_id)).schedule_time).toBe("2026-03-08T07:30:00.000Z");
    const winter = await send(ctx, {
      recipient_contact: RECIPIENT,
      message: "x",
      schedule_time: "2026-03-08 01:30:00",
      timezone: "America/New_York",
    });
    expect((await notificationOf(ctx, winter.data.notification_id)).schedule_time).toBe("2026-03-08T06:30:00.000Z");
    ctx.clock.set(Date.UTC(2026, 9, 1));
    const repeated = await send(ctx, {
      recipient_contact: RECIPIENT,
      message: "x",
      schedule_time: "2026-11-01 01:30:00",
      timezone: "America/New_York",
    });
    expect((await notificationOf(ctx, repeated.data.notification_id)).schedule_time).toBe("2026-11-01T05:30:00.000Z");
  });

  test.each([
    [{ schedule_time: "2026-01-16T09:30:00" }, "invalid_schedule_time"],
    [{ schedule_time: "2026-01-16 9:30" }, "invalid_schedule_time"],
    [{ schedule_time: "2026-02-30 10:00:00" }, "invalid_schedule_time"],
    [{ schedule_time: "2026-01-16 25:00:00" }, "invalid_schedule_time"],
    [{ schedule_time: "2026-01-16 09:30:00", timezone: "Mars/Base" }, "invalid_timezone"],
    [{ timezone: "Not/AZone" }, "invalid_timezone"],
    [{ schedule_time: "2026-01-15 11:59:00" }, "schedule_time_in_past"],
    [{ schedule_time: "2026-01-15 13:00:00", timezone: "Asia/Tokyo" }, "schedule_time_in_past"],
  ])("%o: 400 %s", async (extra, code) => {
    const ctx = await createTestContext();
    await ctx.phone();
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 0));
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "x", ...extra }, 400)).data.error_code).toBe(code);
  });

  test("a schedule_time of this very second sends now", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    ctx.clock.set(Date.UTC(2026, 0, 15, 12, 0, 0, 500));
    const body = await send(ctx, { recipient_contact: RECIPIENT, message: "x", schedule_time: "2026-01-15 12:00:00" });
    expect((await notificationOf(ctx, body.data.notification_id)).schedule_time).toBeNull();
  });
});

describe("devices in sends", () => {
  test("device_id picks the device; unknown or another workspace's: 404", async () => {
    const ctx = await createTestContext();
    await ctx.phone("A");
    const b = await ctx.phone("B");
    const body = await send(ctx, { recipient_contact: RECIPIENT, message: "x", device_id: String(b.device_id) });
    expect((await notificationOf(ctx, body.data.notification_id)).device_id).toBe(b.device_id);
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "x", device_id: "999" }, 404)).data.error_code).toBe("not_found");
    const other = await ctx.otherWorkspace();
    const theirs = await ctx.phone("theirs", other.key);
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "x", device_id: theirs.device_id }, 404)).data.error_code).toBe(
      "not_found",
    );
  });

  test("an inactive device: 400 device_inactive; no active device: 400 no_active_device", async () => {
    const ctx = await createTestContext();
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "x" }, 400)).data.error_code).toBe("no_active_device");
    const p = await ctx.phone();
    await ctx.post("/v1/api/device/batch/update-status", { device_ids: [p.device_id], status: "inactive" });
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "x", device_id: p.device_id }, 400)).data.error_code).toBe(
      "device_inactive",
    );
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "x" }, 400)).data.error_code).toBe("no_active_device");
  });

  test("a phone silent for more than 5 minutes: 400 device_offline; a scheduled send waits for it", async () => {
    const ctx = await createTestContext();
    const p = await ctx.phone();
    ctx.clock.advance(5 * 60_000);
    await send(ctx, { recipient_contact: RECIPIENT, message: "still online at exactly 5 minutes" });
    ctx.clock.advance(1000);
    const body = await send(ctx, { recipient_contact: RECIPIENT, message: "x" }, 400);
    expect(body.data).toMatchObject({ error_code: "device_offline", device_id: p.device_id });
    expect(body.message.toLowerCase()).toContain("offline");
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "x", device_id: p.device_id }, 400)).data.error_code).toBe(
      "device_offline",
    );
    await send(ctx, { recipient_contact: RECIPIENT, message: "later", schedule_time: "2026-01-16 08:00:00" });
  });

  test("the default is the first active device that can carry it now", async () => {
    const ctx = await createTestContext();
    const a = await ctx.phone("A");
    const b = await ctx.phone("B");
    ctx.clock.advance(10 * 60_000);
    await ctx.sql.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [ctx.clock.now(), b.device_id]);
    const body = await send(ctx, { recipient_contact: RECIPIENT, message: "x" });
    expect((await notificationOf(ctx, body.data.notification_id)).device_id).toBe(b.device_id);
    await ctx.sql.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [ctx.clock.now(), a.device_id]);
    const again = await send(ctx, { recipient_contact: RECIPIENT, message: "x" });
    expect((await notificationOf(ctx, again.data.notification_id)).device_id).toBe(a.device_id);
  });
});

describe("plans", () => {
  test("a plan without URLs: 403 urls_not_allowed; the owner plan allows them", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await send(ctx, { recipient_contact: RECIPIENT, message: "See https://example.com/x" });
    await ctx.services.accounts.setAccountPlan(ctx.account.id, "free");
    for (const text of ["See https://example.com/x", "go to www.example.org", "visit bit.ly/abc now"]) {
      const body = await send(ctx, { recipient_contact: RECIPIENT, message: text }, 403);
      expect(body.data.error_code).toBe("urls_not_allowed");
    }
    await send(ctx, { recipient_contact: RECIPIENT, message: "No links, just 3.5 stars." });
  });

  test("the free tier: 10 SMS a month with full API access, then 402 free_tier_exhausted until next month", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await ctx.services.accounts.setAccountPlan(ctx.account.id, "free");
    ctx.clock.set(Date.UTC(2026, 0, 20));
    await ctx.sql.run("UPDATE device SET last_seen_at = ?", [ctx.clock.now()]);
    for (let i = 0; i < 10; i++) await send(ctx, { recipient_contact: RECIPIENT, message: `m${i}` });
    const body = await send(ctx, { recipient_contact: RECIPIENT, message: "eleventh" }, 402);
    expect(body.data).toMatchObject({ error_code: "free_tier_exhausted", limit: 10, used: 10 });
    expect((await ctx.get("/v1/api/contact/list")).status).toBe(200);
    ctx.clock.set(Date.UTC(2026, 1, 1, 0, 0, 1));
    await ctx.sql.run("UPDATE device SET last_seen_at = ?", [ctx.clock.now()]);
    await send(ctx, { recipient_contact: RECIPIENT, message: "new month" });
  });

  test("failed and cancelled SMS do not count toward the free tier", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await ctx.services.accounts.upsertPlan({ code: "tiny", name: "Tiny", monthlySmsLimit: 1 });
    await ctx.services.accounts.setAccountPlan(ctx.account.id, "tiny");
    const first = await send(ctx, { recipient_contact: RECIPIENT, message: "a" });
    await send(ctx, { recipient_contact: RECIPIENT, message: "b" }, 402);
    await ctx.post("/v1/api/notification/cancel", { notification_id: first.data.notification_id });
    await send(ctx, { recipient_contact: RECIPIENT, message: "c" });
  });
});

describe("credits", () => {
  const fake = { url: "http://127.0.0.1:9", accountSid: "AC1", authToken: "t" };

  test("a cloud number needs credits: 402 insufficient_credits at zero, one credit per segment", async () => {
    const ctx = await createTestContext();
    await ctx.cloudDevice(fake);
    const none = await send(ctx, { recipient_contact: RECIPIENT, message: "x" }, 402);
    expect(none.data).toMatchObject({ error_code: "insufficient_credits", balance: 0, required: 1 });
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(0);

    await ctx.topUp(5);
    const one = await send(ctx, { recipient_contact: RECIPIENT, message: "a".repeat(160) });
    expect(await notificationOf(ctx, one.data.notification_id)).toMatchObject({ segments: 1, cost: 1, route: "cloud" });
    const two = await send(ctx, { recipient_contact: RECIPIENT, message: "a".repeat(161) });
    expect((await notificationOf(ctx, two.data.notification_id)).cost).toBe(2);
    expect((await send(ctx, { recipient_contact: RECIPIENT, message: "ü✓".repeat(70) }, 402)).data).toMatchObject({
      balance: 2,
      required: 3,
    });
    const ucs = await send(ctx, { recipient_contact: RECIPIENT, message: "✓".repeat(70) });
    expect((await notificationOf(ctx, ucs.data.notification_id)).cost).toBe(1);
    const credits = expectEnvelope(await ctx.get("/v1/api/stats/credits"), 200).data;
    expect(credits).toEqual({ balance: 1, used_this_month: 4 });
  });

  type BulkItem = { notification_id?: number; error?: { error_code: string; balance?: number; required?: number } };

  // A bulk request reads the balance once and decides item by item (on PostgreSQL its writes are a
  // statement each for all items): what an item is refused must not be spent, and the ledger
  // names each paid notification.
  test("a bulk request pays item by item: a refused item costs nothing and a later cheaper one still goes", async () => {
    const ctx = await createTestContext();
    await ctx.cloudDevice(fake);
    await ctx.topUp(3);
    const messages = ["a", "b".repeat(161), "c".repeat(161), "d", "e"].map((message) => ({ recipient_contact: RECIPIENT, message }));
    const results = expectEnvelope(await ctx.post("/v1/api/sms/send/bulk", { messages }), 200).data.results as BulkItem[];
    // 1 (balance 2), 2 (balance 0), then nothing is covered.
    expect(results.map((r) => r.error?.error_code ?? "ok")).toEqual([
      "ok",
      "ok",
      "insufficient_credits",
      "insufficient_credits",
      "insufficient_credits",
    ]);
    const paid = results.slice(0, 2).map((r) => r.notification_id!);
    for (const [i, id] of paid.entries()) expect((await notificationOf(ctx, id)).message).toBe(messages[i].message);
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(0);
    const ledger = (await ctx.services.credits.ledger(ctx.workspace.id)).entries;
    expect(ledger.filter((e) => e.reason === "debit").map((e) => [e.notificationId, e.delta])).toEqual([
      [paid[1], -2],
      [paid[0], -1],
    ]);

    await ctx.topUp(2);
    const second = expectEnvelope(
      await ctx.post("/v1/api/sms/send/bulk", {
        messages: ["f", "g".repeat(161), "h"].map((message) => ({ recipient_contact: RECIPIENT, message })),
      }),
      200,
    ).data.results as BulkItem[];
    // 1 (balance 1); 2 is refused, saying the balance is 1; 1 more still fits.
    expect(second.map((r) => r.error?.error_code ?? "ok")).toEqual(["ok", "insufficient_credits", "ok"]);
    expect(second[1].error).toMatchObject({ balance: 1, required: 2 });
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(0);
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(4);
  });

  // On PostgreSQL a keyed send first claims its key (a row pointing at the workspace: a foreign-key
  // check's KEY SHARE lock on the workspace row), then holds the balance on that same row. With FOR
  // UPDATE as that hold, two such sends waited on each other: deadlocks, 500s and a unit stuck for
  // a minute. Each send here must simply be paid once.
  test("keyed sends to a paid number racing in one workspace are all accepted and each paid once", async () => {
    const ctx = await createTestContext();
    await ctx.cloudDevice(fake);
    await ctx.topUp(1000);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        ctx.post(
          "/v1/api/sms/send",
          { recipient_contact: RECIPIENT, message: `keyed ${i}` },
          { headers: { "idempotency-key": `race-${i}` } },
        ),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(960);
  });

  test("phone SMS cost nothing", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await send(ctx, { recipient_contact: RECIPIENT, message: "x" });
    expect((await ctx.get("/v1/api/stats/credits")).body.data).toEqual({ balance: 0, used_this_month: 0 });
  });

  test("cancel refunds", async () => {
    const ctx = await createTestContext();
    await ctx.cloudDevice(fake);
    await ctx.topUp(1);
    const body = await send(ctx, { recipient_contact: RECIPIENT, message: "x" });
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(0);
    await ctx.post("/v1/api/notification/cancel", { notification_id: body.data.notification_id });
    expect((await ctx.get("/v1/api/stats/credits")).body.data).toEqual({ balance: 1, used_this_month: 0 });
  });
});
