import { parseArgs } from "node:util";
import { createLogger } from "../lib/log";

export class UsageError extends Error {}

export const OPTIONS = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
  name: { type: "string" },
  workspace: { type: "string" },
  account: { type: "string" },
  plan: { type: "string" },
  key: { type: "string" },
  chars: { type: "string" },
  code: { type: "string" },
  "monthly-sms": { type: "string" },
  "per-minute": { type: "string" },
  "per-day": { type: "string" },
  urls: { type: "string" },
  out: { type: "string" },
  from: { type: "string" },
  url: { type: "string" },
  force: { type: "boolean" },
  rotate: { type: "boolean" },
  "needs-approval": { type: "boolean" },
  to: { type: "string" },
  amount: { type: "string" },
  note: { type: "string" },
  svg: { type: "string" },
  email: { type: "string" },
  password: { type: "string" },
  role: { type: "string" },
  before: { type: "string" },
  "dry-run": { type: "boolean" },
  "poll-seconds": { type: "string" },
  scopes: { type: "string" },
  recipients: { type: "string" },
  "daily-cap": { type: "string" },
  expires: { type: "string" },
} as const;

export type Values = ReturnType<typeof parse>["values"];

export function parse(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
}

export function int(value: string | undefined, flag: string, min = 1): number {
  if (value === undefined || !/^\d+$/.test(value) || Number(value) < min) {
    throw new UsageError(`${flag} needs a whole number${min > 0 ? ` of at least ${min}` : ""}`);
  }
  return Number(value);
}

export function required(value: string | undefined, flag: string): string {
  if (!value?.trim()) throw new UsageError(`${flag} is required`);
  return value.trim();
}

export function print(values: Values, json: unknown, human: string) {
  console.log(values.json ? JSON.stringify(json) : human);
}

export function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return "(none)";
  const cols = Object.keys(rows[0]);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  return [line(cols), ...rows.map((r) => line(cols.map((c) => String(r[c] ?? ""))))].join("\n");
}

/** A full disk is the operator's to fix, not a bug: one line, no stack. */
export function diskFull(command = ""): number {
  failure(command, "pigeon: the disk holding the data directory is full (SQLITE_FULL): nothing was changed; free some space and retry");
  return 1;
}

/**
 * A command's failure on stderr. `pigeon serve` logs, so under PIGEON_LOG_FORMAT=json its failure
 * to start is a JSON line like the others (the format read from the environment: the
 * configuration may be what failed).
 */
export function failure(command: string, text: string): void {
  if (command === "serve" && process.env.PIGEON_LOG_FORMAT?.trim().toLowerCase() === "json")
    createLogger({ level: "error", format: "json" }).error(text.replace(/^pigeon: /, ""));
  else console.error(text);
}
