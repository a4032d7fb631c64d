// Random identifiers and secrets, and the hashing we store instead of secrets.
import { createHash, timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const URL_SAFE = "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict";
/** The same 64 characters in byte order, so ids that start with a time sort as the times do. */
const URL_SAFE_SORTED = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

// Random bytes are drawn from the system's generator a few kilobytes at a time: one call per id
// cost a send about 3 % of its time.
const POOL_BYTES = 4096;
let pool = new Uint8Array(0);
let used = 0;

function randomByte(): number {
  if (used === pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(POOL_BYTES));
    used = 0;
  }
  return pool[used++];
}

function randomFrom(alphabet: string, length: number): string {
  // Rejection sampling keeps every character equally likely (with 64 characters nothing is rejected).
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    const byte = randomByte();
    if (byte < limit) out += alphabet[byte % alphabet.length];
  }
  return out;
}

export const randomBase62 = (length: number) => randomFrom(BASE62, length);

/** A 21-character nanoid-style id, the form the companion app expects for ids and tokens. */
export const nanoid = (length = 21) => randomFrom(URL_SAFE, length);

// The last time prefix made: ids made in the same millisecond share it.
let prefixTime = -1;
let prefix = "";

/**
 * A 21-character id in the same alphabet as nanoid whose first 8 characters are the time in
 * milliseconds, so new ids land at the end of the unique index rather than on a random page of
 * it (a tenth of a send's time at 32 sends a commit); the other 13 are random (78 bits).
 * For ids that name a record, never for secrets.
 */
export function timeOrderedId(now = Date.now()): string {
  const ms = Math.max(0, Math.floor(now));
  if (ms !== prefixTime) {
    let time = "";
    for (let i = 0, t = ms; i < 8; i++, t = Math.floor(t / 64)) time = URL_SAFE_SORTED[t % 64] + time;
    prefixTime = ms;
    prefix = time;
  }
  return prefix + randomFrom(URL_SAFE, 13);
}

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/** Compares a presented secret with a stored SHA-256 hex digest in constant time. */
export function matchesHash(secret: string, storedHex: string): boolean {
  const presented = createHash("sha256").update(secret).digest();
  const stored = Buffer.from(storedHex, "hex");
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}

export function uuid(): string {
  return crypto.randomUUID();
}
