// How the app decrypts an encrypted message's text and numbers (its EncryptionService): split on
// `$`, the algorithm chunk, the `k=v` parameters with `i` required, PBKDF2-HMAC-SHA1 of the
// passphrase over the salt for a 256-bit key, and AES-256-CBC with PKCS#7 padding and the salt as
// the IV. It throws with the app's own words where the app has them.
import { createDecipheriv, pbkdf2Sync } from "node:crypto";

/**
 * What the platform's cipher says of a wrong key's padding (Android's Conscrypt, over BoringSSL);
 * the app puts it after "Can't send message: " or "sendSMS: ".
 */
export const BAD_DECRYPT = "error:1e000065:Cipher functions:OPENSSL_internal:BAD_DECRYPT";

export function appDecrypt(passphrase: string | null, value: string): string {
  const chunks = value.split("$");
  if (chunks.length < 5) throw new Error("Invalid encrypted data format");
  if (chunks[1] !== "aes-256-cbc/pbkdf2-sha1") throw new Error("Unsupported algorithm");
  const params = new Map<string, string>();
  for (const param of chunks[2].split(",")) {
    const eq = param.indexOf("=");
    if (eq < 0) throw new Error("Index 1 out of bounds for length 1");
    params.set(param.slice(0, eq), param.slice(eq + 1));
  }
  if (!params.has("i")) throw new Error("Missing iteration count");
  const salt = Buffer.from(chunks[3], "base64");
  // The passphrase is asked for after the salt is read, as the app does (requireNotNull).
  if (passphrase === null) throw new Error("Passphrase is not set");
  const iterations = Number.parseInt(params.get("i")!, 10);
  if (!Number.isInteger(iterations) || iterations <= 0) throw new Error(`For input string: "${params.get("i")}"`);
  const key = pbkdf2Sync(passphrase, salt, iterations, 32, "sha1");
  if (salt.length !== 16) throw new Error("Wrong IV length: must be 16 bytes long");
  const decipher = createDecipheriv("aes-256-cbc", key, salt);
  try {
    return Buffer.concat([decipher.update(Buffer.from(chunks[4], "base64")), decipher.final()]).toString("utf8");
  } catch {
    throw new Error(BAD_DECRYPT);
  }
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * android.util.Base64.decode(input, DEFAULT), which the app runs on a data message's payload: the
 * standard alphabet, every other character (spaces, line breaks, `-`, `*`) skipped, padding
 * optional but, when given, exactly what the last group needs and nothing but skipped characters
 * after it. What it refuses throws as the platform does ("bad base-64").
 */
export function androidBase64Decode(input: string): Uint8Array {
  const out: number[] = [];
  // The platform's decoder states: 0-3 sextets of the group read, 4 one `=` seen where two are
  // due, 5 the padding done.
  let state = 0;
  let value = 0;
  const bad = () => new Error("bad base-64");
  for (const ch of input) {
    const d = ALPHABET.indexOf(ch);
    const equals = ch === "=";
    if (d < 0 && !equals) continue;
    if (state <= 3 && d >= 0) {
      value = (value << 6) | d;
      if (++state === 4) {
        out.push((value >> 16) & 0xff, (value >> 8) & 0xff, value & 0xff);
        state = 0;
        value = 0;
      }
    } else if (state === 2 && equals) {
      out.push((value >> 4) & 0xff);
      state = 4;
    } else if (state === 3 && equals) {
      out.push((value >> 10) & 0xff, (value >> 2) & 0xff);
      state = 5;
    } else if (state === 4 && equals) state = 5;
    else throw bad();
  }
  if (state === 1 || state === 4) throw bad();
  if (state === 2) out.push((value >> 4) & 0xff);
  if (state === 3) out.push((value >> 10) & 0xff, (value >> 2) & 0xff);
  return new Uint8Array(out);
}
