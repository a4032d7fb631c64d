// In process: input shaped to stall or crash the server
// (deep nesting, huge page numbers, broken Unicode), a full disk, and what an internal error logs.
import { describe, expect, spyOn, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/commands";
import { openRuntime } from "../../src/cli/runtime";
import { ManualClock } from "../../src/clock";
import { openDatabase } from "../../src/db/client";
import { migrate } from "../../src/db/migrate";
import { MAX_JSON_DEPTH, scanJson } from "../../src/http/body";
import { createApp } from "../../src/app";
import { createServices } from "../../src/services";
import { createLogger } from "../../src/lib/log";
import { createTestContext, expectEnvelope, testConfig, type TestContext, sqliteOnly } from "../helpers/context";

const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

async function pairingToken(ctx: TestContext): Promise<string> {
  return expectEnvelope(await ctx.get("/v1/api/device/pairing"), 200).data.pairing_token;
}

describe("deep nesting", () => {
  test("the pre-scan of a 1 MB worst-case body is linear: within a small multiple of JSON.parse over as many bytes", () => {
    const worst = nested(512 * 1024); // 1 MiB of brackets
    // A body that is deep only at its very end, so the scan has to walk all of it.
    const lateDeep = `[${JSON.stringify("x".repeat(1024 * 1024 - 100)).replace(/"$/, `", ${nested(40)}`)}]`;
    // Escapes all the way through: the slow path of the scanner.
    const escaped = JSON.stringify("\u00e9\n".repeat(256 * 1024));
    expect(() => scanJson(worst)).toThrow(/deeper than 32/);
    expect(() => scanJson(lateDeep)).toThrow(/deeper than 32/);
    // Timed against a linear pass the runtime makes over the same machine at the same moment (the
    // fastest of five runs of each), not against a clock: a quadratic scan would be thousands of
    // times slower, a busy machine slows both alike.
    const fastest = (run: () => void) => {
      let best = Infinity;
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        run();
        best = Math.min(best, performance.now() - started);
      }
      return best;
    };
    const baseline = fastest(() => JSON.parse(escaped));
    const scans = fastest(() => {
      for (const body of [worst, lateDeep]) {
        try {
          scanJson(body);
        } catch {
          // refused, as checked above
        }
      }
      scanJson(escaped);
    });
    expect(scans / baseline).toBeLessThan(50);
  });

  test("32 levels are fine, 33 are refused", () => {
    expect(() => scanJson(nested(MAX_JSON_DEPTH))).not.toThrow();
    expect(() => scanJson(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`)).not.toThrow();
    expect(() => scanJson(nested(MAX_JSON_DEPTH + 1))).toThrow();
    // Brackets inside strings do not count.
    expect(() => scanJson(JSON.stringify({ text: "[".repeat(1000) }))).not.toThrow();
    expect(() => scanJson(JSON.stringify({ text: `\\"[[[${"{".repeat(100)}` }))).not.toThrow();
  });

  test("160 KB of nesting to registration with a valid pairing token: 400 in the phone shape, no 500, as fast as a flat body", async () => {
    const ctx = await createTestContext();
    const token = await pairingToken(ctx);
    const post = (raw: string) => ctx.call("POST", "/mobile/v1/device", { raw, key: null, headers: { authorization: `Bearer ${token}` } });
    // Against the same request with a flat body of the same size, the fastest of three each: the
    // nesting must cost no more than a small multiple of reading the bytes.
    const fastest = async (raw: string) => {
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        await post(raw);
        best = Math.min(best, performance.now() - started);
      }
      return best;
    };
    const flat = await fastest(JSON.stringify({ name: "x".repeat(160 * 1024 - 20) }).replace("name", "nam"));
    const deep = await fastest(nested(80 * 1024));
    expect(deep / flat).toBeLessThan(20);
    const r = await post(nested(80 * 1024));
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      message: expect.stringContaining("deeper than 32"),
      code: 400,
      data: { error_code: "too_deeply_nested", max_depth: 32 },
    });
  });

  test("nesting in a /v1 body: 400 too_deeply_nested in the envelope", async () => {
    const ctx = await createTestContext();
    const r = await ctx.call("POST", "/v1/api/contact/create", { raw: `{"name":${nested(80 * 1024)}}` });
    expect(expectEnvelope(r, 400).data.error_code).toBe("too_deeply_nested");
    // The platform webhook signs its raw body, so it cannot be checked first; the depth cap still applies.
    const hook = await ctx.call("POST", "/v1/webhooks/chatapp", {
      raw: `{"entry":${nested(80 * 1024)}}`,
      key: null,
      headers: { "x-hub-signature-256": "sha256=00" },
    });
    expect(expectEnvelope(hook, 400).data.error_code).toBe("too_deeply_nested");
  });

  test("phone routes check credentials before the body: unknown callers get 401 and their body is never read", async () => {
    const ctx = await createTestContext();
    const phone = await ctx.phone();
    const cases: [string, string, string | null][] = [
      ["POST", "/mobile/v1/device", null],
      ["POST", "/mobile/v1/device", "Bearer not-a-pairing-token"],
      ["POST", "/mobile/v1/device", `Basic ${Buffer.from("NOBODY:pw").toString("base64")}`],
      ["POST", "/mobile/v1/device", "Code 123456"],
      ["PATCH", "/mobile/v1/device", "Bearer wrong-device-token"],
      ["PATCH", "/mobile/v1/message", null],
      ["PATCH", "/mobile/v1/user/password", "Bearer wrong-device-token"],
    ];
    for (const [method, path, auth] of cases) {
      const request = new Request(`http://localhost${path}`, {
        method,
        headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
        body: nested(80 * 1024),
      });
      const res = await ctx.app.handle(request);
      expect([method, path, auth, res.status]).toEqual([method, path, auth, 401]);
      expect((await res.json()).data.error_code).toBe("unauthorized");
      expect(request.bodyUsed).toBe(false);
    }
    // The right device token gets as far as the body, which is then refused for its depth.
    const r = await ctx.call("PATCH", "/mobile/v1/device", {
      raw: nested(80 * 1024),
      key: null,
      headers: { authorization: `Bearer ${phone.device_token}` },
    });
    expect(r.status).toBe(400);
    expect(r.body.data.error_code).toBe("too_deeply_nested");
  });
});

