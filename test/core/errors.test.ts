import { describe, expect, test } from "bun:test";
import { AppError, ERROR_STATUS } from "../../src/core/errors";
import { createTestContext, expectEnvelope } from "../helpers/context";

describe("error code table", () => {
  test("every code maps to a 4xx or 5xx status", () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      expect(code).toMatch(/^[a-z_]+$/);
      expect(status >= 400 && status < 600).toBe(true);
    }
  });

  test.each([
    ["unauthorized", 401],
    ["key_disabled", 403],
    ["account_suspended", 403],
    ["rate_limited", 429],
    ["validation_error", 400],
    ["invalid_phone_number", 400],
    ["not_found", 404],
    ["insufficient_credits", 402],
    ["payload_too_large", 413],
    ["method_not_allowed", 405],
    ["internal_error", 500],
  ] as const)("%s answers %i", (code, status) => {
    expect(ERROR_STATUS[code]).toBe(status);
    expect(new AppError(code, "x").status).toBe(status);
  });

  test("the documented table in /openapi.json lists every code with its status", async () => {
    const ctx = await createTestContext();
    const spec = (await ctx.get("/openapi.json", { key: null })).body;
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      expect(spec.info.description).toContain(`| \`${code}\` | ${status} |`);
    }
  });

  test("a thrown AppError reaches the client as its status, code and data", async () => {
    const ctx = await createTestContext();
    const r = await ctx.post("/v1/api/device/batch/delete", { device_ids: [12345] });
    const body = expectEnvelope(r, 404);
    expect(body.data).toEqual({ error_code: "not_found", not_found: [12345] });
  });
});
