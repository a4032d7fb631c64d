// Environment → one typed, validated Config. A bad value stops start-up with a clear message
// (main.ts turns ConfigError into exit code 2).
import { accessSync, chmodSync, constants, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { DEFAULT_TRUSTED_PROXIES, isTrustedPeer, parseProxyList, type ProxyRange } from "./lib/trusted-proxies";

/**
 * PIGEON_SMTP_RELAY_URL: where received SMS are forwarded as email (smtp:// with STARTTLS, or
 * smtps:// for implicit TLS). STARTTLS is required unless the relay is on loopback.
 */
export interface SmtpRelay {
  host: string;
  port: number;
  /** TLS from the first byte (smtps://). */
  secure: boolean;
  /** STARTTLS must succeed (smtp:// to a host that is not loopback). */
  requireTls: boolean;
  user: string | null;
  pass: string | null;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  dbPath: string;
  /**
   * PIGEON_DATABASE_URL: a postgres:// (or postgresql://) URL to run on PostgreSQL; null keeps
   * SQLite in the data directory.
   */
  databaseUrl: string | null;
  /** PIGEON_KEY_FILE: the key that seals stored secrets (default <dataDir>/pigeon.key). */
  keyFile: string;
  publicUrl: string | null;
  /**
   * PIGEON_TRUSTED_PROXIES: peers whose X-Forwarded-Proto/-Host say how a phone called us, when
   * PIGEON_PUBLIC_URL is not set (default loopback).
   */
  trustedProxies: ProxyRange[];
  chatapp: {
    graphUrl: string;
    graphVersion: string;
    appSecret: string | null;
    verifyToken: string | null;
  };
  tls: { cert: string; key: string } | null;
  /**
   * PIGEON_OFFLINE_AFTER (seconds, default 300): silence after which a phone holding an event stream
   * counts as offline; a phone that only polls gets its 15-minute poll interval on top.
   */
  offlineAfterSeconds: number;
  /** Seconds between worker ticks (PIGEON_WORKER_INTERVAL, default 1). */
  workerIntervalSeconds: number;
  /**
   * Seconds a message without a ttl may wait on an offline phone with no other phone to take it
   * before it fails with device_offline (PIGEON_OFFLINE_TTL, default 86400: a day).
   */
  offlineTtlSeconds: number;
  /**
   * Seconds a message on a failover route waits for its phone once the phone counts as offline,
   * before it moves to the next route (PIGEON_FAILOVER_GRACE, default 120).
   */
  failoverGraceSeconds: number;
  /**
   * Seconds a send by a key that needs approval may wait for it before it fails with
   * approval_expired (PIGEON_APPROVAL_TTL_SECONDS, default 86400: a day).
   */
  approvalTtlSeconds: number;
  allowPrivateWebhooks: boolean;
  maxBodyBytes: number;
  /** PIGEON_METRICS_TOKEN: the Bearer token that opens /metrics to any address (null: loopback only). */
  metricsToken: string | null;
  /** PIGEON_LOG_LEVEL: error|warn|info|debug (default info); stacks are logged only at debug. */
  logLevel: LogLevel;
  /** PIGEON_LOG_FORMAT: text (default, for people) or json (one object a line, for collectors). */
  logFormat: LogFormat;
  /**
   * Scheduled backups (SQLite): PIGEON_BACKUP_DIR (null: off), PIGEON_BACKUP_EVERY (hours, default
   * 24, fractions allowed), PIGEON_BACKUP_KEEP (how many are kept, default 7).
   */
  backup: { dir: string | null; everyHours: number; keep: number };
  /** PIGEON_RETENTION_DAYS: finished messages older than this many days are removed (0: kept for ever). */
  retentionDays: number;
  /**
   * The bytes of received MMS attachments Pigeon keeps: PIGEON_MMS_MAX_MESSAGE_BYTES per message
   * (default 5 MiB) and PIGEON_MMS_MAX_WORKSPACE_BYTES per workspace (default 1 GiB); 0 keeps none.
   * What would pass a cap is dropped, and the message says so.
   */
  mmsCaps: { perMessageBytes: number; perWorkspaceBytes: number };
  /**
   * The email bridge's SMTP listener (docs/email.md): PIGEON_SMTP_PORT (STARTTLS offered with
   * PIGEON_TLS_CERT/KEY) and PIGEON_SMTPS_PORT (implicit TLS, needs the certificate), each null
   * when unset; PIGEON_SMTP_PLAIN_LOOPBACK=1 lets loopback clients sign in without TLS.
   */
  smtp: { port: number | null; tlsPort: number | null; plainLoopback: boolean; relay: SmtpRelay | null; from: string };
  /**
   * The SMPP listener (docs/smpp.md): PIGEON_SMPP_PORT (plain) and PIGEON_SMPP_TLS_PORT (SMPP over
   * TLS, needs PIGEON_TLS_CERT/KEY), each null when unset; both bind to PIGEON_HOST.
   */
  smpp: { port: number | null; tlsPort: number | null };
}

/** One environment variable as the operator sees it: `default` is null when it is unset by default. */
export interface EnvVar {
  name: string;
  default: string | null;
  meaning: string;
}

/**
 * Every variable loadConfig reads, with its default as shown to users and its meaning in a line:
 * `pigeon --help` lists them from here, and docs/operating.md's table must name exactly these
 * (test/docs/docs.test.ts holds the three together and checks each default against loadConfig).
 */
export const ENV_VARS: readonly EnvVar[] = [
  { name: "PIGEON_PORT", default: "8080", meaning: "port to listen on (0 picks a free one)" },
  { name: "PIGEON_HOST", default: "0.0.0.0", meaning: "address to bind" },
  { name: "PIGEON_DATA_DIR", default: "./data", meaning: "holds pigeon.db, pigeon.key and pigeon.lock" },
  {
    name: "PIGEON_DATABASE_URL",
    default: null,
    meaning: "postgres://user:pass@host:port/db runs on PostgreSQL 13+ (unset: SQLite in the data directory)",
  },
  { name: "PIGEON_KEY_FILE", default: null, meaning: "the key that seals stored secrets (unset: <PIGEON_DATA_DIR>/pigeon.key)" },
  { name: "PIGEON_PUBLIC_URL", default: null, meaning: "how phones and platforms reach this server" },
  {
    name: "PIGEON_TRUSTED_PROXIES",
    default: DEFAULT_TRUSTED_PROXIES,
    meaning: "proxies whose X-Forwarded-Proto/-Host count (empty: none)",
  },
  { name: "PIGEON_TLS_CERT", default: null, meaning: "PEM certificate; set with PIGEON_TLS_KEY to serve HTTPS" },
  { name: "PIGEON_TLS_KEY", default: null, meaning: "PEM private key for PIGEON_TLS_CERT" },
  { name: "PIGEON_OFFLINE_AFTER", default: "300", meaning: "seconds of silence before a paired phone is offline" },
  { name: "PIGEON_OFFLINE_TTL", default: "86400", meaning: "seconds a message waits on an offline phone, then fails" },
  { name: "PIGEON_FAILOVER_GRACE", default: "120", meaning: "seconds a failover waits for an offline phone" },
  { name: "PIGEON_APPROVAL_TTL_SECONDS", default: "86400", meaning: "seconds a send may await approval, then fails approval_expired" },
  { name: "PIGEON_WORKER_INTERVAL", default: "1", meaning: "seconds between worker ticks" },
  { name: "PIGEON_BACKUP_DIR", default: null, meaning: "where scheduled backups are written (SQLite; off when unset)" },
  { name: "PIGEON_BACKUP_EVERY", default: "24", meaning: "hours between scheduled backups (fractions allowed)" },
  { name: "PIGEON_BACKUP_KEEP", default: "7", meaning: "how many scheduled backups are kept (the oldest go first)" },
  { name: "PIGEON_RETENTION_DAYS", default: "0", meaning: "days finished messages and delivery logs are kept (0: for ever)" },
  { name: "PIGEON_MMS_MAX_MESSAGE_BYTES", default: "5242880", meaning: "attachment bytes kept per received MMS (0: none kept)" },
  { name: "PIGEON_MMS_MAX_WORKSPACE_BYTES", default: "1073741824", meaning: "attachment bytes kept per workspace (0: none kept)" },
  { name: "PIGEON_SMTP_PORT", default: null, meaning: "port of the email-to-SMS listener (off when unset; 0 picks one)" },
  { name: "PIGEON_SMTPS_PORT", default: null, meaning: "port of the email listener over implicit TLS (needs PIGEON_TLS_CERT)" },
  { name: "PIGEON_SMTP_RELAY_URL", default: null, meaning: "smtp://user:pass@host:587 (or smtps://) that forwards received SMS as email" },
  { name: "PIGEON_SMTP_FROM", default: "pigeon@localhost", meaning: "the From address of forwarded email" },
  { name: "PIGEON_SMTP_PLAIN_LOOPBACK", default: null, meaning: "1: loopback mail clients may sign in without TLS" },
  { name: "PIGEON_SMPP_PORT", default: null, meaning: "port of the SMPP listener (off when unset; 2775 is usual; 0 picks one)" },
  { name: "PIGEON_SMPP_TLS_PORT", default: null, meaning: "port of the SMPP listener over TLS (needs PIGEON_TLS_CERT)" },
  { name: "PIGEON_CHATAPP_GRAPH_URL", default: "https://graph.facebook.com", meaning: "chat-app platform base URL" },
  { name: "PIGEON_CHATAPP_GRAPH_VERSION", default: "v23.0", meaning: "Graph API version in chat-app platform paths" },
  { name: "PIGEON_CHATAPP_APP_SECRET", default: null, meaning: "checks the chat-app platform's webhook signatures" },
  { name: "PIGEON_CHATAPP_VERIFY_TOKEN", default: null, meaning: "answers the chat-app platform's webhook handshake" },
  { name: "PIGEON_ALLOW_PRIVATE_WEBHOOKS", default: null, meaning: "1: webhooks and cloud numbers may reach private addresses" },
  { name: "PIGEON_MAX_BODY_BYTES", default: "1048576", meaning: "largest request body, in bytes" },
  { name: "PIGEON_METRICS_TOKEN", default: null, meaning: "Bearer token for /metrics from other addresses (unset: loopback only)" },
  { name: "PIGEON_LOG_LEVEL", default: "info", meaning: "error, warn, info or debug (stacks only at debug)" },
  { name: "PIGEON_LOG_FORMAT", default: "text", meaning: "text, or json: one JSON object a line" },
];

export const LOG_LEVELS = ["error", "warn", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

function logLevel(env: Env): LogLevel {
  const raw = env.PIGEON_LOG_LEVEL?.trim().toLowerCase();
  if (!raw) return "info";
  if (!(LOG_LEVELS as readonly string[]).includes(raw))
    throw new ConfigError(`PIGEON_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${env.PIGEON_LOG_LEVEL}"`);
  return raw as LogLevel;
}

export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

function logFormat(env: Env): LogFormat {
  const raw = env.PIGEON_LOG_FORMAT?.trim().toLowerCase();
  if (!raw) return "text";
  if (!(LOG_FORMATS as readonly string[]).includes(raw))
    throw new ConfigError(`PIGEON_LOG_FORMAT must be one of ${LOG_FORMATS.join(", ")}, got "${env.PIGEON_LOG_FORMAT}"`);
  return raw as LogFormat;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function smtpRelay(env: Env): SmtpRelay | null {
  const raw = env.PIGEON_SMTP_RELAY_URL?.trim();
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(
      `PIGEON_SMTP_RELAY_URL must be a URL like smtp://user:pass@host:587, got "${raw.replace(/\/\/[^@/]*@/, "//…@")}"`,
    );
  }
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:")
    throw new ConfigError(`PIGEON_SMTP_RELAY_URL must start with smtp:// or smtps://, got ${url.protocol}//`);
  if (!url.hostname) throw new ConfigError("PIGEON_SMTP_RELAY_URL names no host");
  const secure = url.protocol === "smtps:";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || isTrustedPeer(parseProxyList(DEFAULT_TRUSTED_PROXIES), host);
  return {
    host,
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    requireTls: !secure && !loopback,
    user: url.username ? decodeURIComponent(url.username) : null,
    pass: url.password ? decodeURIComponent(url.password) : null,
  };
}

function smtpFrom(env: Env): string {
  const from = env.PIGEON_SMTP_FROM?.trim() || "pigeon@localhost";
  if (!/^[^\s@<>]+@[^\s@<>]+$/.test(from)) throw new ConfigError(`PIGEON_SMTP_FROM must be an email address, got "${from}"`);
  return from;
}

/** A port that is off when its variable is unset or empty. */
function optionalPort(env: Env, name: string): number | null {
  return env[name]?.trim() ? intInRange(env, name, 0, 0, 65535) : null;
}

function intInRange(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function httpUrl(env: Env, name: string): string | null {
  const raw = env[name];
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, "");
}

/**
 * Creates the data directory if needed and proves it writable; throws ConfigError otherwise. The
 * directory holds the database and the key that opens its secrets: only its owner may read it
 * (0700, files 0600), whatever modes an older version or a copy left behind.
 */
export function ensureDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    accessSync(dataDir, constants.W_OK | constants.R_OK);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(`PIGEON_DATA_DIR "${dataDir}" is not a writable directory (${reason})`);
  }
  restrictDataDir(dataDir);
}

