// Random identifiers and secrets, and the hashing we store instead of secrets.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const URL_SAFE = "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict";

function randomFrom(alphabet: string, length: number): string {
  // Rejection sampling keeps every character equally likely.
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

export const randomBase62 = (length: number) => randomFrom(BASE62, length);

/** A 21-character nanoid-style id, the form the companion app expects for ids and tokens. */
export const nanoid = (length = 21) => randomFrom(URL_SAFE, length);

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
