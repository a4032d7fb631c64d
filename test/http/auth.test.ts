// Spec section 5: both header pairs; 401 for missing or wrong credentials; 403 for a disabled key
// or a suspended account; a key sees only its own workspace.
import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { RECIPIENT } from "../helpers/numbers";

const PATH = "/v1/api/device/list";

describe("authentication", () => {
  test("Bearer + X-API-SECRET is accepted", async () => {
    const ctx = await createTestContext();
    expect((await ctx.get(PATH)).status).toBe(200);
  });

  test("x-api-key + x-api-secret is accepted", async () => {
    const ctx = await createTestContext();
    const r = await ctx.get(PATH, { key: null, headers: { "x-api-key": ctx.key.api_key, "x-api-secret": ctx.key.api_secret } });
    expect(r.status).toBe(200);
  });

  test.each([
    ["no credentials", {}],
    ["key without secret", { authorization: "Bearer KEY" }],
    ["secret without key", { "x-api-secret": "SECRET" }],
    ["wrong secret", { authorization: "Bearer KEY", "x-api-secret": "sk_wrong" }],
    ["unknown key", { authorization: "Bearer pk_doesnotexist", "x-api-secret": "SECRET" }],
    ["Basic instead of Bearer", { authorization: "Basic KEY", "x-api-secret": "SECRET" }],
  ])("%s: 401 unauthorized", async (_, template) => {
    const ctx = await createTestContext();
    const headers = Object.fromEntries(
      Object.entries(template as Record<string, string>).map(([k, v]) => [
        k,
        v.replace("KEY", ctx.key.api_key).replace("SECRET", ctx.key.api_secret),
      ]),
    );
    const body = expectEnvelope(await ctx.get(PATH, { key: null, headers }), 401);
    expect(body.data.error_code).toBe("unauthorized");
  });

  test("401 comes before validation and parsing", async () => {
    const ctx = await createTestContext();
    const r = await ctx.call("POST", "/v1/api/contact/create", { key: null, raw: "{not json" });
    expect(expectEnvelope(r, 401).data.error_code).toBe("unauthorized");
  });

  test("disabled key: 403 key_disabled; enabled again: 200", async () => {
    const ctx = await createTestContext();
    await ctx.services.accounts.setKeyStatus(ctx.key.api_key, "disabled");
    expect(expectEnvelope(await ctx.get(PATH), 403).data.error_code).toBe("key_disabled");
    await ctx.services.accounts.setKeyStatus(String(ctx.key.key_id), "active");
    expect((await ctx.get(PATH)).status).toBe(200);
  });

  test("a disabled key with a wrong secret is still 401 (no status leak)", async () => {
    const ctx = await createTestContext();
    await ctx.services.accounts.setKeyStatus(ctx.key.api_key, "disabled");
    const r = await ctx.get(PATH, { key: { ...ctx.key, api_secret: "sk_wrong" } });
    expect(r.status).toBe(401);
  });

  test("suspended account: 403 account_suspended; resumed: 200", async () => {
    const ctx = await createTestContext();
    await ctx.services.accounts.setAccountStatus(ctx.account.id, "suspended");
    expect(expectEnvelope(await ctx.get(PATH), 403).data.error_code).toBe("account_suspended");
    await ctx.services.accounts.setAccountStatus(ctx.account.id, "active");
    expect((await ctx.get(PATH)).status).toBe(200);
  });

  test("rotating a key's secret retires the old secret at once", async () => {
    const ctx = await createTestContext();
    const rotated = await ctx.services.accounts.rotateKey(ctx.key.api_key);
    expect(rotated.api_key).toBe(ctx.key.api_key);
    expect(rotated.api_secret).not.toBe(ctx.key.api_secret);
    expect((await ctx.get(PATH)).status).toBe(401);
    expect((await ctx.get(PATH, { key: rotated })).status).toBe(200);
  });

  test("secrets are stored hashed, never in plain text", async () => {
    const ctx = await createTestContext();
    const rows = (await ctx.sql.all("SELECT * FROM api_key")) as Record<string, unknown>[];
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(ctx.key.api_secret);
    expect(rows[0].secret_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  test("public routes need no key: /health, /openapi.json, /docs", async () => {
    const ctx = await createTestContext();
    for (const path of ["/health", "/openapi.json", "/docs"]) {
      expect((await ctx.get(path, { key: null })).status).toBe(200);
    }
  });
});

describe("tenancy", () => {
  // Each id route answering another workspace's ids with 404 (and changing nothing) is checked for
  // every documented operation by test/http/sweep.test.ts; the lists are checked here.
  test("a key of another workspace lists none of this workspace's rows, and this workspace's rows stay as they were", async () => {
    const ctx = await createTestContext();
    const other = await ctx.otherWorkspace();
    const dev = (await ctx.post("/v1/api/device/batch/register", { devices: [{ name: "Mine" }] })).body.data.devices[0];
    const contact = (await ctx.post("/v1/api/contact/create", { name: "Ada", phone: RECIPIENT })).body.data;
    await ctx.post("/v1/api/template/create", { name: "Hi", body: "Hi {{name}}" });

    const as = { key: other.key };
    expect(expectEnvelope(await ctx.get(`/v1/api/device/${dev.device_id}`, as), 404).data.error_code).toBe("not_found");
    expect((await ctx.post("/v1/api/device/batch/delete", { device_ids: [dev.device_id] }, as)).status).toBe(404);
    expect((await ctx.post("/v1/api/contact/update", { contact_id: contact.contact_id, name: "X" }, as)).status).toBe(404);

    expect((await ctx.get("/v1/api/device/list", as)).body.data.devices).toEqual([]);
    expect((await ctx.get("/v1/api/contact/list", as)).body.data.contacts).toEqual([]);
    expect((await ctx.post("/v1/api/contact/search", { query: "ada" }, as)).body.data.contacts).toEqual([]);
    const otherTemplates = (await ctx.get("/v1/api/template/list", as)).body.data.templates;
    expect(otherTemplates.every((t: { is_system: number }) => t.is_system === 1)).toBe(true);
    const projects = (await ctx.get("/v1/api/project/list", as)).body.data.projects;
    expect(projects.map((p: { project_id: number }) => p.project_id)).toEqual([other.workspace.id]);

    // The owner's rows are untouched.
    expect((await ctx.get(`/v1/api/device/${dev.device_id}`)).body.data.status).toBe("active");
    expect((await ctx.get(`/v1/api/contact/${contact.contact_id}`)).body.data.name).toBe("Ada");
  });
});
