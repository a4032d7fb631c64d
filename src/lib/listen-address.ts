// Where the running servers listen, for CLI commands run beside them (`pigeon devices pair-info`,
// `pigeon health`). Each server writes `pigeon.listen.<pid>` in the data directory (0600) once it
// listens, holding its pid, its process's start time and the base URL it serves, and removes it
// when it stops cleanly. A record left by a server that died is recognised by its pid and start
// time (a reused pid is another process). On SQLite only the server holding the data directory's
// lock counts; on PostgreSQL several servers may share a data directory, and each live one does.
import { readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isSameProcess, lockHolder, startTimeOf } from "./data-dir-lock";

export const LISTEN_FILE = "pigeon.listen";

interface Recorded {
  pid: number;
  started: string | null;
  url: string;
}

/** A base URL for a listening socket: a wildcard address becomes `localhost`, IPv6 gets brackets. */
export function listenUrl(scheme: "http" | "https", host: string, port: number): string {
  const h = host === "" || host === "0.0.0.0" || host === "::" ? "localhost" : host.includes(":") ? `[${host}]` : host;
  return `${scheme}://${h}:${port}`;
}

/** Records this server's base URL; returns a function that removes the record. */
export function recordListenAddress(dataDir: string, url: string): () => void {
  // Records left by servers that died (SIGKILL, a crash) go now, so they do not pile up.
  for (const r of records(dataDir)) if (!r.live) unlinkQuietly(r.path);
  const path = join(dataDir, `${LISTEN_FILE}.${process.pid}`);
  const mine = `${path}.tmp`;
  const record: Recorded = { pid: process.pid, started: startTimeOf(process.pid), url };
  writeFileSync(mine, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  renameSync(mine, path);
  return () => unlinkQuietly(path);
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* gone already */
  }
}

function readRecord(path: string): Recorded | null {
  try {
    const r = JSON.parse(readFileSync(path, "utf8")) as Partial<Recorded>;
    if (!Number.isInteger(r.pid) || typeof r.url !== "string") return null;
    return { pid: r.pid!, started: typeof r.started === "string" ? r.started : null, url: r.url };
  } catch {
    return null;
  }
}

/** Every server's record on this data directory, whether its process still runs, oldest pid first. */
function records(dataDir: string): (Recorded & { path: string; live: boolean })[] {
  let names: string[];
  try {
    names = readdirSync(dataDir);
  } catch {
    return [];
  }
  const prefix = `${LISTEN_FILE}.`;
  return names
    .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
    .flatMap((n) => {
      const path = join(dataDir, n);
      const r = readRecord(path);
      return r ? [{ ...r, path, live: isSameProcess(r.pid, r.started) }] : [];
    })
    .sort((a, b) => a.pid - b.pid);
}

/** The base URLs of the live servers on this data directory: any, on PostgreSQL; the lock's holder only, on SQLite. */
export function runningServerUrls(dataDir: string, shared: boolean): string[] {
  const live = records(dataDir).filter((r) => r.live);
  if (shared) return [...new Set(live.map((r) => r.url))];
  const holder = lockHolder(dataDir);
  return live.filter((r) => r.pid === holder).map((r) => r.url);
}

/** The base URL of the (first) server running on this data directory, or null when none is. */
export function runningServerUrl(dataDir: string, shared = false): string | null {
  return runningServerUrls(dataDir, shared)[0] ?? null;
}
