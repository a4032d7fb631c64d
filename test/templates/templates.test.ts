import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";

async function create(ctx: TestContext, body: Record<string, unknown>) {
  return expectEnvelope(await ctx.post("/v1/api/template/create", body), 200).data;
}

const SQL_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("templates", () => {
  test("create returns every field of the spec", async () => {
    const ctx = await createTestContext();
    const t = await create(ctx, {
      name: "Order ready",
      body: "Hi {{name}}, order {{order_id}} is ready. Bye {{name}}",
      description: "pickup",
    });
    expect(t).toMatchObject({
      code: "ORDER_READY",
      name: "Order ready",
      description: "pickup",
      channel: "sms",
      is_system: 0,
      status: "active",
      user_id: ctx.account.id,
      variables: ["name", "order_id"],
    });
    expect(t.template_guid).toMatch(GUID);
    expect(t.created_at).toMatch(SQL_TIME);
    expect(t.created_at).toBe("2026-01-15 12:00:00");
    expect(t.updated_at).toMatch(SQL_TIME);
    expect(expectEnvelope(await ctx.get(`/v1/api/template/${t.template_id}`), 200).data).toEqual(t);
  });

  test("codes: explicit, derived, de-duplicated; an explicit duplicate is 409; lower case is 400", async () => {
    const ctx = await createTestContext();
    expect((await create(ctx, { name: "x", body: "a", code: "PROMO_1" })).code).toBe("PROMO_1");
    expect((await create(ctx, { name: "promo 1", body: "a" })).code).toBe("PROMO_1_2");
    expect(expectEnvelope(await ctx.post("/v1/api/template/create", { name: "y", body: "a", code: "PROMO_1" }), 409).data.error_code).toBe(
      "duplicate_template_code",
    );
    expect(expectEnvelope(await ctx.post("/v1/api/template/create", { name: "y", body: "a", code: "promo" }), 400).data.field).toBe("code");
  });

  test.each([
    ["{{first-name}}", "first-name"],
    ["{{first name}}", "first name"],
    ["{{}}", ""],
    ["Hi {{name", null],
    ["Hi name}}", null],
  ])("body %p breaks the variable rules: 400 invalid_template_body", async (body, variable) => {
    const ctx = await createTestContext();
    const r = expectEnvelope(await ctx.post("/v1/api/template/create", { name: "x", body }), 400);
    expect(r.data.error_code).toBe("invalid_template_body");
    if (variable !== null) expect(r.data.variable).toBe(variable);
    expect(
      (await ctx.get("/v1/api/template/list", { query: { channel: "sms" } })).body.data.templates.every(
        (t: { is_system: number }) => t.is_system === 1,
      ),
    ).toBe(true);
  });

  test("chat-app templates use {{1}}..{{n}} without gaps (rule 5)", async () => {
    const ctx = await createTestContext();
    const t = await create(ctx, { name: "confirm", channel: "chatapp", body: "Hi {{1}}, order {{2}}" });
    expect(t).toMatchObject({ channel: "chatapp", variables: ["1", "2"], language: "en_US" });
    const named = expectEnvelope(await ctx.post("/v1/api/template/create", { name: "c2", channel: "chatapp", body: "Hi {{name}}" }), 400);
    expect(named.data.error_code).toBe("invalid_template_body");
    const gap = expectEnvelope(await ctx.post("/v1/api/template/create", { name: "c3", channel: "chatapp", body: "Hi {{1}} {{3}}" }), 400);
    expect(gap.data.variable).toBe("2");
  });

  test("an SMS body over the account cap: 400 message_too_long naming the cap", async () => {
    const ctx = await createTestContext();
    await ctx.services.accounts.setSmsLengthCap(ctx.account.id, 50);
    const r = expectEnvelope(await ctx.post("/v1/api/template/create", { name: "x", body: "y".repeat(51) }), 400);
    expect(r.data).toMatchObject({ error_code: "message_too_long", cap: 50 });
    expect(r.message).toContain("50");
  });

  test("list includes system templates, filters by channel, pages", async () => {
    const ctx = await createTestContext();
    await create(ctx, { name: "s1", body: "a" });
    await create(ctx, { name: "c1", channel: "chatapp", body: "b {{1}}" });
    const all = expectEnvelope(await ctx.get("/v1/api/template/list"), 200).data;
    expect(all.pagination.total).toBe(5);
    expect(all.templates.filter((t: { is_system: number }) => t.is_system === 1).map((t: { code: string }) => t.code)).toEqual([
      "OTP",
      "APPT_REMINDER",
      "ORDER_READY",
    ]);
    const chat = (await ctx.get("/v1/api/template/list", { query: { channel: "chatapp" } })).body.data;
    expect(chat.templates.map((t: { name: string }) => t.name)).toEqual(["c1"]);
    const paged = (await ctx.get("/v1/api/template/list", { query: { page: 2, limit: 2 } })).body.data;
    expect(paged.templates).toHaveLength(2);
    expect(expectEnvelope(await ctx.get("/v1/api/template/list", { query: { channel: "fax" } }), 400).data.field).toBe("channel");
  });

  test("update re-checks the body and recomputes variables; system templates are read-only", async () => {
    const ctx = await createTestContext();
    const t = await create(ctx, { name: "x", body: "Hi {{a}}" });
    ctx.clock.advance(5000);
    const u = expectEnvelope(
      await ctx.post("/v1/api/template/update", { template_id: t.template_id, body: "Yo {{b}} {{c}}", status: "disabled" }),
      200,
    ).data;
    expect(u).toMatchObject({
      body: "Yo {{b}} {{c}}",
      variables: ["b", "c"],
      status: "disabled",
      created_at: t.created_at,
      updated_at: "2026-01-15 12:00:05",
    });
    expect(
      expectEnvelope(await ctx.post("/v1/api/template/update", { template_id: t.template_id, body: "{{bad-name}}" }), 400).data.error_code,
    ).toBe("invalid_template_body");
    const system = (await ctx.get("/v1/api/template/list")).body.data.templates.find((x: { is_system: number }) => x.is_system === 1);
    expect(
      expectEnvelope(await ctx.post("/v1/api/template/update", { template_id: system.template_id, name: "mine" }), 403).data.error_code,
    ).toBe("template_read_only");
    expect(expectEnvelope(await ctx.post("/v1/api/template/delete", { template_id: system.template_id }), 403).data.error_code).toBe(
      "template_read_only",
    );
  });

  test("delete hides the template and frees its code", async () => {
    const ctx = await createTestContext();
    const t = await create(ctx, { name: "x", body: "a", code: "ONE" });
    expect(expectEnvelope(await ctx.post("/v1/api/template/delete", { template_id: t.template_id }), 200).data).toEqual({
      template_id: t.template_id,
      deleted: true,
    });
    expect((await ctx.get(`/v1/api/template/${t.template_id}`)).status).toBe(404);
    expect((await ctx.post("/v1/api/template/delete", { template_id: t.template_id })).status).toBe(404);
    expect((await create(ctx, { name: "y", body: "b", code: "ONE" })).code).toBe("ONE");
  });

  test("POST /notification/template/api/get: data is the array, page 1 and limit 10 by default, max 100", async () => {
    const ctx = await createTestContext();
    for (let i = 0; i < 12; i++) await create(ctx, { name: `t${i}`, body: "x" });
    const r = await ctx.post("/v1/notification/template/api/get", {});
    const body = expectEnvelope(r, 200);
    expect(Array.isArray(body.data)).toBe(true);
    expect(body.data).toHaveLength(10);
    expect(body.message.toLowerCase()).toContain("templates");
    expect(r.headers.get("x-total-count")).toBe("15");
    const page2 = (await ctx.post("/v1/notification/template/api/get", { page: 2, limit: 10 })).body.data;
    expect(page2).toHaveLength(5);
    expect(expectEnvelope(await ctx.post("/v1/notification/template/api/get", { limit: 101 }), 400).data.field).toBe("limit");
    expect(expectEnvelope(await ctx.post("/v1/notification/template/api/get", { page: "first" }), 400).data.field).toBe("page");
  });
});

test("every template, system ones included, has the spec's fields with their types", async () => {
  const ctx = await createTestContext();
  await ctx.post("/v1/api/template/create", { name: "mine", body: "Hi {{name}}" });
  const templates = expectEnvelope(await ctx.get("/v1/api/template/list"), 200).data.templates;
  expect(templates.length).toBe(4);
  for (const t of templates) {
    expect(typeof t.template_id).toBe("number");
    expect(t.template_guid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number.isInteger(t.user_id)).toBe(true);
    expect(t.code).toMatch(/^[A-Z][A-Z0-9_]*$/);
    for (const field of ["name", "description", "body", "channel", "status", "created_at", "updated_at"])
      expect(typeof t[field]).toBe("string");
    expect([0, 1]).toContain(t.is_system);
  }
  expect(
    templates.filter((t: { is_system: number; user_id: number }) => t.is_system === 1).every((t: { user_id: number }) => t.user_id === 0),
  ).toBe(true);
});
