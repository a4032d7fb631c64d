// /openapi.json is the truth about the API, and /docs works with no internet.
import { describe, expect, test } from "bun:test";
import { createTestContext } from "./helpers/context";

const ctx = createTestContext();
const spec = (await ctx.get("/openapi.json", { key: null })).body;
type Op = { summary?: string; tags?: string[]; security?: unknown[]; responses: Record<string, { content?: Record<string, { schema: unknown }> }>; requestBody?: { content: Record<string, unknown> } };
const operations: [string, string, Op][] = Object.entries(spec.paths as Record<string, Record<string, Op>>).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, op]) => [path, method, op] as [string, string, Op]),
);

describe("OpenAPI document", () => {
  test("is OpenAPI 3.1 with the security schemes for both header pairs", () => {
    expect(spec.openapi).toStartWith("3.1");
    expect(spec.info.title).toBe("Pigeon API");
    expect(Object.keys(spec.components.securitySchemes).sort()).toEqual(["ApiKeyBearer", "ApiKeyHeader", "ApiSecret"]);
    expect(spec.components.securitySchemes.ApiSecret).toMatchObject({ type: "apiKey", in: "header", name: "X-API-SECRET" });
    expect(spec.security).toEqual([
      { ApiKeyBearer: [], ApiSecret: [] },
      { ApiKeyHeader: [], ApiSecret: [] },
    ]);
  });

  test("documents every API route the app serves", () => {
    const served = ctx.app.routes
      .filter((r) => r.path.startsWith("/v1/") || r.path === "/health")
      .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:([^/]+)/g, "{$1}")}`);
    const documented = operations.map(([path, method]) => `${method} ${path}`);
    for (const route of served) expect(documented).toContain(route);
  });

  test.each(operations.map(([p, m, op]) => [`${m.toUpperCase()} ${p}`, op] as const))("%s has a summary, a tag, a success and its errors", (name, op) => {
    expect(op.summary?.length).toBeGreaterThan(3);
    expect(op.tags?.length).toBeGreaterThan(0);
    expect(Object.keys(op.responses).some((status) => status.startsWith("2"))).toBe(true);
    if (name.includes(" /mobile/")) {
      // The phone protocol documents its errors in the app's own {message, code, data} shape.
      const errors = Object.entries(op.responses).filter(([status]) => status.startsWith("4"));
      for (const [, r] of errors) expect(r.content?.["application/json"]?.schema).toMatchObject({ required: ["message", "code", "data"] });
      return;
    }
    if (op.security === undefined) {
      for (const status of ["400", "401", "403", "429", "500"]) {
        expect(op.responses[status]?.content?.["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/Error" });
      }
    }
    // Every POST takes a body, but for the two that act on their path alone.
    if (name.startsWith("POST") && !name.endsWith("/rotate") && !name.endsWith("/read")) {
      const content = op.requestBody?.content ?? {};
      expect(content["application/json"] ?? content["application/x-www-form-urlencoded"]).toBeDefined();
    }
  });

  test("the health check and provider callbacks need no key", () => {
    expect(spec.paths["/health"].get.security).toEqual([]);
    expect(spec.paths["/v1/callbacks/cloud/{device_id}"].post.security).toEqual([]);
  });

  test("coerced integers are documented as integers", () => {
    const param = spec.paths["/v1/api/device/{device_id}"].get.parameters[0];
    expect(param.schema.type).toBe("integer");
    expect(JSON.stringify(spec)).not.toContain('"format":"integer"');
  });

  test.each([
    "/v1/notification/sms/api/send",
    "/v1/api/sms/send",
    "/v1/api/sms/send/bulk",
    "/v1/api/contact/create",
    "/v1/api/template/create",
    "/v1/api/device/batch/register",
  ])("POST %s carries a request example", (path) => {
    const schema = spec.paths[path].post.requestBody.content["application/json"].schema;
    expect(schema.examples?.length).toBeGreaterThan(0);
  });

  test("the Error schema requires data.error_code", () => {
    expect(spec.components.schemas.Error.properties.data.required).toEqual(["error_code"]);
  });
});

describe("/docs", () => {
  test("the page loads only its own assets", async () => {
    const page = await ctx.get("/docs", { key: null });
    expect(page.headers.get("content-type")).toContain("text/html");
    const refs = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThanOrEqual(3);
    for (const ref of refs) expect(ref).toStartWith("/docs/assets/");
    expect(page.text).not.toMatch(/https?:\/\//);
    for (const ref of refs) {
      const asset = await ctx.get(ref, { key: null });
      expect(asset.status).toBe(200);
      expect(asset.text.length).toBeGreaterThan(10);
    }
  });

  test("the UI points at /openapi.json and never at an online validator", async () => {
    const init = await ctx.get("/docs/assets/init.js", { key: null });
    expect(init.text).toContain('url: "/openapi.json"');
    expect(init.text).toContain("validatorUrl: null");
    const bundle = await ctx.get("/docs/assets/swagger-ui-bundle.js", { key: null });
    expect(bundle.headers.get("content-type")).toContain("javascript");
    expect(bundle.text).toContain("SwaggerUIBundle");
  });
});
