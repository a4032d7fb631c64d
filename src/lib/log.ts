// The server's log. PIGEON_LOG_LEVEL decides which lines are written, PIGEON_LOG_FORMAT how:
// readable text, or one JSON object a line for a log collector. Info and debug lines go to stdout,
// gathered and written together once per turn of the event loop (the access log writes one a
// request); warnings and errors go to stderr at once, after whatever was waiting before them, and
// anything still waiting is written when the process exits.
import { writeSync } from "node:fs";
import type { LogFormat, LogLevel } from "../config";
import type { RequestDone } from "./request-done";

/** What a line says besides its message: ids and measures (`task`, `device_id`, `notification_id`, …). */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/**
 * How modules log (`deps.log`): a line at error level when an error comes with it, at info
 * otherwise. Tests may hand their own function; it is then given the same arguments.
 */
export type LogFn = (message: string, error?: unknown, fields?: LogFields) => void;

export interface LogEntry {
  level: LogLevel;
  msg: string;
  fields?: LogFields;
  error?: unknown;
  /**
   * What the text format prints instead of `[pigeon] msg`: the start-up lines that people read
   * (the banner, "listening on"). Printed as given, never redacted.
   */
  text?: string;
  /** Written whatever PIGEON_LOG_LEVEL says: the start and stop lines (the first key among them). */
  always?: boolean;
}

export interface Logger {
  readonly level: LogLevel;
  readonly json: boolean;
  /** Whether a line at `level` is written (so one that is not is never built). */
  enabled(level: LogLevel): boolean;
  write(entry: LogEntry): void;
  error(msg: string, fields?: LogFields, error?: unknown): void;
  warn(msg: string, fields?: LogFields, error?: unknown): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
  /** The modules' `log(message, error?, fields?)`. */
  log: LogFn;
}

export interface LoggerOptions {
  level: LogLevel;
  format: LogFormat;
  /** Where each finished line goes; by default stdout or stderr, as this file's head says. */
  sink?: (line: string, level: LogLevel) => void;
}

const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

/**
 * Secrets a message might carry by accident (an error quoting a URL or a header): credentials in
 * a URL, an Authorization value, a `…token=`, `…secret=` or `…password=` parameter, and our own
 * API and webhook secrets. The first line of defence is never to log them; this is the second.
 */
const SECRET_PATTERNS: [RegExp, string][] = [
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi, "$1***@"],
  [/\b(bearer|basic)\s+[A-Za-z0-9._~+/-]{8,}=*/gi, "$1 ***"],
  [/\b([a-z_]*(?:token|secret|password|passwd))=[^&\s"']+/gi, "$1=***"],
  [/\b(sk|whsec)_[A-Za-z0-9]{16,}/g, "$1_***"],
];

/** What each of those needs: most lines (the access log's) have none and are left as they are at once. */
const MAYBE_SECRET = /[@=]|bearer|basic|sk_|whsec_/i;

/** `text` with what looks like a secret replaced by ***. */
export function redact(text: string): string {
  if (!MAYBE_SECRET.test(text)) return text;
  let out = text;
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * `text` without the given secrets: what a provider answered may quote the credentials it was
 * sent, and the caller knows them. Very short values are left alone (they would match anywhere).
 */
export function withoutSecrets(text: string, secrets: readonly (string | null | undefined)[]): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 8) out = out.split(secret).join("***");
  return out;
}

const firstLine = (text: string) => text.split("\n")[0];

/** An error's stack frames alone: its message is shown once, first line only (later lines may quote a query's values). */
function framesOf(error: Error): string {
  const lines = (error.stack ?? "").split("\n");
  const first = lines.findIndex((l) => /^\s+at /.test(l));
  return first < 0 ? "" : lines.slice(first).join("\n");
}

/**
 * The text format's line: the message and the error's name and first line, and its stack frames
 * (which in the compiled binary name minified source) only at debug.
 */
