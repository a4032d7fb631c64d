// What every dashboard response shares: security headers, the session cookie and the CSRF check
// (the sign-in throttle is the rate limits', src/http/rate-limit). Pages are rendered on the server; forms post back and are answered with a
// page or a redirect (Post/Redirect/Get), so the back button never re-sends a form.
import { csvCell } from "../lib/csv";
import { sha256Hex } from "../lib/tokens";
import type { Html } from "./html";

export const SESSION_COOKIE = "pigeon_session";
/** Before sign-in: a random value the sign-in and setup forms must echo (login CSRF). */
export const PRESESSION_COOKIE = "pigeon_presession";

// No inline script or style anywhere, nothing from another origin, and no framing.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "object-src 'none'",
  "frame-ancestors 'none'",
].join("; ");

export const PAGE_HEADERS: Record<string, string> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  // Setup links carry their token in the URL: no page passes its address on.
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** Every dashboard route's options beside its auth: pages are not in the API document. */
export const HIDDEN = { detail: { hide: true } } as const;

/** A piece of a page that htmx swaps in. */
export function fragment(body: Html, status = 200): Response {
  return new Response(body.value, { status, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });
}

/**
 * A CSV file streamed as the browser reads it: the header, then `next()`'s rows, `chunk` at a time,
 * until a shorter batch says the end came. A large export never sits in memory whole.
 */
export function csvDownload(
  filename: string,
  columns: readonly string[],
  chunk: number,
  next: () => unknown[][] | Promise<unknown[][]>,
): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`${columns.join(",")}\r\n`));
    },
    async pull(controller) {
      const rows = await next();
      if (rows.length) controller.enqueue(encoder.encode(`${rows.map((cells) => cells.map(csvCell).join(",")).join("\r\n")}\r\n`));
      if (rows.length < chunk) controller.close();
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${filename}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}

export function page(body: Html | string, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(`<!doctype html>\n${body}`, { status, headers: { ...PAGE_HEADERS, ...headers } });
}

/** 303 See Other: the browser follows with a GET. */
export function redirect(to: string, headers: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: { location: to, "cache-control": "no-store", ...headers } });
}

export function cookieOf(request: Request, name: string): string | null {
  const header = request.headers.get("cookie");
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return null;
}

/** Under TLS (ours, or a proxy's that says so) the cookie is only ever sent over TLS. */
export function isSecure(request: Request, tls: boolean): boolean {
  return tls || request.url.startsWith("https:");
}

export function setCookie(name: string, value: string, secure: boolean, maxAgeSeconds?: number): string {
  const parts = [`${name}=${encodeURIComponent(value)}`, "Path=/dashboard", "HttpOnly", "SameSite=Lax"];
  if (maxAgeSeconds !== undefined) parts.push(`Max-Age=${maxAgeSeconds}`);
  if (secure) parts.push("Secure");
  return parts.join("; ");
}

export const clearCookie = (name: string, secure: boolean) => setCookie(name, "", secure, 0);

/** The token forms carry for a session: derived from the session's own secret, so nothing more is stored. */
export const csrfFor = (sessionToken: string) => sha256Hex(`csrf:${sessionToken}`).slice(0, 32);

/** Whether a posted form (field `_csrf`) or an htmx request (header) carries the expected token. */
export function csrfMatches(request: Request, body: Record<string, unknown>, expected: string): boolean {
  const given = request.headers.get("x-csrf-token") ?? (typeof body._csrf === "string" ? body._csrf : "");
  if (given.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < given.length; i++) diff |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  return diff === 0;
}

/** A form body as strings (fields sent twice keep the last value; anything else is dropped). */
export function formOf(body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (body && typeof body === "object" && !Array.isArray(body)) {
    for (const [k, v] of Object.entries(body)) if (typeof v === "string") out[k] = v;
  }
  return out;
}
