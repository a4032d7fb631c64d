// The queries of the start-up sealing pass (secrets-at-rest.ts). They cross modules (webhook
// secrets, pairing tokens, device keys and configs, one-time codes) because the pass does: it is
// a property of the database file, not of one module. Columns are aliased to the schema's names;
// the rows' types are written out here, since the tables are declared by the modules above db/.
import type { Database, Statement } from "bun:sqlite";
import { SEALED_PREFIX } from "../lib/secrets";

const UNSEALED = `NOT LIKE '${SEALED_PREFIX}%'`;

type WebhookSecret = { id: number; secret: string };
type PairingToken = { id: number; pairingToken: string };
type DeviceKey = { id: number; webhookKey: string };
/** The config stays the stored JSON text: the pass rewrites it whole. */
type DeviceConfig = { id: number; config: string };
/** One-time codes have no id column; their rowid names them. */
type OneTimeCode = { code: string; rowid: number };

export function createSecretsAtRestRepository(sqlite: Database) {
  const anySealed: Statement<{ value: string }, []> = sqlite.prepare(
    `SELECT secret AS value FROM webhook_subscription WHERE secret LIKE '${SEALED_PREFIX}%'
     UNION ALL SELECT pairing_token FROM workspace WHERE pairing_token LIKE '${SEALED_PREFIX}%'
     UNION ALL SELECT webhook_key FROM device WHERE webhook_key LIKE '${SEALED_PREFIX}%' LIMIT 1`,
  );

  return {
    /** One sealed value of any kind, to prove the key opens it; null when nothing is sealed yet. */
    anySealedValue: (): string | null => anySealed.get()?.value ?? null,

    plainWebhookSecrets: (): WebhookSecret[] =>
      sqlite.query<WebhookSecret, []>(`SELECT id, secret FROM webhook_subscription WHERE secret ${UNSEALED}`).all(),
    setWebhookSecret: (id: number, secret: string) =>
      void sqlite.run("UPDATE webhook_subscription SET secret = ? WHERE id = ?", [secret, id]),

    plainPairingTokens: (): PairingToken[] =>
      sqlite.query<PairingToken, []>(`SELECT id, pairing_token AS pairingToken FROM workspace WHERE pairing_token ${UNSEALED}`).all(),
    setPairingToken: (id: number, token: string) => void sqlite.run("UPDATE workspace SET pairing_token = ? WHERE id = ?", [token, id]),

    plainDeviceKeys: (): DeviceKey[] =>
      sqlite
        .query<DeviceKey, []>(`SELECT id, webhook_key AS webhookKey FROM device WHERE webhook_key IS NOT NULL AND webhook_key ${UNSEALED}`)
        .all(),
    setDeviceKey: (id: number, key: string) => void sqlite.run("UPDATE device SET webhook_key = ? WHERE id = ?", [key, id]),

    /** Device configs holding a provider token in plain text. */
    plainDeviceConfigs: (): DeviceConfig[] =>
      sqlite
        .query<DeviceConfig, []>(
          `SELECT id, config FROM device WHERE config IS NOT NULL AND (json_extract(config, '$.authToken') ${UNSEALED} OR json_extract(config, '$.accessToken') ${UNSEALED})`,
        )
        .all(),
    setDeviceConfig: (id: number, configJson: string) => void sqlite.run("UPDATE device SET config = ? WHERE id = ?", [configJson, id]),

    undigestedCodes: (): OneTimeCode[] =>
      sqlite.query<OneTimeCode, []>("SELECT rowid, code FROM mobile_code WHERE code NOT LIKE 'hmac:%'").all(),
    setCode: (rowid: number, code: string) => void sqlite.run("UPDATE mobile_code SET code = ? WHERE rowid = ?", [code, rowid]),

    /** Freed space is zeroed from now on, so a replaced secret leaves no trace in free pages. */
    zeroFreedSpace: () => void sqlite.run("PRAGMA secure_delete = FAST"),
    /** Copies the WAL's pages home and empties it. */
    checkpoint: () => void sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)"),

    /** Runs `fn` in one synchronous transaction (no await inside). */
    transaction<T>(fn: () => T): T {
      return sqlite.transaction(fn)();
    },
  };
}
