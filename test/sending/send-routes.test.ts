// The other send routes (short form, bulk, overview) and Idempotency-Key.
import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { RECIPIENT, ABROAD } from "../helpers/numbers";

describe("POST /api/sms/send", () => {
  test("takes the smaller body and answers like the full send", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const body = expectEnvelope(
      await ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, template_id: "OTP", variables: { code: "9", minutes: 1 } }),
      200,
    );
    expect(body.data).toMatchObject({ template_id: expect.any(Number), message: "Your verification code is 9. It expires in 1 minutes." });
    expect(expectEnvelope(await ctx.post("/v1/api/sms/send", { recipient_contact: "555", message: "x" }), 400).message).toContain(
      "Invalid phone number",
    );
  });
});

describe("POST /api/sms/send/bulk", () => {
  test("stores the valid items even when others fail, and lists each item's result in order", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const r = await ctx.post("/v1/api/sms/send/bulk", {
      messages: [
        { recipient_contact: RECIPIENT, message: "one" },
        { recipient_contact: "bad", message: "two" },
        { recipient_contact: RECIPIENT, template_id: "OTP", variables: { code: "1" } },
        { recipient_contact: RECIPIENT, message: 42 },
        { recipient_contact: RECIPIENT, message: "typo", schedule_tme: "2026-01-16 09:00:00" },
        { recipient_contact: ABROAD, template_id: "OTP", variables: { code: "7", minutes: 2 } },
      ],
    });
    const data = expectEnvelope(r, 200).data;
    expect(data).toMatchObject({ total: 6, accepted: 2, failed: 4 });
    expect(data.results.map((x: { ok: boolean }) => x.ok)).toEqual([true, false, false, false, false, true]);
    expect(data.results[0]).toMatchObject({ index: 0, message: "one", template_id: null });
    expect(data.results[1].error).toMatchObject({ status_id: 400, error_code: "invalid_phone_number" });
    expect(data.results[2].error).toMatchObject({ error_code: "invalid_template_variables", missing: ["minutes"] });
    expect(data.results[3].error).toMatchObject({ error_code: "validation_error", field: "message" });
    expect(data.results[4].error).toMatchObject({ error_code: "validation_error", field: "schedule_tme", reason: "is not a known field" });
    expect(data.results[5].message).toBe("Your verification code is 7. It expires in 2 minutes.");
    const list = (await ctx.get("/v1/api/notification/list")).body.data;
    expect(list.pagination.total).toBe(2);
    expect(list.notifications.map((n: { notification_id: number }) => n.notification_id).sort()).toEqual(
      [data.results[0].notification_id, data.results[5].notification_id].sort(),
    );
  });

  test("plan and credit limits apply item by item", async () => {
    const ctx = await createTestContext();
    await ctx.cloudDevice({ url: "http://127.0.0.1:9", accountSid: "AC1", authToken: "t" });
    await ctx.topUp(2);
    const data = expectEnvelope(
      await ctx.post("/v1/api/sms/send/bulk", { messages: [1, 2, 3].map((i) => ({ recipient_contact: RECIPIENT, message: `m${i}` })) }),
      200,
    ).data;
    expect(data.results.map((x: { ok: boolean }) => x.ok)).toEqual([true, true, false]);
    expect(data.results[2].error).toMatchObject({ status_id: 402, error_code: "insufficient_credits" });
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(0);
  });

  test("over 100 messages or an empty list: 400, nothing stored", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const many = Array.from({ length: 101 }, () => ({ recipient_contact: RECIPIENT, message: "x" }));
    const body = expectEnvelope(await ctx.post("/v1/api/sms/send/bulk", { messages: many }), 400);
    expect(body.data.field).toBe("messages");
    expect(body.message).toContain("100");
    expect(expectEnvelope(await ctx.post("/v1/api/sms/send/bulk", { messages: [] }), 400).data.field).toBe("messages");
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(0);
  });
});

describe("overview routes", () => {
  test("POST /sms/send answers success and messageId; GET /messages/:id reports its status", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const r = await ctx.post("/v1/sms/send", { to: RECIPIENT, message: "hi" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status_id: 200, success: true, data: { success: true } });
    expect(r.body.messageId).toBe(r.body.data.messageId);
    const status = expectEnvelope(await ctx.get(`/v1/messages/${r.body.messageId}`), 200).data;
    expect(status).toMatchObject({ messageId: r.body.messageId, status: "pending", to: RECIPIENT, message: "hi", channel: "sms" });
    expect(expectEnvelope(await ctx.post("/v1/sms/send", { to: "nope", message: "hi" }), 400).message).toContain("Invalid phone number");
    expect((await ctx.get("/v1/messages/99999")).status).toBe(404);
  });

  test("contacts and templates aliases", async () => {
    const ctx = await createTestContext();
    const created = expectEnvelope(await ctx.post("/v1/contacts", { name: "Ada", phone: RECIPIENT }), 200).data;
    expect(expectEnvelope(await ctx.get("/v1/contacts"), 200).data.contacts).toHaveLength(1);
    const updated = expectEnvelope(await ctx.call("PUT", `/v1/contacts/${created.contact_id}`, { body: { name: "Ada L." } }), 200).data;
    expect(updated.name).toBe("Ada L.");
    expect(
      expectEnvelope(await ctx.call("PUT", `/v1/contacts/${created.contact_id}`, { body: { phone: "12" } }), 400).data.error_code,
    ).toBe("invalid_phone_number");
    expect(expectEnvelope(await ctx.call("DELETE", `/v1/contacts/${created.contact_id}`), 200).data.deleted).toBe(true);
    expect((await ctx.call("DELETE", `/v1/contacts/${created.contact_id}`)).status).toBe(404);
    expect(expectEnvelope(await ctx.get("/v1/templates"), 200).data.templates.length).toBeGreaterThan(0);
  });
});