describe("page bounds", () => {
  test("every paged list in /openapi.json: a huge page or limit is 400 naming the field, never 500", async () => {
    const ctx = await createTestContext();
    const spec = (await ctx.get("/openapi.json", { key: null })).body;
    type Op = {
      parameters?: { name: string; in: string }[];
      requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown>; required?: string[] } }> };
    };
    const lists: { method: string; path: string; in: "query" | "body"; required?: string[] }[] = [];
    for (const [path, ops] of Object.entries(spec.paths as Record<string, Record<string, Op>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if ((op.parameters ?? []).some((p) => p.in === "query" && p.name === "page")) lists.push({ method, path, in: "query" });
        // Lists that take their page in a JSON body (required text fields get a placeholder).
        const schema = op.requestBody?.content?.["application/json"]?.schema;
        if (schema?.properties?.page) lists.push({ method, path, in: "body", required: schema.required ?? [] });
      }
    }
    // Eleven at the time of writing: nine GET lists and two that take their page in a JSON body.
    expect(lists.length).toBeGreaterThanOrEqual(10);
    for (const list of lists) {
      const concrete = list.path.replace(/\{[^}]+\}/g, "1");
      const ask = (values: Record<string, string | number>) =>
        list.in === "query"
          ? ctx.call(list.method.toUpperCase(), concrete, { query: values })
          : ctx.call(list.method.toUpperCase(), concrete, {
              raw: `{${[...(list.required ?? []).map((k) => `"${k}":"a"`), ...Object.entries(values).map(([k, v]) => `"${k}":${v}`)].join(",")}}`,
            });
      for (const field of ["page", "limit"]) {
        for (const value of ["100000000000000000000", "9223372036854775808", "1e30"]) {
          ctx.clock.advance(61_000); // stay clear of the per-minute rate limit
          const r = await ask({ [field]: value });
          // A path id that does not exist may answer 404 first; what matters is no 500.
          const label = `${list.method} ${concrete} ${field}=${value}`;
          expect([label, r.status]).toEqual([label, r.status === 404 ? 404 : 400]);
          if (r.status === 400) {
            expect([label, r.body.data.error_code, r.body.data.field]).toEqual([label, "validation_error", field]);
          }
        }
      }
      const last = await ask({ page: 1000000 });
      expect([concrete, last.status]).toEqual([concrete, last.status === 404 ? 404 : 200]);
    }
  });
});

