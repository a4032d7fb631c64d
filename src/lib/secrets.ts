// Secrets at rest. What Pigeon must use again (webhook signing secrets, a cloud number's auth
// token, a chat-app access token, a phone's signing key, the pairing token shown to the owner) is
// stored sealed with AES-256-GCM under a random key kept beside the database in `pigeon.key`
// (mode 0600), so a copied pigeon.db, or a backup, reveals nothing by itself. What is only ever
// compared (the phone's one-time codes) is stored as a keyed digest.
//
// Sealed values are tagged `enc:v1:`; anything else is a value written before sealing existed and
// is read as it is, then sealed at the next start-up (see sealLegacySecrets in services.ts).
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";
import { chmodSync, existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";

export const SEALED_PREFIX = "enc:v1:";
export const KEY_FILE = "pigeon.key";
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretKeyError extends Error {}

export interface SecretBox {
  /** Seals a secret for storage (creates the key on first need). */
  seal(plain: string): string;
  /** The secret a stored value holds: sealed values are opened, legacy plain ones returned as is. */
  open(stored: string): string;
  /** A keyed digest for values that are only ever compared. */
  digest(value: string): string;
  isSealed(stored: string): boolean;
  /** True when a key exists (on disk or, for an in-memory database, in memory). */
  hasKey(): boolean;
  /**
   * Loads the key, creating it when there is none; true when this call wrote the file (and so may
   * take it back with `discardCreated`).
   */
  ensureKey(): boolean;
  /** Removes the key file this process created (it lost a race to another server's key). */
  discardCreated(): void;
  /** A digest that names the key without revealing it; null without a key. */
  fingerprint(): string | null;
  /** Where the key lives (null: in memory). */
  readonly path: string | null;
}

/**
 * `keyPath` null keeps the key in memory only (an in-memory database: nothing outlives the process).
 */
export function createSecretBox(keyPath: string | null): SecretBox {
  let key: Buffer | null = null;
  let createdHere = false;

  function load(create: boolean): Buffer | null {
    if (key) return key;
    if (keyPath === null) {
      if (create) key = randomBytes(KEY_BYTES);
      return key;
    }
    if (existsSync(keyPath)) {
      key = parseKey(readFileSync(keyPath, "utf8"), keyPath);
      return key;
    }
    if (!create) return null;
    const fresh = randomBytes(KEY_BYTES);
    // Written aside and linked into place: two processes creating it at once agree on one key.
    const tmp = `${keyPath}.${process.pid}.tmp`;
    writeFileSync(tmp, `${fresh.toString("base64")}\n`, { mode: 0o600 });
    try {
      linkSync(tmp, keyPath);
      createdHere = true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EPERM" || code === "ENOTSUP" || code === "EOPNOTSUPP" || code === "ENOSYS") {
        // A file system without hard links: exclusive creation (a reader could see it half-written).
        try {
          writeFileSync(keyPath, `${fresh.toString("base64")}\n`, { flag: "wx", mode: 0o600 });
          createdHere = true;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
        }
      } else if (code !== "EEXIST") throw error;
    } finally {
      unlinkSync(tmp);
    }
    chmodSync(keyPath, 0o600);
    key = parseKey(readFileSync(keyPath, "utf8"), keyPath);
    return key;
  }

  function requireKey(): Buffer {
    const k = load(false);
    if (!k) {
      throw new SecretKeyError(
        `the database holds encrypted secrets but ${keyPath ?? "the key"} is missing: restore pigeon.key from where the database came from`,
      );
    }
    return k;
  }

  return {
    seal(plain) {
      const k = load(true)!;
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", k, iv);
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
    },
    open(stored) {
      if (!stored.startsWith(SEALED_PREFIX)) return stored;
      const raw = Buffer.from(stored.slice(SEALED_PREFIX.length), "base64");
      const decipher = createDecipheriv("aes-256-gcm", requireKey(), raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      try {
        return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
      } catch {
        throw new SecretKeyError(`${keyPath ?? "the key"} is not the key these secrets were sealed with`);
      }
    },
    digest(value) {
      return `hmac:${createHmac("sha256", load(true)!).update(value).digest("hex")}`;
    },
    isSealed: (stored) => stored.startsWith(SEALED_PREFIX),
    hasKey: () => load(false) !== null,
    ensureKey() {
      const had = key !== null || (keyPath !== null && existsSync(keyPath));
      load(true);
      return !had && createdHere;
    },
    discardCreated() {
      if (!createdHere || keyPath === null) return;
      unlinkSync(keyPath);
      createdHere = false;
      key = null;
    },
    fingerprint() {
      const k = load(false);
      return k ? createHmac("sha256", k).update("pigeon key fingerprint").digest("hex").slice(0, 32) : null;
    },
    path: keyPath,
  };
}

function parseKey(text: string, path: string): Buffer {
  const k = Buffer.from(text.trim(), "base64");
  if (k.length !== KEY_BYTES) throw new SecretKeyError(`${path} does not hold a ${KEY_BYTES}-byte base64 key`);
  return k;
}

/** Secret fields inside a device's JSON config (cloud auth token, chat-app access token). */
const CONFIG_SECRETS = ["authToken", "accessToken"] as const;

export function sealConfig<T extends object | null | undefined>(box: SecretBox, config: T): T {
  if (!config || typeof config !== "object") return config;
  const out: Record<string, unknown> = { ...(config as Record<string, unknown>) };
  for (const f of CONFIG_SECRETS) if (typeof out[f] === "string" && !box.isSealed(out[f] as string)) out[f] = box.seal(out[f] as string);
  return out as T;
}

export function openConfig<T extends object | null | undefined>(box: SecretBox, config: T): T {
  if (!config || typeof config !== "object") return config;
  const c = config as Record<string, unknown>;
  if (!CONFIG_SECRETS.some((f) => typeof c[f] === "string" && box.isSealed(c[f] as string))) return config;
  const out: Record<string, unknown> = { ...c };
  for (const f of CONFIG_SECRETS) if (typeof out[f] === "string") out[f] = box.open(out[f] as string);
  return out as T;
}
