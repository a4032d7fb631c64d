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
