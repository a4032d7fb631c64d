// The installation's own facts (instance_setting) and the one question the key check asks of the
// secrets' tables: is anything stored sealed yet?
import { SEALED_PREFIX } from "../lib/secrets";
import type { Executor } from "./storage";

const SEALED = `'${SEALED_PREFIX}%'`;

export function createInstanceRepository(db: Executor) {
  return {
    setting: async (name: string): Promise<string | null> =>
      (await db.get<{ value: string }>("SELECT value FROM instance_setting WHERE name = ?", [name]))?.value ?? null,
    /** Records `value` unless the setting exists already (whoever wrote it first wins). */
    settingIfMissing: async (name: string, value: string) =>
      void (await db.run("INSERT INTO instance_setting (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING", [name, value])),
    /** One sealed secret, if any is stored. */
    anySealedSecret: async (): Promise<string | null> =>
      (
        await db.get<{ value: string }>(
          `SELECT secret AS value FROM webhook_subscription WHERE secret LIKE ${SEALED}
           UNION ALL SELECT pairing_token FROM workspace WHERE pairing_token LIKE ${SEALED}
           UNION ALL SELECT webhook_key FROM device WHERE webhook_key LIKE ${SEALED} LIMIT 1`,
        )
      )?.value ?? null,
  };
}
