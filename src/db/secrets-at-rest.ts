// Start-up pass over the secrets a database holds: proves pigeon.key opens what is sealed, then
// seals whatever an older version (or a restored plain copy) left in plain text. Idempotent and
// cheap: a handful of rows, skipped once everything carries its tag.
import type { Database } from "bun:sqlite";
import { sealConfig, type SecretBox } from "../lib/secrets";
import { createSecretsAtRestRepository } from "./secrets-at-rest-repository";

export function sealLegacySecrets(sqlite: Database, box: SecretBox): number {
  const repo = createSecretsAtRestRepository(sqlite);
  const sample = repo.anySealedValue();
  // Throws SecretKeyError when the key is missing or is another database's.
  if (sample !== null) box.open(sample);

  // Freed space is zeroed, so a secret replaced (sealed, rotated, deleted) leaves no trace in pages.
  repo.zeroFreedSpace();
  let sealed = 0;
  repo.transaction(() => {
    for (const r of repo.plainWebhookSecrets()) {
      repo.setWebhookSecret(r.id, box.seal(r.secret));
      sealed++;
    }
    for (const r of repo.plainPairingTokens()) {
      repo.setPairingToken(r.id, box.seal(r.pairingToken));
      sealed++;
    }
    for (const r of repo.plainDeviceKeys()) {
      repo.setDeviceKey(r.id, box.seal(r.webhookKey));
      sealed++;
    }
    for (const r of repo.plainDeviceConfigs()) {
      repo.setDeviceConfig(r.id, JSON.stringify(sealConfig(box, JSON.parse(r.config))));
      sealed++;
    }
    // One-time codes are only compared: a keyed digest replaces the code.
    for (const r of repo.undigestedCodes()) {
      repo.setCode(r.rowid, box.digest(r.code));
      sealed++;
    }
  });
  // The plain values may still sit in WAL frames: copy the sealed pages home and empty the WAL.
  if (sealed > 0) repo.checkpoint();
  return sealed;
}
