// /openapi.json is the truth about the API, and /docs works with no internet.
import { describe, expect, test } from "bun:test";
import { fastRouteList } from "../../src/app";
import { documentedPathOf } from "../../src/docs/refine";
import { ERROR_STATUS } from "../../src/core/errors";
import { createTestContext } from "../helpers/context";
import { RECIPIENT } from "../helpers/numbers";

const ctx = await createTestContext();
const spec = (await ctx.get("/openapi.json", { key: null })).body;
type Op = {
  summary?: string;
  tags?: string[];
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
  requestBody?: { content: Record<string, unknown> };
};
const operations: [string, string, Op][] = Object.entries(spec.paths as Record<string, Record<string, Op>>).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, op]) => [path, method, op] as [string, string, Op]),
);

/** Follows a local $ref to the schema it names. */
function resolve(schema: any): any {
  if (!schema?.$ref) return schema;
  return schema.$ref
    .replace(/^#\//, "")
    .split("/")
    .reduce((node: any, key: string) => node?.[key], spec);
}

describe("OpenAPI document", () => {
  test("is OpenAPI 3.1 with the security schemes for both header pairs", () => {
    expect(spec.openapi).toStartWith("3.1");
    expect(spec.info.title).toBe("Pigeon API");
    // The phone app's credentials are modelled beside the API key's, and SMSGate's for its third-party API.
    expect(Object.keys(spec.components.securitySchemes).sort()).toEqual([
      "ApiKeyBearer",
      "ApiKeyHeader",
      "ApiSecret",
      "PhoneDeviceToken",
      "PhoneLogin",
      "PhonePairingToken",
      "SmsGateBasic",
      "SmsGateBearer",
      "TwilioBasic",
    ]);
    expect(spec.components.securitySchemes.ApiSecret).toMatchObject({ type: "apiKey", in: "header", name: "X-API-SECRET" });
    expect(spec.security).toEqual([
      { ApiKeyBearer: [], ApiSecret: [] },
      { ApiKeyHeader: [], ApiSecret: [] },
    ]);
  });

  test("documents every API route the app serves", () => {
    const served = ctx.app.routes
      .filter((r) => r.path.startsWith("/v1/") || r.path === "/health")
      .map((r) => `${r.method.toLowerCase()} ${documentedPathOf(r.path)}`);
    const documented = operations.map(([path, method]) => `${method} ${path}`);
    for (const route of served) expect(documented).toContain(route);
  });

  test("its paths are the routes the server answers, no more and no fewer, each parameter named in its path", () => {
    const hidden = (r: (typeof ctx.app.routes)[number]) => (r.hooks as { detail?: { hide?: boolean } } | undefined)?.detail?.hide === true;
    const served = ctx.app.routes.filter((r) => !hidden(r)).map((r) => `${r.method.toLowerCase()} ${documentedPathOf(r.path)}`);
    const documented = operations.map(([path, method]) => `${method} ${path}`);
    expect([...new Set(documented)].sort()).toEqual([...new Set(served)].sort());
    // Each {name} of a path is one of its operation's path parameters, and each path parameter is in its path.
    const mismatched = operations.flatMap(([path, method, op]) => {
      const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const declared = ((op as { parameters?: { in: string; name: string }[] }).parameters ?? [])
        .filter((p) => p.in === "path")
        .map((p) => p.name)
        .sort();
      return JSON.stringify(inPath) === JSON.stringify(declared) ? [] : [`${method} ${path}: ${declared.join(",")}`];
    });
    expect(mismatched).toEqual([]);
    // Twilio's message instance is documented as Twilio's libraries call it.
    const twilio = operations.filter(([path]) => path.startsWith("/2010-04-01/")).map(([path]) => path);
    expect(twilio.filter((path) => !path.endsWith(".json"))).toEqual([]);
    const fetch = spec.paths["/2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json"];
    expect(Object.keys(fetch).sort()).toEqual(["delete", "get", "post"]);
    expect(fetch.get.parameters.find((p: { name: string }) => p.name === "Sid").schema.pattern).toBe("^SM[0-9a-f]{32}$");
    expect(fetch.get.parameters.find((p: { name: string }) => p.name === "AccountSid").schema.pattern).toBe("^AC[0-9a-f]{32}$");
    const verification = spec.paths["/v2/Services/{ServiceSid}/Verifications/{Sid}"].get.parameters;
    expect(verification.map((p: { name: string; schema: { pattern: string } }) => [p.name, p.schema.pattern])).toEqual([
      ["ServiceSid", "^VA[0-9a-f]{32}$"],
      ["Sid", "^VE[0-9a-f]{32}$"],
    ]);
  });

  test("a client built from the document reaches the routes: Twilio's message instance by its documented path", async () => {
    await ctx.phone("Docs phone");
    const { account_sid: sid, auth_token: token } = await ctx.services.twilio.credentials(ctx.workspace.id);
    const basic = { authorization: `Basic ${btoa(`${sid}:${token}`)}` };
    const made = await ctx.app.handle(
      new Request(`http://localhost/2010-04-01/Accounts/${sid}/Messages.json`, {
        method: "POST",
        headers: { ...basic, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ To: RECIPIENT, Body: "Read me back" }),
      }),
    );
    expect(made.status).toBe(201);
    const message = await made.json();
    const path = "/2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json".replace("{AccountSid}", sid).replace("{Sid}", message.sid);
    const read = await ctx.app.handle(new Request(`http://localhost${path}`, { headers: basic }));
    expect(read.status).toBe(200);
    expect((await read.json()).sid).toBe(message.sid);
  });

  test("every route's documented body is the schema it validates with, the fast routes' too", () => {
    /** The properties and required fields of a schema, following $refs and anyOf's object branch. */
    const shapeOf = (schema: any) => {
      let s = resolve(schema);
      if (s?.anyOf) s = resolve(s.anyOf.find((b: any) => resolve(b)?.type === "object" || resolve(b)?.properties));
      return { properties: Object.keys(s?.properties ?? {}).sort(), required: [...(s?.required ?? [])].sort() };
    };
    const documentedBody = (method: string, path: string) =>
      (spec.paths[path]?.[method] as Op | undefined)?.requestBody?.content as Record<string, { schema?: unknown }> | undefined;
    const checked: string[] = [];
    const wrong: string[] = [];
    const compare = (name: string, method: string, path: string, schema: any) => {
      // JSON, or a form where the caller posts one (a provider's status callback).
      const content = documentedBody(method, path);
      const body = content?.["application/json"] ?? content?.["application/x-www-form-urlencoded"];
      checked.push(name);
      if (!body?.schema) return wrong.push(`${name}: no schema documented`);
      const want = { properties: Object.keys(schema.properties ?? {}).sort(), required: [...(schema.required ?? [])].sort() };
      if (JSON.stringify(shapeOf(body.schema)) !== JSON.stringify(want))
        wrong.push(`${name}: ${JSON.stringify(shapeOf(body.schema))} ≠ ${JSON.stringify(want)}`);
    };
    for (const r of ctx.app.routes) {
      const body = (r.hooks as { body?: any } | undefined)?.body;
      const path = documentedPathOf(r.path);
      if (!body?.properties || !spec.paths[path] || path.startsWith("/2010-04-01/") || path.startsWith("/v2/")) continue;
      compare(`${r.method} ${path}`, r.method.toLowerCase(), path, body);
    }
    for (const f of fastRouteList(ctx.services)) if (spec.paths[f.path]) compare(`fast POST ${f.path}`, "post", f.path, f.schema);
    expect(wrong).toEqual([]);
    expect(checked).toContain("POST /3rdparty/v1/messages");
    expect(checked).toContain("fast POST /3rdparty/v1/messages");
    expect(checked).toContain("fast POST /v1/api/sms/send");
  });

  test.each(operations.map(([p, m, op]) => [`${m.toUpperCase()} ${p}`, op] as const))(
    "%s has a summary, a tag, a success and its errors",
    (name, op) => {
      expect(op.summary?.length).toBeGreaterThan(3);
      expect(op.tags?.length).toBeGreaterThan(0);
      expect(Object.keys(op.responses).some((status) => status.startsWith("2"))).toBe(true);
      if (name.includes(" /2010-04-01/")) {
        // Twilio's API answers errors in Twilio's {code, message, more_info, status}.
        const errors = Object.entries(op.responses).filter(([status]) => status.startsWith("4"));
        expect(errors.map(([status]) => status)).toEqual(expect.arrayContaining(["400", "401", "404", "429"]));
        for (const [, r] of errors) expect(r.content?.["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/TwilioError" });
        return;
      }
      if (name.includes(" /mobile/") || name.includes("3rdparty/v1/")) {
        // The phone protocol and SMSGate's API document their errors in the app's own {message, code, data} shape.
        const errors = Object.entries(op.responses).filter(([status]) => status.startsWith("4"));
        for (const [, r] of errors)
          expect(resolve(r.content?.["application/json"]?.schema)).toMatchObject({ required: ["message", "code", "data"] });
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
    },
  );

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

// The description as strict tools and generators read it.
describe("OpenAPI document, as tools read it", () => {
  const walk = (node: unknown, visit: (n: any, at: string) => void, at = "") => {
    if (!node || typeof node !== "object") return;
    visit(node, at);
    for (const [k, v] of Object.entries(node)) walk(v, visit, `${at}/${k}`);
  };

  test("every operation has a readable operationId, unique and camelCase, the one its route declares", () => {
    const ids = operations.map(([, , op]) => (op as { operationId?: string }).operationId);
    for (const id of ids) expect(id).toMatch(/^[a-z][a-zA-Z0-9]*$/);
    expect(new Set(ids).size).toBe(ids.length);
    // Words, not the generator's method-and-path spelling (post3rdpartyV1Messages, getV1ApiOptoutList).
    const spelled = ids.filter((id) => /^(get|post|put|patch|delete|head)(V\d|3rdparty|Mobile|Api|2010)/.test(id ?? ""));
    expect(spelled).toEqual([]);
    expect(spec.paths["/3rdparty/v1/messages"].post.operationId).toBe("smsgateSendMessage");
    expect(spec.paths["/v1/notification/sms/api/send"].post.operationId).toBe("sendSms");
    expect(spec.paths["/v1/api/device/list"].get.operationId).toBe("listDevices");
    expect(spec.paths["/v1/api/device/{device_id}/rate-limit"].get.operationId).toBe("getDeviceRateLimit");
    // Each served route in the document declares its id beside itself (detail.operationId): none is
    // left to the generator, and the document carries exactly the declared ones.
    const detailOf = (r: (typeof ctx.app.routes)[number]) => (r.hooks as { detail?: { hide?: boolean; operationId?: string } }).detail;
    const declared = ctx.app.routes
      .filter((r) => detailOf(r)?.hide !== true)
      .map((r) => {
        const key = `${r.method.toLowerCase()} ${documentedPathOf(r.path)}`;
        const id = detailOf(r)?.operationId;
        return { key, id: id ?? `missing: ${key}` };
      });
    expect(declared.length).toBe(operations.length);
    for (const { id } of declared) expect(id).toMatch(/^[a-z][a-zA-Z0-9]*$/);
    expect(new Set(declared.map((d) => d.id)).size).toBe(declared.length);
    const documented = new Map(operations.map(([path, method, op]) => [`${method} ${path}`, (op as { operationId?: string }).operationId]));
    for (const { key, id } of declared) expect(`${key}: ${documented.get(key)}`).toBe(`${key}: ${id}`);
  });

  test("is pure OpenAPI 3.1: no 3.0 `nullable`, and null is a type", () => {
    const found: string[] = [];
    walk(spec, (n, at) => {
      if ("nullable" in n && !at.endsWith("/properties")) found.push(at);
    });
    expect(found).toEqual([]);
    expect(resolve(spec.components.schemas.Notification).properties.sent_at.type).toEqual(["string", "null"]);
  });

  test("names a server: the relative root, and PIGEON_PUBLIC_URL first when it is set", () => {
    expect(spec.servers).toEqual([
      { url: "https://pigeon.test", description: expect.any(String) },
      { url: "/", description: expect.any(String) },
    ]);
  });

  test("names the shared models and inlines none of them anywhere", () => {
    const names = [
      "Notification",
      "NotificationDetail",
      "Device",
      "Contact",
      "Template",
      "Webhook",
      "WebhookDelivery",
      "Thread",
      "Message",
      "Error",
      "Pagination",
      "PhoneError",
    ];
    for (const name of names) expect(Object.keys(spec.components.schemas)).toContain(name);
    // Error shares its keys with every success envelope; its $refs are checked by the route test above.
    const shapes = new Map(
      names
        .filter((n) => n !== "Error")
        .map(
          (name) =>
            [
              Object.keys(spec.components.schemas[name].properties ?? {})
                .sort()
                .join(","),
              name,
            ] as const,
        ),
    );
    const inlined: string[] = [];
    walk(spec.paths, (n, at) => {
      if (n.type !== "object" || !n.properties) return;
      const name = shapes.get(Object.keys(n.properties).sort().join(","));
      if (name) inlined.push(`${name} at ${at}`);
    });
    expect(inlined).toEqual([]);
    const text = JSON.stringify(spec.paths);
    expect(text.split('"#/components/schemas/Notification"').length - 1).toBeGreaterThanOrEqual(2);
    expect(spec.paths["/v1/api/device/{device_id}"].get.responses["200"].content["application/json"].schema.properties.data).toEqual({
      $ref: "#/components/schemas/Device",
    });
  });

  test("declares the headers the server sends: rate limits, Retry-After, Idempotent-Replayed, Allow", () => {
    for (const [path, method, op] of operations) {
      const r = op.responses as Record<string, { headers?: Record<string, unknown> }>;
      expect(r["405"]?.headers?.Allow).toBeDefined();
      if (!path.startsWith("/v1/") || op.security !== undefined) continue;
      // The success answer: 200, or 202 for a request only started (the inbox refresh).
      const success = r["200"] ?? r["202"];
      for (const h of ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"])
        expect(Object.keys(success.headers ?? {})).toContain(h);
      expect(r["429"].headers?.["Retry-After"]).toBeDefined();
      if (method === "post" && /\/send(\/bulk)?$|\/chatapp\/test$/.test(path)) {
        expect(r["200"].headers?.["Idempotent-Replayed"]).toBeDefined();
        expect((op as { parameters?: { in: string; name: string }[] }).parameters).toContainEqual(
          expect.objectContaining({ in: "header", name: "Idempotency-Key" }),
        );
      }
    }
  });

  test("the declared headers are the ones a real answer carries", async () => {
    const listed = await ctx.get("/v1/api/device/list");
    for (const name of Object.keys(spec.paths["/v1/api/device/list"].get.responses["200"].headers))
      expect(listed.headers.get(name)).not.toBeNull();
    const wrong = await ctx.call("GET", "/v1/api/sms/send");
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
    const documented405 = spec.paths["/v1/api/sms/send"].post.responses["405"].content["application/json"].examples;
    expect(Object.values(documented405).map((e: any) => e.value.data.error_code)).toContain(wrong.body.data.error_code);
  });

  test("413 on every operation with a body, 429/401/403 on every API-key operation", () => {
    for (const [path, , op] of operations) {
      if (op.requestBody) expect(Object.keys(op.responses)).toContain("413");
      if (path.startsWith("/v1/") && op.security === undefined)
        for (const s of ["401", "403", "429"]) expect(Object.keys(op.responses)).toContain(s);
    }
  });

  test("phone routes and platform callbacks carry their own credentials, not the API key", () => {
    for (const [path, method, op] of operations) {
      if (!path.startsWith("/mobile/")) continue;
      const schemes = (op.security ?? []).flatMap((s) => Object.keys(s as object));
      expect(schemes.length).toBeGreaterThan(0);
      for (const s of schemes) expect(s).toStartWith("Phone");
      if (method === "post" && path === "/mobile/v1/device") expect(schemes).toContain("PhonePairingToken");
      else if (!path.endsWith("/user/code")) expect(schemes).toContain("PhoneDeviceToken");
    }
    expect(spec.components.securitySchemes.PhoneDeviceToken).toMatchObject({ type: "http", scheme: "bearer" });
    const hook = spec.paths["/v1/webhooks/chatapp"].post;
    expect(hook.security).toEqual([]);
    expect(hook.parameters).toContainEqual(expect.objectContaining({ in: "header", name: "X-Hub-Signature-256", required: true }));
  });

  test("every error response has its own examples, drawn from the error table", () => {
    const seen = new Map<string, Set<string>>();
    for (const [path, , op] of operations) {
      for (const [status, r] of Object.entries(op.responses) as [string, any][]) {
        if (Number(status) < 400) continue;
        const media = r.content?.["application/json"];
        if (!media) continue;
        const examples = Object.values(media.examples ?? {}) as { value: any }[];
        expect(examples.length).toBeGreaterThan(0);
        if (path.startsWith("/2010-04-01/") || path.startsWith("/v2/Services")) {
          // Twilio's codes: the example's status is the response's, its code a number Twilio documents.
          for (const { value } of examples)
            expect({ status: value.status, code: typeof value.code }).toEqual({ status: Number(status), code: "number" });
          continue;
        }
        for (const { value } of examples) {
          if (path.startsWith("/mobile/") || path.includes("3rdparty/v1/")) expect(value.code).toBe(Number(status));
          else expect(value.status_id).toBe(Number(status));
          expect(ERROR_STATUS[value.data.error_code as keyof typeof ERROR_STATUS] as number).toBe(Number(status));
          (seen.get(status) ?? seen.set(status, new Set()).get(status)!).add(value.data.error_code);
        }
      }
    }
    expect([...seen.get("404")!]).toEqual(["not_found"]);
    expect(seen.get("402")).toContain("insufficient_credits");
    expect(seen.get("413")).toContain("payload_too_large");
    expect(seen.get("400")).toContain("validation_error");
  });
});
