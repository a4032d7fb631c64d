// Where the running server listens, for CLI commands run beside it (`pigeon devices pair-info`):
// `pigeon.listen` in the data directory holds the server's pid and the base URL it serves, written
// (0600) once it listens and removed when it stops cleanly. A file left by a server that died is
// recognised by its pid: only the pid that holds the data directory's lock counts.
import { readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { lockHolder } from "./data-dir-lock";

export const LISTEN_FILE = "pigeon.listen";

interface Recorded {
  pid: number;
  url: string;
}

/** A base URL for a listening socket: a wildcard address becomes `localhost`, IPv6 gets brackets. */
export function listenUrl(scheme: "http" | "https", host: string, port: number): string {
  const h = host === "" || host === "0.0.0.0" || host === "::" ? "localhost" : host.includes(":") ? `[${host}]` : host;
  return `${scheme}://${h}:${port}`;
}

/** Records this server's base URL; returns a function that removes the record (ours only). */
export function recordListenAddress(dataDir: string, url: string): () => void {
  const path = join(dataDir, LISTEN_FILE);
  const mine = `${path}.${process.pid}.tmp`;
  writeFileSync(mine, `${JSON.stringify({ pid: process.pid, url } satisfies Recorded)}\n`, { mode: 0o600 });
  renameSync(mine, path);
  return () => {
    if (readRecord(path)?.pid !== process.pid) return;
    try {
      unlinkSync(path);
    } catch {
      /* gone already */
    }
  };
}

function readRecord(path: string): Recorded | null {
  try {
    const r = JSON.parse(readFileSync(path, "utf8")) as Partial<Recorded>;
    return Number.isInteger(r.pid) && typeof r.url === "string" ? { pid: r.pid!, url: r.url } : null;
  } catch {
    return null;
  }
}

/** The base URL of the server running on this data directory, or null when none is running. */
export function runningServerUrl(dataDir: string): string | null {
  const r = readRecord(join(dataDir, LISTEN_FILE));
  return r !== null && lockHolder(dataDir) === r.pid ? r.url : null;
}