/** Files of ours in the data directory: the database and its WAL files, the key, the lock. */
const PRIVATE_FILE = /^pigeon\.(db(-wal|-shm|-journal)?|key|lock)$/;

function restrictDataDir(dataDir: string): void {
  try {
    if ((statSync(dataDir).mode & 0o077) !== 0) chmodSync(dataDir, 0o700);
    for (const name of readdirSync(dataDir)) {
      if (!PRIVATE_FILE.test(name)) continue;
      const path = join(dataDir, name);
      if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
    }
  } catch {
    // A directory we may use but not chmod (owned by another user, a mounted volume): not fatal.
  }
}

export function loadConfig(env: Env = process.env): Config {
  const port = intInRange(env, "PIGEON_PORT", 8080, 0, 65535);
  const host = env.PIGEON_HOST?.trim() || "0.0.0.0";
  const dataDir = resolve(env.PIGEON_DATA_DIR?.trim() || "./data");

  const certPath = env.PIGEON_TLS_CERT?.trim();
  const keyPath = env.PIGEON_TLS_KEY?.trim();
  let tls: Config["tls"] = null;
  if (certPath || keyPath) {
    if (!certPath || !keyPath) throw new ConfigError("PIGEON_TLS_CERT and PIGEON_TLS_KEY must be set together");
    tls = { cert: readPem("PIGEON_TLS_CERT", certPath), key: readPem("PIGEON_TLS_KEY", keyPath) };
  }

  const smtpPort = optionalPort(env, "PIGEON_SMTP_PORT");
  const smtpsPort = optionalPort(env, "PIGEON_SMTPS_PORT");
  if (smtpsPort !== null && !tls) throw new ConfigError("PIGEON_SMTPS_PORT needs a certificate: set PIGEON_TLS_CERT and PIGEON_TLS_KEY");
  const smppPort = optionalPort(env, "PIGEON_SMPP_PORT");
  const smppTlsPort = optionalPort(env, "PIGEON_SMPP_TLS_PORT");
  if (smppTlsPort !== null && !tls)
    throw new ConfigError("PIGEON_SMPP_TLS_PORT needs a certificate: set PIGEON_TLS_CERT and PIGEON_TLS_KEY");

  return {
    port,
    host,
    dataDir,
    dbPath: join(dataDir, "pigeon.db"),
    databaseUrl: databaseUrl(env),
    keyFile: resolve(env.PIGEON_KEY_FILE?.trim() || join(dataDir, "pigeon.key")),
    publicUrl: httpUrl(env, "PIGEON_PUBLIC_URL"),
    trustedProxies: proxyList(env),
    chatapp: {
      graphUrl: httpUrl(env, "PIGEON_CHATAPP_GRAPH_URL") ?? "https://graph.facebook.com",
      graphVersion: env.PIGEON_CHATAPP_GRAPH_VERSION?.trim() || "v23.0",
      appSecret: env.PIGEON_CHATAPP_APP_SECRET || null,
      verifyToken: env.PIGEON_CHATAPP_VERIFY_TOKEN || null,
    },
    tls,
    workerIntervalSeconds: intInRange(env, "PIGEON_WORKER_INTERVAL", 1, 1, 60),
    offlineAfterSeconds: intInRange(env, "PIGEON_OFFLINE_AFTER", 300, 1, 86_400),
    offlineTtlSeconds: intInRange(env, "PIGEON_OFFLINE_TTL", 86_400, 1, 30 * 86_400),
    failoverGraceSeconds: intInRange(env, "PIGEON_FAILOVER_GRACE", 120, 1, 86_400),
    approvalTtlSeconds: intInRange(env, "PIGEON_APPROVAL_TTL_SECONDS", 86_400, 1, 30 * 86_400),
    allowPrivateWebhooks: env.PIGEON_ALLOW_PRIVATE_WEBHOOKS === "1",
    maxBodyBytes: intInRange(env, "PIGEON_MAX_BODY_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
    metricsToken: metricsToken(env),
    logLevel: logLevel(env),
    logFormat: logFormat(env),
    backup: {
      dir: env.PIGEON_BACKUP_DIR?.trim() ? resolve(env.PIGEON_BACKUP_DIR.trim()) : null,
      everyHours: hours(env, "PIGEON_BACKUP_EVERY", 24),
      keep: intInRange(env, "PIGEON_BACKUP_KEEP", 7, 1, 10_000),
    },
    retentionDays: intInRange(env, "PIGEON_RETENTION_DAYS", 0, 0, 36_500),
    mmsCaps: {
      perMessageBytes: intInRange(env, "PIGEON_MMS_MAX_MESSAGE_BYTES", 5 * 1024 * 1024, 0, 64 * 1024 * 1024),
      perWorkspaceBytes: intInRange(env, "PIGEON_MMS_MAX_WORKSPACE_BYTES", 1024 * 1024 * 1024, 0, 2 ** 40),
    },
    smtp: {
      port: smtpPort,
      tlsPort: smtpsPort,
      plainLoopback: env.PIGEON_SMTP_PLAIN_LOOPBACK === "1",
      relay: smtpRelay(env),
      from: smtpFrom(env),
    },
    smpp: { port: smppPort, tlsPort: smppTlsPort },
  };
}

/** A positive number of hours, fractions allowed (0.001 is 3.6 s), at most a year. */
function hours(env: Env, name: string, fallback: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+(\.\d+)?$/.test(raw) || Number(raw) <= 0 || Number(raw) > 8760)
    throw new ConfigError(`${name} must be a number of hours above 0 and at most 8760 (fractions allowed, as 0.5), got "${raw}"`);
  return Number(raw);
}

