import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";

async function create(ctx: TestContext, body: Record<string, unknown>) {
  return expectEnvelope(await ctx.post("/v1/api/contact/create", body), 200).data;
}

describe("contacts", () => {
  test("create normalises the phone to E.164 and returns the contact", async () => {
    const ctx = await createTestContext();
    const c = await create(ctx, { name: "  Ada Lovelace ", phone: "+44 7911 123456", email: "ada@example.com", type: "customer" });
    expect(c).toMatchObject({ name: "Ada Lovelace", phone: "+447911123456", email: "ada@example.com", type: "customer" });
    expect(c.contact_id).toBeGreaterThan(0);
    const got = expectEnvelope(await ctx.get(`/v1/api/contact/${c.contact_id}`), 200).data;
    expect(got).toEqual(c);
  });

  test.each(["4155552671", "+1", "not a phone", "+1 415 555 267", "0044 7911 123456"])(
    "phone %p: 400 Invalid phone number",
    async (phone) => {
      const ctx = await createTestContext();
      const body = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "X", phone }), 400);
      expect(body.data.error_code).toBe("invalid_phone_number");
      expect(body.message).toContain("Invalid phone number");
      expect((await ctx.get("/v1/api/contact/list")).body.data.pagination.total).toBe(0);
    },
  );

  test.each([
    [{ phone: "+14155552671" }, "name"],
    [{ name: "X" }, "phone"],
    [{ name: "", phone: "+14155552671" }, "name"],
    [{ name: "   ", phone: "+14155552671" }, "name"],
    [{ name: "X", phone: 14155552671 }, "phone"],
  ])("missing or bad field %o: 400 naming %s", async (body, field) => {
    const ctx = await createTestContext();
    const r = expectEnvelope(await ctx.post("/v1/api/contact/create", body), 400);
    expect(r.data).toMatchObject({ error_code: "validation_error", field });
  });

  test("invalid email: 400 invalid_email", async () => {
    const ctx = await createTestContext();
    const r = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "X", phone: "+14155552671", email: "nope@" }), 400);
    expect(r.data.error_code).toBe("invalid_email");
  });

  test("unknown type: 400 listing the known ones", async () => {
    const ctx = await createTestContext();
    const r = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "X", phone: "+14155552671", type: "alien" }), 400);
    expect(r.data.field).toBe("type");
    expect(r.message).toContain("customer");
  });

  test("a duplicate phone in the workspace is 409; another workspace may have it", async () => {
    const ctx = await createTestContext();
    const first = await create(ctx, { name: "A", phone: "+14155552671" });
    const r = expectEnvelope(await ctx.post("/v1/api/contact/create", { name: "B", phone: "+1 415-555-2671" }), 409);
    expect(r.data).toEqual({ error_code: "duplicate_contact", contact_id: first.contact_id });
    const other = await ctx.otherWorkspace();
    expect((await ctx.post("/v1/api/contact/create", { name: "B", phone: "+14155552671" }, { key: other.key })).status).toBe(200);
  });

  test("list pages, 20 by default, at most 100", async () => {
    const ctx = await createTestContext();
    for (let i = 0; i < 25; i++) await create(ctx, { name: `C${i}`, phone: `+1415555${String(1000 + i)}` });
    const first = expectEnvelope(await ctx.get("/v1/api/contact/list"), 200).data;
    expect(first.contacts).toHaveLength(20);
    expect(first.pagination).toEqual({ page: 1, limit: 20, total: 25 });
    const second = (await ctx.get("/v1/api/contact/list", { query: { page: 2 } })).body.data;
    expect(second.contacts.map((c: { name: string }) => c.name)).toEqual(["C20", "C21", "C22", "C23", "C24"]);
    expect(expectEnvelope(await ctx.get("/v1/api/contact/list", { query: { limit: 101 } }), 400).data.field).toBe("limit");
  });

  test("types lists the contact types", async () => {
    const ctx = await createTestContext();
    const types = expectEnvelope(await ctx.get("/v1/api/contact/types"), 200).data.types;
    expect(types.map((t: { code: string }) => t.code)).toEqual(["customer", "lead", "supplier", "staff", "other"]);
    expect(types[0]).toHaveProperty("type_id");
  });

  test("search matches name, phone or email, case-insensitively", async () => {
    const ctx = await createTestContext();
    await create(ctx, { name: "Ada Lovelace", phone: "+14155552671", email: "ada@analytical.org" });
    await create(ctx, { name: "Charles Babbage", phone: "+447911123456", email: "cb@engine.co.uk" });
    await create(ctx, { name: "Grace 100% Hopper", phone: "+33612345678" });
    const names = async (query: string) =>
      expectEnvelope(await ctx.post("/v1/api/contact/search", { query }), 200).data.contacts.map((c: { name: string }) => c.name);
    expect(await names("ADA")).toEqual(["Ada Lovelace"]);
    expect(await names("engine.CO")).toEqual(["Charles Babbage"]);
    expect(await names("7911")).toEqual(["Charles Babbage"]);
    expect(await names("(415) 555")).toEqual(["Ada Lovelace"]);
    expect(await names("100%")).toEqual(["Grace 100% Hopper"]);
    expect(await names("a")).toHaveLength(3);
    expect(await names("zzz")).toEqual([]);
    expect(expectEnvelope(await ctx.post("/v1/api/contact/search", {}), 400).data.field).toBe("query");
    expect(expectEnvelope(await ctx.post("/v1/api/contact/search", { query: "  " }), 400).data.field).toBe("query");
  });

  test("update changes any of name, phone, email, type; others stay", async () => {
    const ctx = await createTestContext();
    const c = await create(ctx, { name: "Ada", phone: "+14155552671", email: "ada@example.com" });
    const u = expectEnvelope(
      await ctx.post("/v1/api/contact/update", { contact_id: c.contact_id, phone: "+447911123456", type: "lead" }),
      200,
    ).data;
    expect(u).toMatchObject({ name: "Ada", phone: "+447911123456", email: "ada@example.com", type: "lead" });
    const cleared = (await ctx.post("/v1/api/contact/update", { contact_id: c.contact_id, email: null, type: null })).body.data;
    expect(cleared).toMatchObject({ email: null, type: null });
    const renamed = (await ctx.post("/v1/api/contact/update", { contact_id: c.contact_id, name: "Ada L." })).body.data;
    expect(renamed.name).toBe("Ada L.");
  });

  test("update errors: unknown id 404, bad phone 400, taken phone 409, nothing changed", async () => {
    const ctx = await createTestContext();
    const a = await create(ctx, { name: "A", phone: "+14155552671" });
    await create(ctx, { name: "B", phone: "+447911123456" });
    expect((await ctx.post("/v1/api/contact/update", { contact_id: 999, name: "X" })).status).toBe(404);
    expect(
      expectEnvelope(await ctx.post("/v1/api/contact/update", { contact_id: a.contact_id, name: "Z", phone: "123" }), 400).data.error_code,
    ).toBe("invalid_phone_number");
    expect(
      expectEnvelope(await ctx.post("/v1/api/contact/update", { contact_id: a.contact_id, phone: "+447911123456" }), 409).data.error_code,
    ).toBe("duplicate_contact");
    expect(expectEnvelope(await ctx.post("/v1/api/contact/update", {}), 400).data.field).toBe("contact_id");
    expect((await ctx.get(`/v1/api/contact/${a.contact_id}`)).body.data).toMatchObject({ name: "A", phone: "+14155552671" });
  });

  test("delete removes the contact; again: 404", async () => {
    const ctx = await createTestContext();
    const c = await create(ctx, { name: "A", phone: "+14155552671" });
    expect(expectEnvelope(await ctx.post("/v1/api/contact/delete", { contact_id: c.contact_id }), 200).data).toEqual({
      contact_id: c.contact_id,
      deleted: true,
    });
    expect((await ctx.get(`/v1/api/contact/${c.contact_id}`)).status).toBe(404);
    expect((await ctx.post("/v1/api/contact/delete", { contact_id: c.contact_id })).status).toBe(404);
    expect(expectEnvelope(await ctx.post("/v1/api/contact/delete", { contact_id: "abc" }), 400).data.field).toBe("contact_id");
  });
});