describe("broken Unicode", () => {
  const loneHigh = '"\\ud800"';
  const loneLow = '"abc\\udfff"';
  const routes: [string, (s: string) => string][] = [
    ["/v1/api/chatapp/connect", (s) => `{"access_token":"tok","business_account_id":${s}}`],
    ["/v1/api/contact/create", (s) => `{"name":${s},"phone":"+15005550006"}`],
    ["/v1/api/sms/send", (s) => `{"recipient_contact":"+15005550006","message":${s}}`],
    ["/v1/api/template/create", (s) => `{"name":"t","body":${s}}`],
  ];

  test("lone surrogate escapes anywhere in a JSON body: 400 invalid_unicode, never 500", async () => {
    const ctx = await createTestContext();
    for (const [path, body] of routes) {
      for (const s of [loneHigh, loneLow, '"\\uD800\\u0041"', '"\\uDBFF"']) {
        const r = await ctx.call("POST", path, { raw: body(s) });
        expect([path, s, r.status, r.body?.data?.error_code]).toEqual([path, s, 400, "invalid_unicode"]);
      }
    }
    // A proper pair is text like any other.
    expect(() => scanJson('"\\ud83d\\ude00"')).not.toThrow();
  });

  test("a NUL escape in a JSON body: 400 invalid_unicode, nothing stored (PostgreSQL's text cannot hold it)", async () => {
    const ctx = await createTestContext();
    for (const [path, body] of routes) {
      const r = await ctx.call("POST", path, { raw: body('"a\\u0000b"') });
      expect([path, r.status, r.body?.data?.error_code]).toEqual([path, 400, "invalid_unicode"]);
    }
    expect(await ctx.sql.all("SELECT id FROM notification")).toHaveLength(0);
    // Other escapes of control characters are text like any other.
    expect(() => scanJson('"a\\u0001b"')).not.toThrow();
  });

  test("bytes that are not UTF-8 in a body: 400 invalid_unicode", async () => {
    const ctx = await createTestContext();
    for (const [path, body] of routes) {
      const text = new TextEncoder().encode(body('"ok"'));
      for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
        const at = text.indexOf(0x6f); // the "o" of "ok"
        const bytes = new Uint8Array([...text.slice(0, at), ...bad, ...text.slice(at)]);
        const res = await ctx.app.handle(
          new Request(`http://localhost${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${ctx.key.api_key}`, "x-api-secret": ctx.key.api_secret, "content-type": "application/json" },
            body: bytes,
          }),
        );
        const json = (await res.json()) as { status_id: number; data: { error_code: string } };
        expect([path, bad, res.status, json.status_id, json.data.error_code]).toEqual([path, bad, 400, 400, "invalid_unicode"]);
      }
    }
  });

  test("a query whose escapes are not UTF-8: 400 invalid_unicode", async () => {
    const ctx = await createTestContext();
    for (const q of ["search=%ED%A0%80", "search=%FF", "page=1&search=%E0%A4"]) {
      const r = await ctx.get(`/v1/api/contact/list?${q}`);
      expect([q, r.status, r.body.data.error_code]).toEqual([q, 400, "invalid_unicode"]);
    }
    expect(expectEnvelope(await ctx.get("/v1/api/contact/list?search=%C3%A9"), 200).status_id).toBe(200);
  });
});

