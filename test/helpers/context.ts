// An app on a fresh in-memory database with a manual clock and a ready API key, and a small
// client that calls app.handle() the way a real HTTP client would.
import type { Executor } from "../../src/db/storage";
import { test } from "bun:test";
import { dirname, join } from "node:path";
import { createApp } from "../../src/app";
import { ManualClock } from "../../src/clock";
import { type Config, loadConfig } from "../../src/config";
import { openDatabase } from "../../src/db/client";
import { migrate } from "../../src/db/migrate";
import { connectPostgres } from "../../src/db/postgres-storage";
import type { CreatedKey } from "../../src/modules/accounts/service";
import { createLogger } from "../../src/lib/log";
import { createServices, type Deps } from "../../src/services";
import { postgresCluster } from "./postgres";
import { CLOUD_NUMBER } from "./numbers";

/**
 * The config a test server runs with: what loadConfig gives an empty environment (the same
 * defaults a real server starts from), with what a test differs in on top, then the test's own
 * overrides.
 */
export function testConfig(overrides: Partial<Config> = {}): Config {
  const defaults = loadConfig({});
  return {
    ...defaults,
    port: 0,
    host: "127.0.0.1",
    dataDir: ":memory:",
    dbPath: ":memory:",
    // Beside a database file, as in a real data directory; an in-memory database keeps it in memory.
    keyFile: overrides.dbPath && overrides.dbPath !== ":memory:" ? join(dirname(overrides.dbPath), "pigeon.key") : ":memory:",
    publicUrl: "https://pigeon.test",
    // No platform to reach unless a test starts the fake; a secret and a token so webhooks can be signed.
    chatapp: { ...defaults.chatapp, graphUrl: "http://127.0.0.1:1", appSecret: "test-app-secret", verifyToken: "test-verify-token" },
    // The tests' receivers and fakes listen on 127.0.0.1.
    allowPrivateWebhooks: true,
    ...overrides,
  };
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface CallOptions {
  body?: unknown;
  /** A raw body sent as is (for malformed JSON tests). */
  raw?: string;
  headers?: Record<string, string>;
  /** Credentials to send; null sends none. Defaults to the context's key. */
  key?: CreatedKey | null;
  query?: Record<string, string | number | boolean>;
}

/** The database back ends the tests can run on (PIGEON_TEST_BACKEND, default sqlite). */
export type Backend = "sqlite" | "postgres";

export function testBackend(): Backend {
  const backend = process.env.PIGEON_TEST_BACKEND ?? "sqlite";
  if (backend !== "sqlite" && backend !== "postgres") throw new Error(`PIGEON_TEST_BACKEND=${backend}: sqlite or postgres`);
  return backend;
}

/** A test of SQLite itself (its query plans, its PRAGMAs): it means nothing on PostgreSQL, and is skipped there. */
export const sqliteOnly = test.skipIf(testBackend() === "postgres");

/**
 * A test that does not pass on PostgreSQL yet: skipped there, and named in the log with what
 * stands in the way, until the PostgreSQL work reaches it (each mark is removed with its fix).
 */
export function notYetOnPostgres(reason: string) {
  const skip = testBackend() === "postgres";
  if (skip) console.log(`not yet on PostgreSQL: ${reason}`);
  return test.skipIf(skip);
}

/**
 * An app on a fresh database with a manual clock and a ready API key. Async, and given its back
 * end, so the same tests can run on each database Pigeon supports.
 */
export async function createTestContext(
  opts: {
    config?: Partial<Config>;
    dbPath?: string;
    channelTimeoutMs?: number;
    fastRoutes?: boolean;
    backend?: Backend;
    /** PostgreSQL: join this database (another context's `databaseUrl`), as a second server would. */
    databaseUrl?: string;
    /** Told of every answered request, as the access log and the metrics are. */
    requestFinished?: Deps["requestFinished"];
    /** The modules to run (default MODULES): a test adds a throwaway one. */
    modules?: Deps["modules"];
  } = {},
) {
  const backend = opts.databaseUrl ? "postgres" : (opts.backend ?? testBackend());
  // On PostgreSQL, a fresh migrated database of its own (a file path, for a "restart", stays SQLite's).
  const databaseUrl =
    backend === "postgres" && !opts.dbPath ? (opts.databaseUrl ?? (await (await postgresCluster()).migratedDatabase())) : null;
  const postgres = databaseUrl ? connectPostgres(databaseUrl, { max: 4, idleSeconds: 2 }) : null;
  const db = postgres ? null : openDatabase(opts.dbPath ?? ":memory:");
  if (db) migrate(db);
  const clock = new ManualClock();
  // A database on disk keeps its secrets key (pigeon.key) beside it, so a "restart" can read them.
  const config = testConfig({ ...(opts.dbPath ? { dbPath: opts.dbPath, dataDir: dirname(opts.dbPath) } : {}), ...opts.config });
  const logs: string[] = [];
  const services = createServices({
    db,
    postgres: postgres ?? undefined,
    config,
    clock,
    channelTimeoutMs: opts.channelTimeoutMs ?? 2000,
    requestFinished: opts.requestFinished,
    modules: opts.modules,
    log: (m, e) => logs.push(`${m} ${e instanceof Error ? e.stack : (e ?? "")}`),
    // The other lines (the access log, warnings, debug) are kept with them rather than printed.
    logger: createLogger({ level: config.logLevel, format: config.logFormat, sink: (line) => logs.push(line) }),
  });
  await services.accounts.seed();
  // A database that already has an owner (a "restart" on the same file) keeps it.
  const boot =
    (await services.accounts.bootstrap()) ??
    (await (async () => {
      const workspace = await services.accounts.defaultWorkspace();
      return { workspace, account: await services.accounts.getAccount(workspace.accountId) };
    })());
  const key = await services.accounts.createKey("test key", boot.workspace.id);
  const app = createApp(services, { fastRoutes: opts.fastRoutes });

  async function call(method: string, path: string, o: CallOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const k = o.key === undefined ? key : o.key;
    if (k) {
      headers.authorization ??= `Bearer ${k.api_key}`;
      headers["x-api-secret"] ??= k.api_secret;
    }
    let body: string | undefined;
    if (o.raw !== undefined) body = o.raw;
    else if (o.body !== undefined) body = JSON.stringify(o.body);
    if (body !== undefined) headers["content-type"] ??= "application/json";
    const qs = o.query ? `?${new URLSearchParams(Object.entries(o.query).map(([a, b]) => [a, String(b)]))}` : "";
    const res = await app.handle(new Request(`http://localhost${path}${qs}`, { method, headers, body }));
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  /** Another workspace (same owner account) with its own key. */
  async function otherWorkspace(name = "Other") {
    const ws = await services.accounts.createWorkspace(name);
    return { workspace: ws, key: await services.accounts.createKey(`${name} key`, ws.id) };
  }

  /** A paired phone that reported just now (so it is online). */
  async function phone(name = "Phone", key = ctxKey()) {
    const r = await call("POST", "/v1/api/device/batch/register", { body: { devices: [{ name }] }, key });
    const device = r.body.data.devices[0];
    await services.storage.run("UPDATE device SET last_seen_at = ? WHERE id = ?", [clock.now(), device.device_id]);
    return device as { device_id: number; device_token: string; external_id: string };
  }

  /** A cloud number whose provider is `fake`. */
  async function cloudDevice(fake: { url: string; accountSid: string; authToken: string }, extra: Record<string, unknown> = {}) {
    const r = await call("POST", "/v1/api/device/batch/register", {
      body: {
        devices: [
          {
            name: "Cloud number",
            kind: "cloud",
            cloud: { account_sid: fake.accountSid, auth_token: fake.authToken, from_number: CLOUD_NUMBER, base_url: fake.url },
            ...extra,
          },
        ],
      },
    });
    if (r.status !== 200) throw new Error(r.text);
    return r.body.data.devices[0] as { device_id: number };
  }

  function topUp(amount: number, workspaceId = boot.workspace.id) {
    return services.credits.topUp(workspaceId, amount, "test");
  }

  const ctxKey = () => key;

  return {
    db,
    /** The PostgreSQL database this context runs on (null on SQLite). */
    databaseUrl,
    /**
     * The database as a test reads and changes it directly: SQL through the storage seam's executor,
     * so the same test runs on every back end (writes are units of work of their own).
     */
    sql: services.storage as Executor,
    clock,
    config,
    services,
    app,
    key,
    account: boot.account,
    workspace: boot.workspace,
    logs,
    call,
    get: (path: string, o?: CallOptions) => call("GET", path, o),
    post: (path: string, body?: unknown, o?: CallOptions) => call("POST", path, { ...o, body }),
    otherWorkspace,
    phone,
    cloudDevice,
    topUp,
  };
}

export type TestContext = Awaited<ReturnType<typeof createTestContext>>;

/** Asserts the spec's envelope and returns it, for terse error checks. */
export function expectEnvelope(reply: Reply, status: number) {
  if (reply.status !== status || reply.body?.status_id !== status) {
    throw new Error(`expected ${status}, got ${reply.status}: ${reply.text.slice(0, 500)}`);
  }
  return reply.body as { status_id: number; message: string; data: any };
}
