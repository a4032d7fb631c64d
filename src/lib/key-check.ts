// Which key seals this database's secrets. The database records the key's fingerprint the first
// time a server or command opens it with a key; from then on, anything opened with another key,
// or with none, stops before it serves or writes anything. Servers sharing one PostgreSQL
// database need the same PIGEON_KEY_FILE: without this check a replica with the wrong file would
// fail on every sealed value it met (webhook secrets, provider tokens) while answering requests.
import { SEALED_PREFIX, SecretKeyError, type SecretBox } from "./secrets";
import type { Storage } from "../db/storage";

const FINGERPRINT = "key_fingerprint";

async function storedFingerprint(storage: Storage): Promise<string | null> {
  const row = await storage.get<{ value: string }>("SELECT value FROM instance_setting WHERE name = ?", [FINGERPRINT]);
  return row?.value ?? null;
}

/** One sealed secret, if any is stored (a database from before fingerprints, or a copy of one). */
async function anySealedSecret(storage: Storage): Promise<string | null> {
  const like = `'${SEALED_PREFIX}%'`;
  const row = await storage.get<{ value: string }>(
    `SELECT secret AS value FROM webhook_subscription WHERE secret LIKE ${like}
     UNION ALL SELECT pairing_token FROM workspace WHERE pairing_token LIKE ${like}
     UNION ALL SELECT webhook_key FROM device WHERE webhook_key LIKE ${like} LIMIT 1`,
  );
  return row?.value ?? null;
}

function named(box: SecretBox): string {
  return box.path ?? "the in-memory key";
}

/**
 * Proves `box` holds this database's key, creating the key only when the database has never had
 * one. Throws SecretKeyError (one line naming the file) otherwise; writes nothing when it throws,
 * except taking back a key file it made itself in a race another server won.
 */
export async function checkDatabaseKey(storage: Storage, box: SecretBox): Promise<void> {
  const stored = await storedFingerprint(storage);
  if (stored !== null) {
    const mine = box.fingerprint();
    if (mine === null)
      throw new SecretKeyError(
        `${named(box)} is missing: this database's secrets are sealed with a key (fingerprint ${stored}); give every server the same PIGEON_KEY_FILE`,
      );
    if (mine !== stored)
      throw new SecretKeyError(
        `${named(box)} is not this database's key (its fingerprint is ${mine}, the database's ${stored}); give every server the same PIGEON_KEY_FILE`,
      );
    return;
  }
  // No fingerprint yet: a new database, or one written before fingerprints were recorded.
  const sample = await anySealedSecret(storage);
  if (sample !== null) {
    if (!box.hasKey())
      throw new SecretKeyError(
        `the database holds encrypted secrets but ${named(box)} is missing: restore the key file from where the database came from`,
      );
    box.open(sample); // throws SecretKeyError when it is another database's key
  }
  const created = box.ensureKey();
  const mine = box.fingerprint()!;
  await storage.run("INSERT INTO instance_setting (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING", [FINGERPRINT, mine]);
  const winner = await storedFingerprint(storage);
  if (winner !== mine) {
    // Another server recorded its key at the same moment: ours was never used; take it back.
    if (created) box.discardCreated();
    throw new SecretKeyError(
      `${named(box)} is not this database's key: another server started at the same moment with its own key (fingerprint ${winner}); give every server that server's PIGEON_KEY_FILE`,
    );
  }
}
