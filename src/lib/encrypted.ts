// The companion app's end-to-end encrypted value: one string
// `$aes-256-cbc/pbkdf2-sha1$i=<iterations>$<base64 salt>$<base64 ciphertext>`, whose key is
// PBKDF2-HMAC-SHA1(passphrase, salt, iterations, 32 bytes) and whose cipher is AES-256-CBC with
// PKCS#7 padding and the salt as the IV. Pigeon never holds the passphrase: it only checks that a
// value has this shape, so what the phone would refuse is refused when it is sent instead.

export const ENCRYPTED_ALGORITHM = "aes-256-cbc/pbkdf2-sha1";
/** The app reads the count with Kotlin's toInt(), and PBKDF2 needs at least one iteration. */
export const ITERATIONS_MAX = 2_147_483_647;
/** AES-CBC's IV is one block, and the app uses the salt as the IV: any other length fails there. */
export const SALT_BYTES = 16;
const BLOCK = 16;

export interface EncryptedValue {
  iterations: number;
  salt: Uint8Array;
  ciphertext: Uint8Array;
}

export type EncryptedCheck = { ok: true; value: EncryptedValue } | { ok: false; reason: string };

/** Standard base64 (RFC 4648 §4) with its padding, nothing else: no spaces, no line breaks, no URL alphabet. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function base64(part: string): Uint8Array | null {
  if (part === "" || !BASE64.test(part)) return null;
  return new Uint8Array(Buffer.from(part, "base64"));
}

/**
 * Checks one value against the format, as the app will read it: five `$`-separated chunks, the
 * first empty, the algorithm chunk exact, `i=` a whole number from 1 to 2^31-1 among `k=v`
 * parameters, a 16-byte salt and a whole number of 16-byte blocks of ciphertext, both in padded
 * standard base64. `maxCipherBytes` bounds the ciphertext. Says why when it does not fit.
 */
export function checkEncrypted(value: unknown, maxCipherBytes = Number.POSITIVE_INFINITY): EncryptedCheck {
  if (typeof value !== "string") return { ok: false, reason: "must be a string" };
  const chunks = value.split("$");
  if (chunks.length !== 5 || chunks[0] !== "")
    return { ok: false, reason: `must be $${ENCRYPTED_ALGORITHM}$i=<iterations>$<base64 salt>$<base64 ciphertext>` };
  if (chunks[1] !== ENCRYPTED_ALGORITHM) return { ok: false, reason: `the algorithm must be ${ENCRYPTED_ALGORITHM}` };
  const params = new Map<string, string>();
  for (const param of chunks[2].split(",")) {
    const eq = param.indexOf("=");
    if (eq <= 0) return { ok: false, reason: "the parameters must be k=v pairs separated by commas, e.g. i=75000" };
    params.set(param.slice(0, eq), param.slice(eq + 1));
  }
  const i = params.get("i");
  if (i === undefined) return { ok: false, reason: "the iteration count i= is missing" };
  const iterations = /^\+?\d{1,10}$/.test(i) ? Number(i) : Number.NaN;
  if (!Number.isInteger(iterations) || iterations < 1 || iterations > ITERATIONS_MAX)
    return { ok: false, reason: `the iteration count i must be a whole number from 1 to ${ITERATIONS_MAX}` };
  const salt = base64(chunks[3]);
  if (!salt) return { ok: false, reason: "the salt must be standard base64 with its padding" };
  if (salt.length !== SALT_BYTES) return { ok: false, reason: `the salt must be ${SALT_BYTES} bytes (it is the IV), not ${salt.length}` };
  const ciphertext = base64(chunks[4]);
  if (!ciphertext) return { ok: false, reason: "the ciphertext must be standard base64 with its padding" };
  if (ciphertext.length % BLOCK !== 0)
    return { ok: false, reason: `the ciphertext must be a whole number of ${BLOCK}-byte blocks, not ${ciphertext.length} bytes` };
  if (ciphertext.length > maxCipherBytes)
    return { ok: false, reason: `the ciphertext is ${ciphertext.length} bytes; at most ${maxCipherBytes} are accepted here` };
  return { ok: true, value: { iterations, salt, ciphertext } };
}

/** The most ciphertext a plaintext of `bytes` bytes can become under PKCS#7 padding. */
export const cipherBytesFor = (bytes: number) => (Math.floor(bytes / BLOCK) + 1) * BLOCK;
