// The server's log (src/lib/log.ts). The logger alone: levels, the two formats, stacks only at
// debug, the access log's rules. Then the compiled binary under PIGEON_LOG_FORMAT=json and
// PIGEON_LOG_LEVEL=debug: every line on stdout and stderr is a JSON object, the access log names
// route patterns and leaves /health out, and after a run through everything that hands out or
// takes a secret (the first start, dashboard setup and sign-in, key creation and rotation, webhook
// subscriptions, phone pairing, SMSGate tokens, provider calls that fail and quote the credentials
// back) no secret it saw is anywhere in the log but the first start's banner. And the default
// text format still reads as text.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { accessLog, createLogger, redact } from "../../src/lib/log";
import type { LogLevel } from "../../src/config";
import { waitFor } from "../helpers/api";
import { isolatedBinary, runCommand, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { bakeryWaba, startFakeChatApp, type FakeChatApp } from "../helpers/fake-chatapp";
import { startReceiver } from "../helpers/receiver";
import { RECIPIENT, CLOUD_NUMBER } from "../helpers/numbers";

/** A logger whose lines are kept, with their levels. */
function captured(level: LogLevel, format: "text" | "json") {
  const lines: { line: string; level: LogLevel }[] = [];
  const logger = createLogger({ level, format, sink: (line, at) => lines.push({ line, level: at }) });
  return { logger, lines, text: () => lines.map((l) => l.line).join("\n") };
}

/** An error whose message has a second line, as a failed query's has (its values). */
function queryError(): Error {
  return new TypeError("the query failed\nparams: sk_ThisMustNotBeLoggedEvenAtDebug0000000");
}

describe("the logger", () => {
  test("each level writes itself and the levels before it; the start lines are written at any level", () => {
    const { logger, lines } = captured("warn", "text");
    logger.error("e");
    logger.warn("w");
    logger.info("i");
    logger.debug("d");
    logger.write({ level: "info", msg: "listening", text: "Pigeon listening", always: true });
    expect(lines).toEqual([
      { line: "[pigeon] e", level: "error" },
      { line: "[pigeon] w", level: "warn" },
      { line: "Pigeon listening", level: "info" },
    ]);
    expect(["error", "warn", "info", "debug"].map((l) => logger.enabled(l as LogLevel))).toEqual([true, true, false, false]);
  });

  test("log(message, error?, fields?) is an error with an error and info without", () => {
    const { logger, lines } = captured("debug", "json");
    logger.log("backup written");
    logger.log("task x failed", new Error("boom"), { task: "x" });
    expect(lines.map((l) => l.level)).toEqual(["info", "error"]);
    expect(JSON.parse(lines[1].line)).toMatchObject({
      level: "error",
      msg: "task x failed",
      task: "x",
      error: { name: "Error", message: "boom" },
    });
  });

  test("json: one object a line, time level and msg first, then the fields and the error; no stack below debug", () => {
    const { logger, lines } = captured("info", "json");
    logger.error(
      "task notifications:dispatch failed",
      { task: "notifications:dispatch", notification_id: 7, device_id: undefined },
      queryError(),
    );
    const line = JSON.parse(lines[0].line);
    expect(Object.keys(line)).toEqual(["time", "level", "msg", "task", "notification_id", "error"]);
    expect(new Date(line.time).toISOString()).toBe(line.time);
    expect(line.error).toEqual({ name: "TypeError", message: "the query failed" });
    expect(lines[0].line).not.toContain("\n");
    // A field cannot pass itself off as the line's own keys.
    logger.info("hello", { level: "debug", msg: "other" });
    expect(JSON.parse(lines[1].line)).toMatchObject({ level: "info", msg: "hello" });
  });

  test("the stack's frames only at debug, never the message's later lines", () => {
    for (const format of ["json", "text"] as const) {
      const info = captured("info", format);
      const debug = captured("debug", format);
      for (const { logger } of [info, debug]) logger.log("internal error on GET /v1/api/contact/list (request r1)", queryError());
      expect(info.text()).not.toContain(" at ");
      expect(debug.text()).toContain(" at ");
      for (const c of [info, debug]) {
        expect(c.text()).toContain("the query failed");
        expect(c.text()).not.toContain("ThisMustNotBeLogged");
      }
    }
    const text = captured("info", "text");
    text.logger.log("task x failed", new Error("boom\nmore"));
    expect(text.text()).toBe("[pigeon] task x failed: Error: boom");
  });

  test("what looks like a credential in a message is masked", () => {
    expect(redact("cannot reach postgres://pigeon:hunter2hunter@db:5432/pigeon")).toBe("cannot reach postgres://***@db:5432/pigeon");
    expect(redact("sent Authorization: Bearer abcdefgh12345678 and Basic dXNlcjpwYXNzd29yZA==")).toBe(
      "sent Authorization: Bearer *** and Basic ***",
    );
    expect(redact("GET /debug_token?input_token=EAAB1234&access_token=x&password=p")).toBe(
      "GET /debug_token?input_token=***&access_token=***&password=***",
    );
    expect(redact("key sk_0123456789abcdefghijABCDEFGHIJ0123456789 and whsec_0123456789abcdef0123")).toBe("key sk_*** and whsec_***");
    expect(redact("GET /v1/api/send 200")).toBe("GET /v1/api/send 200");
  });

  test("the access log: a line at info a request, not for /health or /metrics, duration to 0.1 ms", () => {
    const done = { method: "GET", status: 200, durationMs: 1.2549, requestId: "r-1" };
    const json = captured("info", "json");
    const log = accessLog(json.logger);
    for (const route of ["/health", "/metrics", "/v1/api/notification/:notification_id"]) log({ ...done, route });
    expect(json.lines).toHaveLength(1);
    const line = JSON.parse(json.lines[0].line);
    expect(line).toMatchObject({
      level: "info",
      request_id: "r-1",
      method: "GET",
      route: "/v1/api/notification/:notification_id",
      status: 200,
      duration_ms: 1.3,
    });
    const text = captured("info", "text");
    accessLog(text.logger)({ ...done, route: "/v1/api/notification/:notification_id" });
    expect(text.text()).toBe("[pigeon] GET /v1/api/notification/:notification_id 200 1.3 ms (request r-1)");
    const quiet = captured("warn", "json");
    accessLog(quiet.logger)({ ...done, route: "/v1/api/send" });
    expect(quiet.lines).toEqual([]);
  });
});

const EMAIL = "owner@example.com";
const PASSWORD = "correct horse battery staple 42";
const WRONG_PASSWORD = "not the password at all 17";
const APP_SECRET = "json-logs-app-secret-5d1f";
const VERIFY_TOKEN = "json-logs-verify-token-9c2e";
const CHAT_TOKEN = `EAAG${crypto.randomUUID().replaceAll("-", "")}`;
const CLOUD_SID = "AC0000000000000000000000000000abcd";
const CLOUD_TOKEN = `cloudtok${crypto.randomUUID().replaceAll("-", "")}`;
const HOOK_TOKEN = `hooktok${crypto.randomUUID().replaceAll("-", "")}`;

describe("PIGEON_LOG_FORMAT=json at debug on the compiled binary", () => {
  let server: RunningServer;
  let chat: FakeChatApp;
  let cloud: ReturnType<typeof Bun.serve>;
  let receiver: ReturnType<typeof startReceiver>;
  let key: Credentials;
  let bin: string;
  const env: Record<string, string> = {
    PIGEON_DATA_DIR: tempDir(),
    PIGEON_LOG_FORMAT: "json",
    PIGEON_LOG_LEVEL: "debug",
    PIGEON_ALLOW_PRIVATE_WEBHOOKS: "1",
    PIGEON_CHATAPP_APP_SECRET: APP_SECRET,
    PIGEON_CHATAPP_VERIFY_TOKEN: VERIFY_TOKEN,
  };
  /** Every secret the run saw, by what it is. */
  const secrets = new Map<string, string>([
    ["dashboard password", PASSWORD],
    ["a wrong password", WRONG_PASSWORD],
    ["chat-app app secret", APP_SECRET],
    ["chat-app verify token", VERIFY_TOKEN],
    ["chat-app access token", CHAT_TOKEN],
    ["cloud auth token", CLOUD_TOKEN],
    ["cloud Basic credentials", Buffer.from(`${CLOUD_SID}:${CLOUD_TOKEN}`).toString("base64")],
    ["token in a webhook URL", HOOK_TOKEN],
  ]);
  const saw = (what: string, value: string | null | undefined) => {
    expect({ what, value: typeof value === "string" && value.length >= 6 }).toEqual({ what, value: true });
    secrets.set(what, value!);
  };
  const lines: { stream: string; raw: string; json: Record<string, any> }[] = [];
  let cloudNotification = 0;
  let chatNotification = 0;

  beforeAll(async () => {
    bin = isolatedBinary();
    chat = startFakeChatApp({ appSecret: APP_SECRET, accessToken: CHAT_TOKEN, wabas: [bakeryWaba()] });
    // A cloud provider that refuses every call and quotes the credentials it was sent back.
    cloud = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) =>
        Response.json(
          { code: 20003, message: `Authenticate: ${CLOUD_TOKEN} (${req.headers.get("authorization")}) is not valid`, status: 401 },
          { status: 401 },
        ),
    });
    receiver = startReceiver();
    receiver.answer(() => new Response("nope", { status: 500 }));
    server = await startServer(bin, { ...env, PIGEON_CHATAPP_GRAPH_URL: chat.url });
    key = server.initialKey!;
    saw("first API key", key.api_key);
    saw("first API secret", key.api_secret);
    await exercise();
    expect(await server.stop("SIGTERM")).toBe(0);
    for (const stream of ["stdout", "stderr"] as const)
      for (const raw of server[stream]()
        .split("\n")
        .filter((l) => l !== "")) {
        let json: Record<string, any> = {};
        try {
          json = JSON.parse(raw);
        } catch {
          json = { unparsed: true };
        }
        lines.push({ stream, raw, json });
      }
  }, 120_000);

  afterAll(async () => {
    if (server?.proc.exitCode === null) await server.stop("SIGKILL");
    chat?.stop();
    void cloud?.stop(true);
    void receiver?.stop();
  });

  const api = (path: string, body?: unknown) => server.api(path, key, body);

  /** A dashboard form post with `cookie`; not following the redirect. */
  const post = (path: string, fields: Record<string, string>, cookie: string) =>
    server.fetch(path, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: new URLSearchParams(fields).toString(),
      redirect: "manual",
    });
  const get = (path: string, cookie = "") => server.fetch(path, { headers: cookie ? { cookie } : {}, redirect: "manual" });
  const cookieOf = (res: Response, name: string) => new RegExp(`${name}=([^;]+)`).exec(res.headers.getSetCookie().join("\n"))?.[1];
  const csrfOn = async (path: string, cookie: string) => /name="_csrf" value="([^"]+)"/.exec(await (await get(path, cookie)).text())?.[1];

  /** Everything that hands out or takes a secret, through the running binary. */
  async function exercise() {
    // The setup link from the first start, then signing out and in again (once with a wrong password).
    const setupUrl = new URL(setupLinkOf(server.output()));
    const setupToken = setupUrl.searchParams.get("token");
    saw("setup token", setupToken);
    const form = await get(setupUrl.pathname + setupUrl.search);
    expect(form.status).toBe(200);
    const pre = cookieOf(form, "pigeon_presession");
    saw("pre-session cookie", pre);
    const setup = await post(
      "/dashboard/setup",
      { _csrf: pre!, token: setupToken!, email: EMAIL, password: PASSWORD, confirm: PASSWORD },
      `pigeon_presession=${pre}`,
    );
    expect(setup.status).toBe(303);
    saw("first session", cookieOf(setup, "pigeon_session"));
    const firstCookie = `pigeon_session=${cookieOf(setup, "pigeon_session")}`;
    const firstCsrf = await csrfOn("/dashboard/keys", firstCookie);
    saw("first session's CSRF token", firstCsrf);
    expect((await post("/dashboard/sign-out", { _csrf: firstCsrf! }, firstCookie)).status).toBe(303);
    const signInForm = await get("/dashboard/sign-in");
    const pre2 = cookieOf(signInForm, "pigeon_presession");
    saw("second pre-session cookie", pre2);
    const refused = await post("/dashboard/sign-in", { _csrf: pre2!, email: EMAIL, password: WRONG_PASSWORD }, `pigeon_presession=${pre2}`);
    expect(refused.status).toBe(401);
    const signedIn = await post("/dashboard/sign-in", { _csrf: pre2!, email: EMAIL, password: PASSWORD }, `pigeon_presession=${pre2}`);
    expect(signedIn.status).toBe(303);
    saw("session", cookieOf(signedIn, "pigeon_session"));
    const cookie = `pigeon_session=${cookieOf(signedIn, "pigeon_session")}`;

    // A key created and rotated on the dashboard; the SMSGate signing key its page shows.
    const csrf = await csrfOn("/dashboard/keys", cookie);
    saw("CSRF token", csrf);
    expect((await post("/dashboard/keys", { _csrf: csrf!, name: "Logged key" }, cookie)).status).toBe(303);
    const created = await (await get("/dashboard/keys", cookie)).text();
    saw("created API key", /Key: <code>(pk_\w+)<\/code>/.exec(created)?.[1]);
    saw("created API secret", /id="new-secret">(sk_\w+)</.exec(created)?.[1]);
    saw("SMSGate signing key", /id="smsgate-signing-key">([^<]+)</.exec(created)?.[1]);
    const newest = Math.max(...[...created.matchAll(/\/dashboard\/keys\/(\d+)\/rotate/g)].map((m) => Number(m[1])));
    expect((await post(`/dashboard/keys/${newest}/rotate`, { _csrf: csrf! }, cookie)).status).toBe(303);
    saw("rotated API secret", /id="new-secret">(sk_\w+)</.exec(await (await get("/dashboard/keys", cookie)).text())?.[1]);

    // A webhook subscription (its URL carries a token) and its secret rotated.
    const hook = await api("/v1/api/webhook/create", { url: `${receiver.url}?token=${HOOK_TOKEN}`, events: "*" });
    expect(hook.status).toBe(200);
    saw("webhook secret", hook.body.data.secret);
    const rotated = await api("/v1/api/webhook/update", { webhook_id: hook.body.data.webhook_id, rotate_secret: true });
    saw("rotated webhook secret", rotated.body.data.secret);

    // A phone paired with the pairing token, its settings read, a second one paired with its login.
    const pairing = (await api("/v1/api/device/pairing")).body.data;
    saw("pairing token", pairing.pairing_token);
    const phone = (await (
      await server.fetch("/mobile/v1/device", {
        method: "POST",
        headers: { authorization: `Bearer ${pairing.pairing_token}` },
        body: JSON.stringify({ name: "Logged phone" }),
      })
    ).json()) as { token: string; login: string; password: string };
    saw("phone token", phone.token);
    saw("phone login", phone.login);
    saw("phone password", phone.password);
    const settings = await (await server.fetch("/mobile/v1/settings", { headers: { authorization: `Bearer ${phone.token}` } })).json();
    saw("phone signing key", settings.webhooks.signing_key);
    const basic = `Basic ${btoa(`${phone.login}:${phone.password}`)}`;
    saw("phone Basic credentials", basic.slice(6));
    const second = (await (
      await server.fetch("/mobile/v1/device", {
        method: "POST",
        headers: { authorization: basic },
        body: JSON.stringify({ name: "Second" }),
      })
    ).json()) as { token: string };
    saw("second phone token", second.token);

    // SMSGate's Bearer tokens, issued with the key and used.
    const issued = await server.fetch("/3rdparty/v1/auth/token", {
      method: "POST",
      headers: { authorization: `Basic ${btoa(`${key.api_key}:${key.api_secret}`)}` },
      body: JSON.stringify({ scopes: ["devices:list"] }),
    });
    expect(issued.status).toBe(201);
    const tokens = (await issued.json()) as { access_token: string; refresh_token: string };
    saw("SMSGate access token", tokens.access_token);
    saw("SMSGate refresh token", tokens.refresh_token);
    expect((await server.fetch("/3rdparty/v1/devices", { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(200);

    // A cloud number whose provider refuses the call and quotes the credentials back.
    expect((await runCommand(bin, ["credits", "add", "--workspace", "1", "--amount", "100"], env)).code).toBe(0);
    const registered = await api("/v1/api/device/batch/register", {
      devices: [
        {
          name: "Logged cloud",
          kind: "cloud",
          cloud: {
            account_sid: CLOUD_SID,
            auth_token: CLOUD_TOKEN,
            from_number: CLOUD_NUMBER,
            base_url: `http://127.0.0.1:${cloud.port}`,
          },
        },
      ],
    });
    expect(registered.status).toBe(200);
    const sent = await api("/v1/api/sms/send", {
      recipient_contact: RECIPIENT,
      message: "hello from the log test",
      device_id: registered.body.data.devices[0].device_id,
    });
    expect(sent.status).toBe(200);
    cloudNotification = sent.body.data.notification_id;

    // A chat-app number whose platform refuses a send and quotes the token back.
    expect((await api("/v1/api/chatapp/connect", { access_token: CHAT_TOKEN })).status).toBe(200);
    chat.failNext(131009, { title: `Parameter value is not valid for token ${CHAT_TOKEN}`, details: `token ${CHAT_TOKEN} refused` });
    const template = (await api("/v1/api/template/list?channel=chatapp")).body.data.templates.find(
      (t: { name: string }) => t.name === "order_ready",
    );
    const chatSent = await api("/v1/api/chatapp/send", {
      recipient_contact: RECIPIENT,
      template_id: template.template_id,
      variables: ["Ada", "A-7"],
    });
    expect(chatSent.status).toBe(200);
    chatNotification = chatSent.body.data.notification_id;

    for (const id of [cloudNotification, chatNotification]) {
      const failed = await waitFor(`notification ${id} to fail`, async () => {
        const n = (await api(`/v1/api/notification/${id}`)).body.data;
        return n.status === "failed" ? n : null;
      });
      // What the provider quoted back is not in the notification's log either.
      expect(JSON.stringify(failed)).not.toContain(CLOUD_TOKEN);
      expect(JSON.stringify(failed)).not.toContain(CHAT_TOKEN);
      expect(JSON.stringify(failed)).toContain("***");
    }
    await waitFor("a webhook delivery attempt", () => receiver.received.length > 0);
    for (let i = 0; i < 3; i++) expect((await server.fetch("/health")).status).toBe(200);
  }

  function setupLinkOf(output: string): string {
    const line = output.split("\n").find((l) => l.includes('"setup_url"'));
    return JSON.parse(line!).setup_url;
  }

  const banner = () => lines.filter((l) => "api_secret" in l.json || "setup_url" in l.json);
  /** The lines where `value` appears, by their place in `lines`. */
  const linesWith = (value: string) => lines.flatMap((l, i) => (l.raw.includes(value) ? [i] : []));

  test("every line of stdout and stderr is a JSON object with time, level and msg", () => {
    expect(lines.length).toBeGreaterThan(30);
    expect(lines.filter((l) => l.stream === "stderr").length).toBeGreaterThan(0);
    const bad = lines.filter(
      (l) =>
        typeof l.json.time !== "string" ||
        Number.isNaN(Date.parse(l.json.time)) ||
        new Date(l.json.time).toISOString() !== l.json.time ||
        !["error", "warn", "info", "debug"].includes(l.json.level) ||
        typeof l.json.msg !== "string",
    );
    expect(bad.map((l) => l.raw)).toEqual([]);
    expect(lines.some((l) => l.json.level === "debug")).toBe(true);
    expect(lines.some((l) => l.json.msg.startsWith("Pigeon stopping"))).toBe(true);
  });

  test("the first start's banner is JSON too, with the key, the secret and the setup link as fields", () => {
    const [keyLine, setupLine] = banner();
    expect(keyLine.json).toMatchObject({ level: "info", api_key: key.api_key, api_secret: key.api_secret, workspace_id: 1 });
    expect(setupLine.json.setup_url).toContain(`/dashboard/setup?token=${secrets.get("setup token")}`);
    expect(banner()).toHaveLength(2);
    expect(lines.some((l) => /^Pigeon \S+ listening on http:\/\/127\.0\.0\.1:\d+$/.test(l.json.msg))).toBe(true);
  });

  test("access lines carry request_id, method, route, status and duration_ms, the route as its pattern; none for /health", () => {
    const access = lines.filter((l) => "request_id" in l.json && "route" in l.json);
    expect(access.length).toBeGreaterThan(20);
    // (Checked by hand: toMatchObject with expect.any() writes the matchers into the object in this Bun.)
    const shapes = access.map(({ json }) => ({
      level: json.level,
      request_id: /^[0-9a-f-]{36}$/.test(json.request_id),
      method: /^[A-Z]+$/.test(json.method),
      status: Number.isInteger(json.status),
      duration_ms: typeof json.duration_ms === "number" && json.duration_ms >= 0,
    }));
    expect(shapes.filter((s) => !(s.level === "info" && s.request_id && s.method && s.status && s.duration_ms))).toEqual([]);
    const byId = access.filter((l) => l.json.route === "/v1/api/notification/:notification_id");
    expect(byId.length).toBeGreaterThan(0);
    expect(byId[0].json).toMatchObject({ method: "GET", status: 200 });
    expect(access.filter((l) => l.raw.includes(`/notification/${cloudNotification}"`))).toEqual([]);
    expect(access.some((l) => l.json.route === "/dashboard/sign-in" && l.json.status === 401)).toBe(true);
    expect(access.some((l) => l.json.route === "/mobile/v1/device" && l.json.method === "POST")).toBe(true);
    expect(lines.filter((l) => l.json.route === "/health" || l.raw.includes("/health"))).toEqual([]);
  });

  test("a failed provider call is logged at debug with its notification and device, the credentials it quoted left out", () => {
    for (const id of [cloudNotification, chatNotification]) {
      const traced = lines.filter((l) => l.json.level === "debug" && l.json.notification_id === id);
      expect(traced.length).toBeGreaterThan(0);
      expect(traced[0].json.outcome).toBe("permanent");
      expect(Number.isInteger(traced[0].json.device_id)).toBe(true);
      expect(traced[0].json.msg).toContain("***");
    }
  });

  test("no secret it saw is in any line, but the first key and setup link in the banner", () => {
    // The scan reads the log: it finds the first key where it belongs.
    expect(linesWith(key.api_secret).map((i) => lines[i])).toEqual([banner()[0]]);
    expect(linesWith(secrets.get("setup token")!).map((i) => lines[i])).toEqual([banner()[1]]);
    const allowed = new Set(banner().map((l) => lines.indexOf(l)));
    const bannerOnly = new Set(["first API key", "first API secret", "setup token"]);
    const leaks = [...secrets].flatMap(([what, value]) =>
      linesWith(value)
        .filter((i) => !(bannerOnly.has(what) && allowed.has(i)))
        .map((i) => `${what} in: ${lines[i].raw}`),
    );
    expect(secrets.size).toBeGreaterThan(25);
    expect(leaks).toEqual([]);
  });
});

test("a server that cannot start says why in a JSON line under PIGEON_LOG_FORMAT=json", async () => {
  const failed = await runCommand(isolatedBinary(), ["serve"], {
    PIGEON_DATA_DIR: tempDir(),
    PIGEON_LOG_FORMAT: "json",
    PIGEON_PORT: "99999",
  });
  expect(failed.code).toBe(2);
  expect(failed.stdout).toBe("");
  const line = JSON.parse(failed.stderr.trim());
  expect(line.level).toBe("error");
  expect(line.msg).toStartWith("configuration error: PIGEON_PORT");
});

describe("the default text format", () => {
  test("reads as text: the listening line and an access line, neither of them JSON", async () => {
    const server = await startServer(isolatedBinary(), { PIGEON_DATA_DIR: tempDir() });
    try {
      expect((await server.api("/v1/api/notification/999999", server.initialKey!)).status).toBe(404);
      await waitFor("the access line", () => server.output().includes("GET /v1/api/notification/:notification_id 404"));
    } finally {
      expect(await server.stop("SIGTERM")).toBe(0);
    }
    const lines = server.output().split("\n");
    const access = lines.find((l) => l.includes("GET /v1/api/notification/:notification_id 404"))!;
    expect(access).toMatch(/^\[pigeon\] GET \/v1\/api\/notification\/:notification_id 404 [\d.]+ ms \(request [0-9a-f-]{36}\)$/);
    const listening = lines.find((l) => l.includes(" listening on "))!;
    expect(listening).toMatch(/^Pigeon \S+ listening on http:\/\/127\.0\.0\.1:\d+ \(data: .+\)$/);
    expect(lines).toContain("Pigeon stopping (SIGTERM)");
    for (const line of [access, listening]) expect(() => JSON.parse(line)).toThrow();
  }, 30_000);
});
