// An encryptor for the companion app's end-to-end format, written for the tests from the format
// alone (docs/sending.md, the app's EncryptionService.kt), not from Pigeon's code: it is the judge
// of what Pigeon accepts and of what the simulated phone decrypts. One value is
// `$aes-256-cbc/pbkdf2-sha1$i=<iterations>$<base64 salt>$<base64 ciphertext>`, its key
// PBKDF2-HMAC-SHA1(passphrase, salt, iterations, 32 bytes), its cipher AES-256-CBC with PKCS#7
// padding and the salt as the IV.
import { createCipheriv, createDecipheriv, pbkdf2Sync, randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";

/** The Python client's default count (client-py's AESEncryptor). */
export const PYTHON_CLIENT_ITERATIONS = 75_000;

/** Encrypts `text` as the app reads it; a fresh random salt unless one is given. */
export function appEncrypt(passphrase: string, text: string, iterations = 1000, salt: Buffer = randomBytes(16)): string {
  const key = pbkdf2Sync(passphrase, salt, iterations, 32, "sha1");
  const cipher = createCipheriv("aes-256-cbc", key, salt);
  const body = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
  return `$aes-256-cbc/pbkdf2-sha1$i=${iterations}$${salt.toString("base64")}$${body.toString("base64")}`;
}

/**
 * A value encrypted with `wrong` whose padding does not check under `right`, so the phone fails to
 * decrypt it (a wrong key leaves valid PKCS#7 padding about once in 256 tries: those salts are skipped).
 */
export function appEncryptUnreadable(right: string, wrong: string, text: string, iterations = 1000): string {
  for (;;) {
    const salt = randomBytes(16);
    const value = appEncrypt(wrong, text, iterations, salt);
    const body = Buffer.from(value.split("$")[4], "base64");
    const decipher = createDecipheriv("aes-256-cbc", pbkdf2Sync(right, salt, iterations, 32, "sha1"), salt);
    try {
      Buffer.concat([decipher.update(body), decipher.final()]);
    } catch {
      return value;
    }
  }
}

/**
 * The same format made without JavaScript's crypto: the key from Python's hashlib.pbkdf2_hmac and
 * the cipher from the openssl command line (`openssl enc -aes-256-cbc -K <hex> -iv <hex>`), with
 * the Python client's default of 75,000 iterations. Null when python3 or openssl is missing.
 */
export function pythonOpensslEncrypt(passphrase: string, text: string, iterations = PYTHON_CLIENT_ITERATIONS): string | null {
  const py = spawnSync(
    "python3",
    [
      "-c",
      "import base64,hashlib,os,sys; salt=os.urandom(16); key=hashlib.pbkdf2_hmac('sha1', sys.argv[1].encode(), salt, int(sys.argv[2]), 32); print(salt.hex(), key.hex(), base64.b64encode(salt).decode())",
      passphrase,
      String(iterations),
    ],
    { encoding: "utf8" },
  );
  if (py.status !== 0) return null;
  const [saltHex, keyHex, salt64] = py.stdout.trim().split(" ");
  const enc = spawnSync("openssl", ["enc", "-aes-256-cbc", "-K", keyHex, "-iv", saltHex, "-base64", "-A"], {
    input: text,
    encoding: "utf8",
  });
  if (enc.status !== 0) return null;
  return `$aes-256-cbc/pbkdf2-sha1$i=${iterations}$${salt64}$${enc.stdout.trim()}`;
}