describe("Idempotency-Key", () => {
  test("a repeat with the same key and body returns the first reply and creates nothing", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const headers = { "idempotency-key": "order-1001" };
    const first = await ctx.call("POST", "/v1/notification/sms/api/send", {
      body: { recipient_contact: RECIPIENT, message: "once" },
      headers,
    });
    const again = await ctx.call("POST", "/v1/notification/sms/api/send", {
      body: { message: "once", recipient_contact: RECIPIENT },
      headers,
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(1);
  });

  test("the same key with another body is 409 and creates nothing", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const headers = { "idempotency-key": "k1" };
    await ctx.call("POST", "/v1/api/sms/send", { body: { recipient_contact: RECIPIENT, message: "a" }, headers });
    const clash = await ctx.call("POST", "/v1/api/sms/send", { body: { recipient_contact: RECIPIENT, message: "b" }, headers });
    expect(expectEnvelope(clash, 409).data.error_code).toBe("idempotency_key_reuse");
    const otherRoute = await ctx.call("POST", "/v1/sms/send", { body: { to: RECIPIENT, message: "a" }, headers });
    expect(otherRoute.status).toBe(409);
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(1);
  });

  test("keys are per workspace, last 24 hours, and a failed request can be retried with its key", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const headers = { "idempotency-key": "retry-me" };
    const failed = await ctx.call("POST", "/v1/api/sms/send", { body: { recipient_contact: "bad", message: "a" }, headers });
    expect(failed.status).toBe(400);
    const fixed = await ctx.call("POST", "/v1/api/sms/send", { body: { recipient_contact: "bad", message: "a" }, headers });
    expect(fixed.status).toBe(400);
    const ok1 = await ctx.call("POST", "/v1/api/sms/send", { body: { recipient_contact: RECIPIENT, message: "a" }, headers });
    expect(ok1.status).toBe(200);

    const other = await ctx.otherWorkspace();
    await ctx.phone("theirs", other.key);
    const theirs = await ctx.call("POST", "/v1/api/sms/send", {
      body: { recipient_contact: RECIPIENT, message: "a" },
      headers,
      key: other.key,
    });
    expect(theirs.body.data.notification_id).not.toBe(ok1.body.data.notification_id);

    ctx.clock.advance(24 * 3600_000 + 1000);
    await ctx.sql.run("UPDATE device SET last_seen_at = ?", [ctx.clock.now()]);
    const later = await ctx.call("POST", "/v1/api/sms/send", { body: { recipient_contact: RECIPIENT, message: "a" }, headers });
    expect(later.body.data.notification_id).not.toBe(ok1.body.data.notification_id);
    expect(await ctx.services.idempotency.prune()).toBeGreaterThanOrEqual(0);
  });

  test("bulk replies replay too", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const headers = { "idempotency-key": "bulk-1" };
    const body = {
      messages: [
        { recipient_contact: RECIPIENT, message: "a" },
        { recipient_contact: "x", message: "b" },
      ],
    };
    const first = await ctx.call("POST", "/v1/api/sms/send/bulk", { body, headers });
    const again = await ctx.call("POST", "/v1/api/sms/send/bulk", { body, headers });
    expect(again.body).toEqual(first.body);
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(1);
  });

  test("prune forgets keys older than 24 hours", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await ctx.call("POST", "/v1/api/sms/send", {
      body: { recipient_contact: RECIPIENT, message: "a" },
      headers: { "idempotency-key": "old" },
    });
    expect(await ctx.services.idempotency.prune()).toBe(0);
    ctx.clock.advance(24 * 3600_000 + 1);
    expect(await ctx.services.idempotency.prune()).toBe(1);
  });
});

describe("concurrent sends", () => {
  test("ten at once with one Idempotency-Key store one notification, and all get the same reply", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    const replies = await Promise.all(
      Array.from({ length: 10 }, () =>
        ctx.call("POST", "/v1/api/sms/send", {
          body: { recipient_contact: RECIPIENT, message: "race" },
          headers: { "idempotency-key": "race-1" },
        }),
      ),
    );
    expect(replies.every((r) => r.status === 200)).toBe(true);
    expect(new Set(replies.map((r) => r.body.data.notification_id)).size).toBe(1);
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(1);
  });

  test("credits are never overspent by concurrent sends", async () => {
    const ctx = await createTestContext();
    await ctx.cloudDevice({ url: "http://127.0.0.1:9", accountSid: "AC1", authToken: "t" });
    await ctx.topUp(5);
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) => ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, message: `m${i}` })),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(5);
    expect(replies.filter((r) => r.status === 402).every((r) => r.body.data.error_code === "insufficient_credits")).toBe(true);
    expect(await ctx.services.credits.balance(ctx.workspace.id)).toBe(0);
    expect((await ctx.get("/v1/api/notification/list")).body.data.pagination.total).toBe(5);
  });

  test("the free tier is never exceeded by concurrent sends", async () => {
    const ctx = await createTestContext();
    await ctx.phone();
    await ctx.services.accounts.setAccountPlan(ctx.account.id, "free");
    const replies = await Promise.all(
      Array.from({ length: 15 }, (_, i) => ctx.post("/v1/api/sms/send", { recipient_contact: RECIPIENT, message: `m${i}` })),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
    expect(replies.filter((r) => r.status === 402)).toHaveLength(5);
  });
});
