// The email bridge's reads and writes of its settings (email_setting), through the storage seam's executor.
import type { Executor } from "../../db/storage";

export interface EmailSettingRow {
  workspaceId: number;
  content: string;
  defaultCountry: string | null;
  secretHash: string | null;
  secretHint: string | null;
  keyId: number | null;
  keySecret: string | null;
  /** JSON list of allowed senders. */
  senders: string;
}

const COLUMNS = `workspace_id AS "workspaceId", content, default_country AS "defaultCountry", secret_hash AS "secretHash",
  secret_hint AS "secretHint", key_id AS "keyId", key_secret AS "keySecret", senders`;

export const NO_SETTINGS: Omit<EmailSettingRow, "workspaceId"> = {
  content: "body",
  defaultCountry: null,
  secretHash: null,
  secretHint: null,
  keyId: null,
  keySecret: null,
  senders: "[]",
};

export function createEmailRepository(db: Executor) {
  return {
    get: (workspaceId: number) => db.get<EmailSettingRow>(`SELECT ${COLUMNS} FROM email_setting WHERE workspace_id = ?`, [workspaceId]),
    bySecretHash: (hash: string) => db.get<EmailSettingRow>(`SELECT ${COLUMNS} FROM email_setting WHERE secret_hash = ?`, [hash]),
    /** Every allowlist of a workspace with a secret address: whether a sender may use one at all. */
    secretAllowlists: async () =>
      (await db.all<{ senders: string }>("SELECT senders FROM email_setting WHERE secret_hash IS NOT NULL")).map((r) => r.senders),
    async put(row: EmailSettingRow, now: number): Promise<void> {
      await db.run(
        `INSERT INTO email_setting (workspace_id, content, default_country, secret_hash, secret_hint, key_id, key_secret, senders, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (workspace_id) DO UPDATE SET content = excluded.content, default_country = excluded.default_country,
           secret_hash = excluded.secret_hash, secret_hint = excluded.secret_hint, key_id = excluded.key_id,
           key_secret = excluded.key_secret, senders = excluded.senders, updated_at = excluded.updated_at`,
        [row.workspaceId, row.content, row.defaultCountry, row.secretHash, row.secretHint, row.keyId, row.keySecret, row.senders, now],
      );
    },
  };
}
