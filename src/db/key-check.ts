// Which key seals this database's secrets. The database records the key's fingerprint the first
// time a server or command opens it with a key; from then on, anything opened with another key,
// or with none, stops before it serves or writes anything. Servers sharing one PostgreSQL
// database need the same PIGEON_KEY_FILE: without this check a replica with the wrong file would
// fail on every sealed value it met (webhook secrets, provider tokens) while answering requests.
import { createInstanceRepository } from "./instance-repository";
import type { Storage } from "./storage";
import { SecretKeyError, type SecretBox } from "../lib/secrets";

const FINGERPRINT = "key_fingerprint";

/** The instance settings and sealed secrets of the database behind `storage`. */
const instanceOf = (storage: Storage) => createInstanceRepository(storage);

/**
 * Which key a database's secrets are sealed with, read only: its recorded fingerprint, or else
 * (a database from before fingerprints, or one without the settings table: `withSettings` false)
 * one sealed secret to try a key on; both null when it holds nothing sealed.
 */
export async function sealedBy(
  storage: Storage,
  opts: { withSettings: boolean },
): Promise<{ fingerprint: string | null; sample: string | null }> {
  const repo = instanceOf(storage);
  const fingerprint = opts.withSettings ? await repo.setting(FINGERPRINT) : null;
  return { fingerprint, sample: fingerprint === null ? await repo.anySealedSecret() : null };
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
  const repo = instanceOf(storage);
  const stored = await repo.setting(FINGERPRINT);
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
  const sample = await repo.anySealedSecret();
  if (sample !== null) {
    if (!box.hasKey())
      throw new SecretKeyError(
        `the database holds encrypted secrets but ${named(box)} is missing: restore the key file from where the database came from`,
      );
    box.open(sample); // throws SecretKeyError when it is another database's key
  }
  const created = box.ensureKey();
  const mine = box.fingerprint()!;
  await repo.settingIfMissing(FINGERPRINT, mine);
  const winner = await repo.setting(FINGERPRINT);
  if (winner !== mine) {
    // Another server recorded its key at the same moment: ours was never used; take it back.
    if (created) box.discardCreated();
    throw new SecretKeyError(
      `${named(box)} is not this database's key: another server started at the same moment with its own key (fingerprint ${winner}); give every server that server's PIGEON_KEY_FILE`,
    );
  }
}