/** PIGEON_METRICS_TOKEN: at least 16 characters, none of them spaces, so it cannot be guessed or mangled in a header. */
function metricsToken(env: Env): string | null {
  const raw = env.PIGEON_METRICS_TOKEN?.trim();
  if (!raw) return null;
  if (raw.length < 16 || /\s/.test(raw))
    throw new ConfigError("PIGEON_METRICS_TOKEN must be at least 16 characters with no spaces (e.g. `openssl rand -hex 32`)");
  return raw;
}

/** PIGEON_DATABASE_URL, checked for its scheme and a database name; the password is never echoed. */
function databaseUrl(env: Env): string | null {
  const raw = env.PIGEON_DATABASE_URL?.trim();
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError("PIGEON_DATABASE_URL must be a URL like postgres://user:pass@host:5432/db");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:")
    throw new ConfigError(`PIGEON_DATABASE_URL must start with postgres:// or postgresql://, got "${url.protocol}//"`);
  if (!url.hostname) throw new ConfigError("PIGEON_DATABASE_URL names no host");
  if (url.pathname.replace(/^\/+/, "") === "") throw new ConfigError("PIGEON_DATABASE_URL names no database (postgres://…/DBNAME)");
  return raw;
}

/** A database URL fit for a log line: the password replaced. */
export function redactedDatabaseUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return "(unparsable URL)";
  }
}

function proxyList(env: Env): ProxyRange[] {
  try {
    return parseProxyList(env.PIGEON_TRUSTED_PROXIES ?? DEFAULT_TRUSTED_PROXIES);
  } catch (error) {
    throw new ConfigError(`PIGEON_TRUSTED_PROXIES: ${(error as Error).message}`);
  }
}

function readPem(name: string, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`${name} "${path}" cannot be read (${(error as NodeJS.ErrnoException).code ?? error})`);
  }
}
