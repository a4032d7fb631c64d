// `pigeon serve`: migrate, bootstrap an empty database, listen, and stop cleanly on a signal.
import { createApp } from "../app";
import { redactedDatabaseUrl, type Config, type LogLevel } from "../config";
import { DataDirLocked, lockDataDir, type DataDirLock } from "../lib/data-dir-lock";
import { listenUrl, recordListenAddress } from "../lib/listen-address";
import { startServerMemoryGuard } from "../lib/memory-guard";
import type { LogFields } from "../lib/log";
import { VERSION } from "../version";
import type { NetworkListener } from "../modules/descriptor";
import type { AppSelf, Services } from "../services-type";
import { startWorker } from "../worker";
import type { Runtime } from "./runtime";

/** How long a stop waits for calls in flight before it gives up on them. */
const STOP_GRACE_MS = 10_000;

/** Waits for a promise at most `ms`, whatever it does. */
async function withinMs(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([p.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * Each module's own network listener (src/modules/descriptor.ts), in the modules' order. When one
 * cannot start, those already started are stopped and the error names the module.
 */
export async function startModuleListeners(s: Services, app: AppSelf): Promise<NetworkListener[]> {
  const started: NetworkListener[] = [];
  for (const module of s.modules) {
    try {
      const listener = await module.listen?.(s, app);
      if (listener) started.push(listener);
    } catch (error) {
      await Promise.all(started.map((l) => l.stop(0)));
      throw new Error(`${module.name}: ${(error as Error).message}`);
    }
  }
  return started;
}

export async function serve(rt: Runtime): Promise<number | null> {
  const { config, services } = rt;
  const { logger } = services;
  /**
   * A start or stop line, written at any PIGEON_LOG_LEVEL: `text` as people read it in the text
   * format; under PIGEON_LOG_FORMAT=json an object like every other line, `msg` and the fields.
   */
  const say = (text: string, msg: string, fields?: LogFields) => logger.write({ level: "info", msg, fields, text, always: true });
  /** A warning or error, worded "pigeon: …" in the text format. */
  const problem = (level: LogLevel, text: string) => logger.write({ level, msg: text.replace(/^pigeon: (warning: )?/, ""), text });

  // Before anything else a server does (bootstrap, worker): one server per SQLite data directory.
  // On PostgreSQL any number of servers share the database, and none needs the directory.
  let lock: DataDirLock | null = null;
  if (!rt.postgres) {
    try {
      lock = lockDataDir(config.dataDir);
    } catch (error) {
      rt.close();
      if (!(error instanceof DataDirLocked)) throw error;
      problem("error", `pigeon: ${error.message}; stop it first (exit code 2)`);
      return 2;
    }
    process.on("exit", () => lock?.release());
  }

  // The owner account may already exist without a key (made by `pigeon users create` before the
  // first start); until its default workspace has a key, a start makes one and prints it. Servers
  // starting together on one PostgreSQL database take turns here, so exactly one makes and prints it.
  const firstKey = await rt.exclusive(async () => {
    await services.accounts.bootstrap();
    const home = await services.accounts.defaultWorkspace();
    if ((await services.accounts.listKeys(home.id)).length > 0) return null;
    return { home, key: await services.accounts.createKey("Initial key", home.id) };
  });
  if (firstKey) {
    const { home, key } = firstKey;
    const created = `Pigeon created the owner account and the workspace "${home.name}" (project_id ${home.id}).`;
    const store = "Store the secret now: it is shown only this once. More keys: pigeon keys create --name NAME --json";
    const credentials = { api_key: key.api_key, api_secret: key.api_secret, workspace_id: key.workspace_id };
    // The one line that carries a secret: the owner's first key (the setup link below is the other half).
    say(
      [created, `  API key:    ${key.api_key}`, `  API secret: ${key.api_secret}`, store, JSON.stringify(credentials)].join("\n"),
      `${created} ${store}`,
      credentials,
    );
  }

  // State lives in SQLite, so a stray error in one request or task is logged and the server keeps serving.
  process.on("unhandledRejection", (error) => services.log("unhandled rejection", error));
  process.on("uncaughtException", (error) => services.log("uncaught exception", error));

  const app = createApp(services);
  try {
    app.listen({
      port: config.port,
      hostname: config.host,
      // The foundation decides every body's fate: it reads bodies as streams and stops at its own
      // limit, and refuses a larger declared Content-Length before reading it, always with 413 in
      // the envelope. The runtime's own check would answer a bare 413 with no body before our code
      // runs, so it is set beyond any real body.
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      // Elysia asks for SO_REUSEPORT, which lets a second server share the port and take half the
      // connections. A port in use must be an error.
      reusePort: false,
      ...(config.tls ? { tls: { cert: config.tls.cert, key: config.tls.key } } : {}),
    });
  } catch (error) {
    const inUse = (error as NodeJS.ErrnoException).code === "EADDRINUSE" || /in use/i.test((error as Error).message);
    problem(
      "error",
      inUse
        ? `pigeon: port ${config.port} on ${config.host} is already in use (another server?); stop it or set PIGEON_PORT`
        : `pigeon: cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`,
    );
    lock?.release();
    rt.close();
    return inUse ? 2 : 1;
  }
  const server = app.server!;
  let listeners: NetworkListener[];
  try {
    listeners = await startModuleListeners(services, app);
  } catch (error) {
    problem("error", `pigeon: cannot start ${(error as Error).message}`);
    await server.stop(true);
    lock?.release();
    rt.close();
    return 1;
  }
  const scheme = config.tls ? "https" : "http";
  // For `pigeon devices pair-info`, which must print the port actually bound (PIGEON_PORT=0 picks one).
  const forgetAddress = recordListenAddress(config.dataDir, listenUrl(scheme, config.host, server.port!));
  const worker = await startWorker(services);
  const memory = startServerMemoryGuard();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`Pigeon stopping (${signal})`, `Pigeon stopping (${signal})`, { signal });
    // Stop listening first (requests already in progress finish), then let the worker record the
    // outcome of the provider and webhook calls in flight, so an ordinary restart has nothing to
    // recover. Bounded: what is still in flight then is recovered at the next start.
    services.closeChannels();
    memory.stop();
    const closed = withinMs(Promise.all([server.stop(), ...listeners.map((l) => l.stop(STOP_GRACE_MS))]), STOP_GRACE_MS);
    const drained = await worker.stop(STOP_GRACE_MS);
    await closed;
    if (!drained)
      problem("warn", `pigeon: calls still in flight after ${STOP_GRACE_MS / 1000} s; they are checked with the channel at the next start`);
    rt.close();
    forgetAddress();
    lock?.release();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  // Until the owner account has a dashboard user, each start prints a fresh one-time setup link
  // (earlier ones stop working); `pigeon users create` does the same from the shell. On PostgreSQL
  // only the start that made the first key prints one: replicas starting later must not void it.
  const setupToken = !rt.postgres || firstKey ? await services.users.issueSetupToken((await services.accounts.requireOwner()).id) : null;
  if (setupToken) {
    const base = (config.publicUrl ?? listenUrl(scheme, config.host, server.port!)).replace(/\/+$/, "");
    const setup = "Finish setting up the dashboard (link valid 24 hours, usable once)";
    const setupUrl = `${base}/dashboard/setup?token=${setupToken}`;
    say(`${setup}: ${setupUrl}`, setup, { setup_url: setupUrl });
  }
  // Announced only once a signal stops us cleanly: whoever waits for this line may stop us at once.
  const warning = phoneUrlWarning(config);
  if (warning) problem("warn", warning);
  if (config.backup.dir && rt.postgres)
    problem(
      "warn",
      "pigeon: warning: PIGEON_BACKUP_DIR is ignored on PostgreSQL: back the database up with pg_dump (and keep PIGEON_KEY_FILE with it)",
    );
  const data = config.databaseUrl ? `database: ${redactedDatabaseUrl(config.databaseUrl)}` : `data: ${config.dataDir}`;
  const url = `${scheme}://${config.host}:${server.port}`;
  for (const listener of listeners) say(`Pigeon also serves ${listener.describe()}`, `also serving ${listener.describe()}`);
  say(`Pigeon ${VERSION} listening on ${url} (${data})`, `Pigeon ${VERSION} listening on ${url}`, {
    url,
    version: VERSION,
    ...(config.databaseUrl ? { database: redactedDatabaseUrl(config.databaseUrl) } : { data_dir: config.dataDir }),
  });
  return null;
}

/**
 * One line when phones would be handed an http:// webhook URL, which release builds of the app
 * refuse (they allow no cleartext traffic): PIGEON_PUBLIC_URL is http, or it is unset and Pigeon
 * serves plain http, so only a trusted TLS proxy's X-Forwarded-Proto can make the URL https.
 */
export function phoneUrlWarning(config: Pick<Config, "publicUrl" | "tls">): string | null {
  const fix = "release builds of the SMS Gateway app refuse http:// URLs; set PIGEON_PUBLIC_URL=https://<the name phones reach>";
  if (config.publicUrl?.startsWith("http://"))
    return `pigeon: warning: PIGEON_PUBLIC_URL is ${config.publicUrl}, so phones are given http:// webhook URLs: ${fix}`;
  if (config.publicUrl || config.tls) return null;
  return `pigeon: warning: PIGEON_PUBLIC_URL is not set, so phones are given http:// webhook URLs unless they come through a TLS proxy in PIGEON_TRUSTED_PROXIES that sends X-Forwarded-Proto: https; ${fix}`;
}
