// One-time passwords for two-factor sign-in: base32 (RFC 4648 §6, the alphabet authenticator apps
// read), HOTP (RFC 4226: HMAC-SHA1 of the 8-byte big-endian counter, dynamically truncated) and
// TOTP (RFC 6238: the counter is the number of 30-second steps since the Unix epoch). Pure
// functions; who may use a code, and which step was last accepted, is the caller's.
import { createHmac, timingSafeEqual } from "node:crypto";

export const TOTP_STEP_SECONDS = 30;
export const TOTP_DIGITS = 6;
/** Steps either side of now that still count: a phone's clock may be a little off. */
export const TOTP_WINDOW = 1;

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** Base32 without padding, as otpauth:// URIs carry secrets. */
export function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

/** Reads base32 in either case, ignoring spaces and padding; null when a character is not base32. */
export function base32Decode(text: string): Uint8Array | null {
  const clean = text.replace(/[\s=]/g, "").toUpperCase();
  const out: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const ch of clean) {
    const value = ALPHABET.indexOf(ch);
    if (value < 0) return null;
    buffer = ((buffer << 5) | value) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((buffer >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return new Uint8Array(out);
}

/** RFC 4226's code for `counter`, `digits` long with leading zeros. */
export function hotp(key: Uint8Array, counter: number, digits = TOTP_DIGITS): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac("sha1", key).update(message).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, "0");
}

/** The step a moment falls in. */
export const totpStep = (atMs: number, stepSeconds = TOTP_STEP_SECONDS) => Math.floor(atMs / 1000 / stepSeconds);

/** RFC 6238's code at `atMs`. */
export function totp(key: Uint8Array, atMs: number, opts: { digits?: number; stepSeconds?: number } = {}): string {
  return hotp(key, totpStep(atMs, opts.stepSeconds), opts.digits ?? TOTP_DIGITS);
}

/** Compares two codes in time that depends only on their length. */
export function sameCode(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The step `code` belongs to, within TOTP_WINDOW steps of `atMs` and after `lastStep` (a code
 * once accepted is not accepted again, nor any older one); null when it matches none. Every
 * step of the window is compared, so the time taken does not say which matched.
 */
export function verifyTotp(key: Uint8Array, code: string, atMs: number, lastStep: number | null = null): number | null {
  const typed = code.replace(/\s/g, "");
  if (!/^\d{6}$/.test(typed)) return null;
  const now = totpStep(atMs);
  let found: number | null = null;
  for (let step = now - TOTP_WINDOW; step <= now + TOTP_WINDOW; step++) {
    const match = sameCode(hotp(key, step), typed);
    if (match && found === null && (lastStep === null || step > lastStep)) found = step;
  }
  return found;
}

/** The otpauth:// URI an authenticator app reads from the QR code. */
export function otpauthUri(opts: { issuer: string; account: string; secret: string }): string {
  const label = `${encodeURIComponent(opts.issuer)}:${encodeURIComponent(opts.account)}`;
  const params = new URLSearchParams({
    secret: opts.secret,
    issuer: opts.issuer,
    algorithm: "SHA1",
    digits: String(TOTP_DIGITS),
    period: String(TOTP_STEP_SECONDS),
  });
  return `otpauth://totp/${label}?${params.toString()}`;
}
