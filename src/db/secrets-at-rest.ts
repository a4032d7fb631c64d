// Start-up pass over the secrets a database holds: proves pigeon.key opens what is sealed, then
// seals whatever an older version (or a restored plain copy) left in plain text. Idempotent and
// cheap: a handful of rows, skipped once everything carries its tag.
import type { Database } from "bun:sqlite";
import { SEALED_PREFIX, sealConfig, type SecretBox } from "../lib/secrets";

const UNSEALED = `NOT LIKE '${SEALED_PREFIX}%'`;

export function sealLegacySecrets(sqlite: Database, box: SecretBox): number {
  const sample = sqlite
    .query(
      `SELECT secret AS v FROM webhook_subscription WHERE secret LIKE '${SEALED_PREFIX}%'
       UNION ALL SELECT pairing_token FROM workspace WHERE pairing_token LIKE '${SEALED_PREFIX}%'
       UNION ALL SELECT webhook_key FROM device WHERE webhook_key LIKE '${SEALED_PREFIX}%' LIMIT 1`,
    )
    .get() as { v: string } | null;
  // Throws SecretKeyError when the key is missing or is another database's.
  if (sample) box.open(sample.v);

  // Freed space is zeroed, so a secret replaced (sealed, rotated, deleted) leaves no trace in pages.
  sqlite.run("PRAGMA secure_delete = FAST");
  let sealed = 0;
  sqlite.transaction(() => {
    for (const r of sqlite.query(`SELECT id, secret FROM webhook_subscription WHERE secret ${UNSEALED}`).all() as { id: number; secret: string }[]) {
      sqlite.run("UPDATE webhook_subscription SET secret = ? WHERE id = ?", [box.seal(r.secret), r.id]);
      sealed++;
    }
    for (const r of sqlite.query(`SELECT id, pairing_token FROM workspace WHERE pairing_token ${UNSEALED}`).all() as { id: number; pairing_token: string }[]) {
      sqlite.run("UPDATE workspace SET pairing_token = ? WHERE id = ?", [box.seal(r.pairing_token), r.id]);
      sealed++;
    }
    for (const r of sqlite.query(`SELECT id, webhook_key FROM device WHERE webhook_key IS NOT NULL AND webhook_key ${UNSEALED}`).all() as { id: number; webhook_key: string }[]) {
      sqlite.run("UPDATE device SET webhook_key = ? WHERE id = ?", [box.seal(r.webhook_key), r.id]);
      sealed++;
    }
    const configs = sqlite
      .query(`SELECT id, config FROM device WHERE config IS NOT NULL AND (json_extract(config, '$.authToken') ${UNSEALED} OR json_extract(config, '$.accessToken') ${UNSEALED})`)
      .all() as { id: number; config: string }[];
    for (const r of configs) {
      sqlite.run("UPDATE device SET config = ? WHERE id = ?", [JSON.stringify(sealConfig(box, JSON.parse(r.config))), r.id]);
      sealed++;
    }
    // One-time codes are only compared: a keyed digest replaces the code.
    for (const r of sqlite.query("SELECT rowid AS id, code FROM mobile_code WHERE code NOT LIKE 'hmac:%'").all() as { id: number; code: string }[]) {
      sqlite.run("UPDATE mobile_code SET code = ? WHERE rowid = ?", [box.digest(r.code), r.id]);
      sealed++;
    }
  })();
  // The plain values may still sit in WAL frames: copy the sealed pages home and empty the WAL.
  if (sealed > 0) sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
  return sealed;
}
