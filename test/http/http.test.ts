// The envelope everywhere: unknown routes, wrong methods, bad JSON, oversized bodies, internal errors.
import { describe, expect, test } from "bun:test";
import { createTestContext, expectEnvelope } from "../helpers/context";
import { RECIPIENT } from "../helpers/numbers";

describe("envelope on every failure", () => {
  test("unknown route: 404 not_found", async () => {
    const ctx = await createTestContext();
    const body = expectEnvelope(await ctx.get("/v1/api/nothing/here"), 404);
    expect(body.data.error_code).toBe("not_found");
    expect(body.message).toContain("/v1/api/nothing/here");
  });

  test("unknown route outside /v1: 404 without credentials", async () => {
    const ctx = await createTestContext();
    expect(expectEnvelope(await ctx.get("/nope", { key: null }), 404).data.error_code).toBe("not_found");
  });

  test("wrong method: 405 with Allow", async () => {
    const ctx = await createTestContext();
    const r = await ctx.get("/v1/api/contact/create");
    const body = expectEnvelope(r, 405);
    expect(body.data.error_code).toBe("method_not_allowed");
    expect(r.headers.get("allow")).toBe("POST");
    const r2 = await ctx.post("/v1/api/device/list", {});
    expect(expectEnvelope(r2, 405).data.allowed).toEqual(["GET"]);
  });

  test("malformed JSON: 400 invalid_json, nothing stored", async () => {
    const ctx = await createTestContext();
    const r = await ctx.call("POST", "/v1/api/contact/create", { raw: '{"name": "Ada", "phone": ' });
    const body = expectEnvelope(r, 400);
    expect(body.data.error_code).toBe("invalid_json");
    expect((await ctx.get("/v1/api/contact/list")).body.data.pagination.total).toBe(0);
  });

  test("a JSON body sent as text/plain is still read", async () => {
    const ctx = await createTestContext();
    const r = await ctx.call("POST", "/v1/api/contact/create", {
      raw: JSON.stringify({ name: "Ada", phone: RECIPIENT }),
      headers: { "content-type": "text/plain" },
    });
    expect(r.status).toBe(200);
  });

  test("validation failure: 400 naming the field and reason, never 422", async () => {
    const ctx = await createTestContext();
    const r = await ctx.post("/v1/api/contact/create", { name: 42, phone: RECIPIENT });
    const body = expectEnvelope(r, 400);
    expect(body.data).toMatchObject({ error_code: "validation_error", field: "name", location: "body" });
    expect(body.message).toContain("name");
    expect(body.message).toContain("string");
  });

  test("missing body on a route that needs one: 400 naming the first missing field", async () => {
    const ctx = await createTestContext();
    const body = expectEnvelope(await ctx.call("POST", "/v1/api/contact/create"), 400);
    expect(body.data.error_code).toBe("validation_error");
    expect(body.message).toMatch(/name|phone/);
  });

  test("oversized body: 413 payload_too_large", async () => {
    const ctx = await createTestContext({ config: { maxBodyBytes: 2048 } });
    const r = await ctx.post("/v1/api/contact/create", { name: "x".repeat(5000), phone: RECIPIENT });
    const body = expectEnvelope(r, 413);
    expect(body.data).toMatchObject({ error_code: "payload_too_large", limit: 2048 });
  });

  test("oversized body without a Content-Length (streamed): 413", async () => {
    const ctx = await createTestContext({ config: { maxBodyBytes: 2048 } });
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(JSON.stringify({ name: "x".repeat(5000), phone: RECIPIENT })));
        c.close();
      },
    });
    const res = await ctx.app.handle(
      new Request("http://localhost/v1/api/contact/create", {
        method: "POST",
        body: stream,
        headers: { authorization: `Bearer ${ctx.key.api_key}`, "x-api-secret": ctx.key.api_secret, "content-type": "application/json" },
      }),
    );
    expect(res.status).toBe(413);
    expect((await res.json()).data.error_code).toBe("payload_too_large");
  });

  test("internal error: 500 in the envelope, no stack trace, logged", async () => {
    const ctx = await createTestContext();
    // Gone from under the app (renamed: a table others refer to cannot be dropped on every database).
    await ctx.sql.run("ALTER TABLE contact RENAME TO contact_gone");
    const r = await ctx.get("/v1/api/contact/list");
    const body = expectEnvelope(r, 500);
    // The 500 names the request id the log line carries.
    expect(body.data).toEqual({ error_code: "internal_error", request_id: r.headers.get("x-request-id") });
    expect(r.text).not.toContain("at ");
    expect(r.text).not.toContain("sqlite");
    expect(ctx.logs.some((l) => l.includes("internal error on GET /v1/api/contact/list"))).toBe(true);
  });

  test("success responses carry status_id 200 and a message", async () => {
    const ctx = await createTestContext();
    const body = expectEnvelope(await ctx.get("/v1/api/project/list"), 200);
    expect(typeof body.message).toBe("string");
  });
});
