// Reading and parsing request bodies without letting one request stall or bloat the server:
// the body is read as a stream and dropped the moment it passes the limit, its bytes must be
// UTF-8, and JSON is pre-scanned in one linear pass (nesting depth, lone surrogate escapes)
// before JSON.parse, so no later step (validation, error formatting) meets a pathological shape.
import { AppError } from "../core/errors";

/** Deepest nesting of arrays and objects a JSON body may have. */
export const MAX_JSON_DEPTH = 32;

/** 413 and 431 answers ask the client to close the connection rather than reuse it. */
export const CLOSE = { connection: "close" } as const;

export function payloadTooLarge(limit: number, received?: number): AppError {
  const size = received === undefined ? "Request body" : `Request body of ${received} bytes`;
  return new AppError("payload_too_large", `${size} exceeds the limit of ${limit} bytes`, { limit }, undefined, { ...CLOSE });
}

/**
 * The body's bytes, read chunk by chunk; past `limit` the stream is cancelled and 413 thrown, so a
 * chunked upload with no Content-Length costs at most `limit` bytes of memory.
 */
export async function readBodyWithLimit(request: Request, limit: number): Promise<Uint8Array> {
  const stream = request.body;
  if (!stream) return new Uint8Array(0);
  // With a Content-Length within the limit (a larger one was refused before the body was touched),
  // the runtime reads exactly that many bytes in one go: reading it as a stream cost about a sixth
  // of a send's time. Only a chunked body, whose size nobody announced, is read piece by piece.
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) <= limit) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > limit) throw payloadTooLarge(limit, bytes.byteLength);
    return bytes;
  }
  const reader = stream.getReader();
  // Chunks are copied into one buffer that grows as needed, so no chunk (nor the socket buffer it
  // may be a view of) is kept alive while the rest arrives.
  let buffer = new Uint8Array(Math.min(limit, 64 * 1024));
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (total + value.byteLength > limit) {
      reader.cancel().catch(() => {});
      throw payloadTooLarge(limit);
    }
    if (total + value.byteLength > buffer.byteLength) {
      const grown = new Uint8Array(Math.min(limit, Math.max(buffer.byteLength * 2, total + value.byteLength)));
      grown.set(buffer.subarray(0, total));
      buffer = grown;
    }
    buffer.set(value, total);
    total += value.byteLength;
  }
  return buffer.subarray(0, total);
}

/**
 * Reads and drops a body we have already refused. A client that sent Content-Length keeps writing
 * after our 413; left unread, those bytes wedge the connection and a client that reuses it (Bun's
 * fetch does) waits forever for its next answer. Nothing is kept, so this costs no memory; the
 * caller bounds how much is read (DISCARD_MAX_BYTES).
 */
export async function discardBody(request: Request): Promise<void> {
  const stream = request.body;
  if (!stream || request.bodyUsed) return;
  const reader = stream.getReader();
  try {
    while (!(await reader.read()).done);
  } catch {
    // The client went away: nothing left to keep in step with.
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The body as text; bytes that are not UTF-8 are a 400, not a silent U+FFFD. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new AppError("invalid_unicode", "Request body is not valid UTF-8");
  }
}

const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);

function escapedUnit(text: string, at: number): number {
  // `at` points at the "u" of a \uXXXX escape; -1 when the four hex digits are not there.
  for (let k = 1; k <= 4; k++) if (!isHex(text.charCodeAt(at + k))) return -1;
  return parseInt(text.slice(at + 1, at + 5), 16);
}

/**
 * One pass over JSON text: nesting deeper than `maxDepth`, `\uD800`-style escapes of a lone
 * surrogate and `\u0000` (NUL, which PostgreSQL's text cannot hold) are refused with 400. Anything else malformed is left to JSON.parse to report.
 */
export function scanJson(text: string, maxDepth = MAX_JSON_DEPTH): void {
  let depth = 0;
  let inString = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 34 /* " */) inString = false;
      else if (c === 92 /* \ */) {
        if (text.charCodeAt(i + 1) === 117 /* u */) {
          const unit = escapedUnit(text, i + 1);
          if (unit >= 0xd800 && unit <= 0xdbff) {
            // A high surrogate must be followed by an escaped low one.
            const next = text.charCodeAt(i + 6) === 92 && text.charCodeAt(i + 7) === 117 ? escapedUnit(text, i + 7) : -1;
            if (next < 0xdc00 || next > 0xdfff) throw loneSurrogate();
            i += 11;
            continue;
          }
          if (unit >= 0xdc00 && unit <= 0xdfff) throw loneSurrogate();
          if (unit === 0) throw nulCharacter();
          if (unit >= 0) {
            i += 5;
            continue;
          }
        }
        i++;
      }
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > maxDepth) {
        throw new AppError("too_deeply_nested", `Request body nests arrays and objects deeper than ${maxDepth} levels`, {
          max_depth: maxDepth,
        });
      }
    } else if (c === 93 || c === 125) depth--;
  }
}

function loneSurrogate(): AppError {
  return new AppError(
    "invalid_unicode",
    "Request body contains a lone surrogate escape (such as \\ud800), which is not valid Unicode text",
  );
}

function nulCharacter(): AppError {
  return new AppError(
    "invalid_unicode",
    "Request body contains a NUL character (\\u0000), which no text field may hold (PostgreSQL cannot store it, nor can an SMS carry it)",
  );
}

/** Parses a JSON body after the linear pre-scan; an empty body is `{}`. */
export function parseJsonText(text: string): unknown {
  if (text.trim() === "") return {};
  scanJson(text);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new AppError("invalid_json", `Request body is not valid JSON: ${(error as Error).message}`);
  }
}