describe("disk full", () => {
  function fill(ctx: TestContext) {
    const { page_count } = ctx.db!.$client.query("PRAGMA page_count").get() as { page_count: number };
    ctx.db!.$client.run(`PRAGMA max_page_count = ${page_count}`);
  }

  sqliteOnly("a send on a full disk: 507 storage_full, nothing stored, /health says full", async () => {
    const ctx = await createTestContext();
    await ctx.topUp(1000);
    const phone = await ctx.phone();
    const count = () => (ctx.db!.$client.query("SELECT count(*) AS n FROM notification").get() as { n: number }).n;
    expect(expectEnvelope(await ctx.get("/health", { key: null }), 200).data.database).toBe("ok");
    fill(ctx);
    let r: Awaited<ReturnType<typeof ctx.post>> | undefined;
    // Fill the last free pages; once SQLite says SQLITE_FULL every send must be a clean 507.
    for (let i = 0; i < 200; i++) {
      r = await ctx.post("/v1/api/sms/send", {
        recipient_contact: "+15005550006",
        message: `hello ${i} ${"x".repeat(300)}`,
        device_id: phone.device_id,
      });
      if (r.status !== 200) break;
    }
    const before = count();
    const body = expectEnvelope(r!, 507);
    expect(body.data.error_code).toBe("storage_full");
    const again = await ctx.post("/v1/api/sms/send", {
      recipient_contact: "+15005550006",
      message: "y".repeat(400),
      device_id: phone.device_id,
    });
    expect(expectEnvelope(again, 507).data.error_code).toBe("storage_full");
    expect(count()).toBe(before);
    const health = expectEnvelope(await ctx.get("/health", { key: null }), 507);
    expect(health.data).toMatchObject({ error_code: "storage_full", database: "full" });
    // Room again: the first send that is stored brings /health back at once; the failure stays as history.
    ctx.db!.$client.run("PRAGMA max_page_count = 1073741823");
    expectEnvelope(
      await ctx.post("/v1/api/sms/send", { recipient_contact: "+15005550006", message: "room again", device_id: phone.device_id }),
      200,
    );
    const back = expectEnvelope(await ctx.get("/health", { key: null }), 200).data;
    expect(back).toMatchObject({ database: "ok", last_full_at: health.data.last_full_at });
  });

  test("the CLI on a full disk prints one line, no stack, and exits 1", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "pigeon-full-"));
    const env = { PIGEON_DATA_DIR: dataDir };
    (await openRuntime(env)).close();
    const errors: string[] = [];
    const spy = spyOn(console, "error").mockImplementation((...args: unknown[]) => void errors.push(args.map(String).join(" ")));
    const logSpy = spyOn(console, "log").mockImplementation(() => {});
    try {
      const code = await runCli(["workspaces", "create", "--name", "W".repeat(20_000)], async () => {
        const rt = await openRuntime(env);
        const sqlite = rt.services.db!.$client;
        const { page_count } = sqlite.query("PRAGMA page_count").get() as { page_count: number };
        sqlite.run(`PRAGMA max_page_count = ${page_count + 2}`);
        // Use up the last pages, so the command's own write is the one SQLite refuses.
        sqlite.run("CREATE TEMP TABLE IF NOT EXISTS t (x)");
        sqlite.run("CREATE TABLE filler (x)");
        try {
          for (let i = 0; i < 100; i++) sqlite.run("INSERT INTO filler VALUES (randomblob(2000))");
        } catch {
          // SQLITE_FULL: the disk is now "full".
        }
        return rt;
      });
      expect(code).toBe(1);
    } finally {
      spy.mockRestore();
      logSpy.mockRestore();
    }
    expect(errors.length).toBe(1);
    expect(errors[0]).toContain("disk");
    expect(errors[0]).not.toContain("\n");
    expect(errors[0]).not.toContain("at ");
  });
});

describe("internal errors in the log", () => {
  async function appLoggingTo(level: "info" | "debug") {
    // The errors the server's own logger writes (the binary's, with its stream swapped for this list).
    const lines: string[] = [];
    const logger = createLogger({ level, format: "text", sink: (line, at) => void (at === "error" && lines.push(line)) });
    const db = openDatabase(":memory:");
    migrate(db);
    // No log function given: the services' own, as the binary runs it.
    const services = createServices({ db, config: testConfig({ logLevel: level }), clock: new ManualClock(), logger });
    await services.accounts.seed();
    const boot = (await services.accounts.bootstrap())!;
    const key = await services.accounts.createKey("k", boot.workspace.id);
    db.$client.run("DROP TABLE contact");
    const app = createApp(services);
    const call = () =>
      app.handle(
        new Request("http://localhost/v1/api/contact/list", {
          headers: { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret },
        }),
      );
    return { lines, call };
  }

  test("one line with the request id, no stack; the 500 and X-Request-Id carry the same id", async () => {
    const { lines, call } = await appLoggingTo("info");
    const res = await call();
    expect(res.status).toBe(500);
    const id = res.headers.get("x-request-id")!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(((await res.json()) as { data: { request_id: string } }).data.request_id).toBe(id);
    expect(lines.length).toBe(1);
    expect(lines[0]).toContain(id);
    expect(lines[0]).toContain("no such table: contact");
    expect(lines[0]).not.toContain("\n");
    expect(lines[0]).not.toMatch(/\bat .*\(|\.ts:\d+/);
    expect(lines[0]!.length).toBeLessThan(300);
  });

  test("PIGEON_LOG_LEVEL=debug adds the stack", async () => {
    const { lines, call } = await appLoggingTo("debug");
    const res = await call();
    const id = res.headers.get("x-request-id")!;
    expect(lines.length).toBe(1);
    expect(lines[0]).toContain(id);
    expect(lines[0]).toContain("\n    at ");
  });

  test("every answer carries an X-Request-Id, distinct per request", async () => {
    const ctx = await createTestContext();
    const a = await ctx.get("/health", { key: null });
    const b = await ctx.get("/v1/api/contact/list");
    const c = await ctx.get("/v1/api/contact/list", { key: null });
    const ids = [a, b, c].map((r) => r.headers.get("x-request-id"));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(ids).size).toBe(3);
  });
});