export function formatLogLine(message: string, error: unknown, debug: boolean): string {
  let line = `[pigeon] ${redact(message)}`;
  if (error instanceof Error) {
    line += `: ${error.name}: ${redact(firstLine(error.message))}`;
    const frames = debug ? framesOf(error) : "";
    if (frames) line += `\n${redact(frames)}`;
  } else if (error !== undefined && error !== "") {
    line += `: ${redact(firstLine(String(error)))}`;
  }
  return line;
}

function errorObject(error: unknown, debug: boolean): Record<string, string> {
  if (!(error instanceof Error)) return { message: redact(firstLine(String(error))) };
  const frames = debug ? framesOf(error) : "";
  return { name: error.name, message: redact(firstLine(error.message)), ...(frames ? { stack: redact(frames) } : {}) };
}

/** The JSON format's line: time, level and msg first, then the fields, then the error. */
function jsonLine(entry: LogEntry, debug: boolean): string {
  const line: Record<string, unknown> = { time: new Date().toISOString(), level: entry.level, msg: redact(entry.msg) };
  if (entry.fields) for (const [k, v] of Object.entries(entry.fields)) if (v !== undefined && !(k in line)) line[k] = v;
  if (entry.error !== undefined && entry.error !== "") line.error = errorObject(entry.error, debug);
  return JSON.stringify(line);
}

export function createLogger(options: LoggerOptions): Logger {
  const rank = RANK[options.level];
  const json = options.format === "json";
  const debug = options.level === "debug";
  const sink = options.sink ?? toStdio;
  const enabled = (level: LogLevel) => RANK[level] <= rank;
  function write(entry: LogEntry): void {
    if (!entry.always && !enabled(entry.level)) return;
    const line = json ? jsonLine(entry, debug) : (entry.text ?? formatLogLine(entry.msg, entry.error, debug));
    sink(line, entry.level);
  }
  return {
    level: options.level,
    json,
    enabled,
    write,
    error: (msg, fields, error) => write({ level: "error", msg, fields, error }),
    warn: (msg, fields, error) => write({ level: "warn", msg, fields, error }),
    info: (msg, fields) => write({ level: "info", msg, fields }),
    debug: (msg, fields) => write({ level: "debug", msg, fields }),
    log: (msg, error, fields) => write({ level: error === undefined ? "info" : "error", msg, fields, error }),
  };
}

/**
 * The access log: a line at info for every answered request, but those to /health and /metrics
 * (machines poll them). The route is the pattern, never the path: ids and tokens stay out.
 */
export function accessLog(logger: Logger): (done: RequestDone) => void {
  return (done) => {
    if (!logger.enabled("info") || done.route === "/health" || done.route === "/metrics") return;
    const ms = Math.round(done.durationMs * 10) / 10;
    const msg = `${done.method} ${done.route} ${done.status}`;
    logger.write({
      level: "info",
      msg,
      fields: { request_id: done.requestId, method: done.method, route: done.route, status: done.status, duration_ms: ms },
      ...(logger.json ? {} : { text: `[pigeon] ${msg} ${ms} ms (request ${done.requestId})` }),
    });
  };
}

// The default sink: lines waiting for their stream (1: stdout, 2: stderr).
const waiting: Record<1 | 2, string[]> = { 1: [], 2: [] };
let scheduled = false;
let exitHooked = false;

function toStdio(line: string, level: LogLevel): void {
  const fd = RANK[level] <= RANK.warn ? 2 : 1;
  waiting[fd].push(line);
  if (!exitHooked) {
    exitHooked = true;
    process.on("exit", flush);
  }
  if (fd === 2) flush();
  else if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
}

function flush(): void {
  scheduled = false;
  for (const fd of [1, 2] as const) {
    if (waiting[fd].length === 0) continue;
    const text = `${waiting[fd].join("\n")}\n`;
    waiting[fd] = [];
    writeAll(fd, text);
  }
}

/** All of `text`, waiting out a full pipe; a stream nobody reads any more (EPIPE) drops it. */
function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text);
  let at = 0;
  while (at < bytes.length) {
    try {
      at += writeSync(fd, bytes, at);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") return;
      Bun.sleepSync(1);
    }
  }
}
