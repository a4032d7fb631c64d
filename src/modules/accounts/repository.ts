// Plans, accounts, workspaces and API keys, on the storage seam. The lookup every API request
// makes (a key with its workspace, account and plan) is one join, its columns aliased to the
// schema's names so its type still comes from the tables.
import { tableRecords } from "../../db/records";
import { contactType } from "../contacts/schema";
import { template } from "../templates/schema";
import { account, apiKey, plan, workspace } from "./schema";
import type { Executor, SqlParam } from "../../db/storage";
import type { AccountRow, ApiKeyRow, PlanRow, WorkspaceRow } from "./model";

/** What authenticating a request needs to know about its key, in one row. */
export type KeyCredentials = Pick<
  ApiKeyRow,
  "secretHash" | "lastUsedAt" | "scopes" | "recipients" | "dailyCap" | "expiresAt" | "needsApproval"
> & {
  keyId: ApiKeyRow["id"];
  keyName: ApiKeyRow["name"];
  keyStatus: ApiKeyRow["status"];
  workspaceId: WorkspaceRow["id"];
  accountId: AccountRow["id"];
  accountStatus: AccountRow["status"];
  planId: PlanRow["id"];
  planCode: PlanRow["code"];
} & Pick<AccountRow, "isOwner" | "smsLengthCap"> &
  Pick<PlanRow, "requestsPerMinute" | "requestsPerDay" | "monthlySmsLimit" | "allowUrls">;

/** SQLite hands booleans back as 0 or 1 (PostgreSQL as booleans). */
type StoredKeyCredentials = Omit<KeyCredentials, "isOwner" | "allowUrls" | "scopes" | "recipients" | "needsApproval"> & {
  isOwner: number | boolean;
  allowUrls: number | boolean;
  scopes: string | null;
  recipients: string | null;
  needsApproval: number | boolean;
};
type StoredTerms = Omit<
  StoredKeyCredentials,
  "keyId" | "keyName" | "secretHash" | "keyStatus" | "lastUsedAt" | "scopes" | "recipients" | "dailyCap" | "expiresAt" | "needsApproval"
>;
const json = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

type NewPlan = typeof plan.$inferInsert;
type NewTemplate = typeof template.$inferInsert;
type NewContactType = typeof contactType.$inferInsert;

const plans = tableRecords(plan);
const accounts = tableRecords(account);
const workspaces = tableRecords(workspace);
const keys = tableRecords(apiKey);
const contactTypes = tableRecords(contactType);
const templates = tableRecords(template);

const TERMS = `w.id AS "workspaceId", a.id AS "accountId", a.status AS "accountStatus", a.is_owner AS "isOwner", a.sms_length_cap AS "smsLengthCap",
  p.id AS "planId", p.code AS "planCode", p.requests_per_minute AS "requestsPerMinute", p.requests_per_day AS "requestsPerDay",
  p.monthly_sms_limit AS "monthlySmsLimit", p.allow_urls AS "allowUrls"`;
const flag = (v: number | boolean) => v === true || v === 1;

export function createAccountRepository(db: Executor) {
  /** One record of a table, or null. */
  const one = async <T>(records: { record(row: Record<string, unknown>): T }, sql: string, params: SqlParam[] = []): Promise<T | null> => {
    const row = await db.get<Record<string, unknown>>(sql, params);
    return row ? records.record(row) : null;
  };
  const many = async <T>(records: { record(row: Record<string, unknown>): T }, sql: string, params: SqlParam[] = []): Promise<T[]> =>
    (await db.all<Record<string, unknown>>(sql, params)).map((row) => records.record(row));
  const insert = async <T>(
    records: { insert(v: object): { sql: string; params: SqlParam[] }; record(row: Record<string, unknown>): T },
    row: object,
  ) => {
    const q = records.insert(row);
    return (await one(records, q.sql, q.params))!;
  };

  return {
    // Request path.
    async keyCredentials(key: string): Promise<KeyCredentials | null> {
      const row = await db.get<StoredKeyCredentials>(
        `SELECT k.id AS "keyId", k.name AS "keyName", k.secret_hash AS "secretHash", k.status AS "keyStatus", k.last_used_at AS "lastUsedAt",
          k.scopes, k.recipients, k.daily_cap AS "dailyCap", k.expires_at AS "expiresAt",
          k.needs_approval AS "needsApproval", ${TERMS}
        FROM api_key k
        JOIN workspace w ON w.id = k.workspace_id
        JOIN account a ON a.id = w.account_id
        JOIN plan p ON p.id = a.plan_id
        WHERE k.key = ?`,
        [key],
      );
      if (!row) return null;
      const dailyCap = row.dailyCap === null ? null : Number(row.dailyCap);
      const expiresAt = row.expiresAt === null ? null : Number(row.expiresAt);
      return {
        ...row,
        isOwner: flag(row.isOwner),
        allowUrls: flag(row.allowUrls),
        needsApproval: flag(row.needsApproval),
        scopes: json<string[]>(row.scopes),
        recipients: json<string | string[]>(row.recipients),
        dailyCap,
        expiresAt,
      };
    },
    /**
     * The cache generation (migrations/0034_cache_generation.sql, migrations-pg/0011), which every
     * change to a key, its account, plan or workspace adds one to: 0 until the first change.
     */
    async cacheGeneration(): Promise<number> {
      return Number((await db.get<{ value: string }>("SELECT value FROM instance_setting WHERE name = 'cache_generation'"))?.value ?? 0);
    },
    async touchKey(keyId: number, at: number): Promise<void> {
      await db.run("UPDATE api_key SET last_used_at = ? WHERE id = ?", [at, keyId]);
    },
    /** The same terms, for a workspace acted on without a key (a dashboard user). */
    async workspaceTerms(workspaceId: number) {
      const row = await db.get<StoredTerms>(
        `SELECT ${TERMS} FROM workspace w JOIN account a ON a.id = w.account_id JOIN plan p ON p.id = a.plan_id WHERE w.id = ?`,
        [workspaceId],
      );
      return row ? { ...row, isOwner: flag(row.isOwner), allowUrls: flag(row.allowUrls) } : null;
    },

    // Seeding.
    async insertPlanIfMissing(row: NewPlan): Promise<void> {
      const q = plans.insert(row);
      await db.run(q.sql.replace(/ RETURNING .*$/s, " ON CONFLICT DO NOTHING"), q.params);
    },
    async insertContactTypeIfMissing(row: NewContactType): Promise<void> {
      const q = contactTypes.insert(row);
      await db.run(q.sql.replace(/ RETURNING .*$/s, " ON CONFLICT DO NOTHING"), q.params);
    },
    systemTemplateExists: async (code: string): Promise<boolean> =>
      (await db.get("SELECT id FROM template WHERE is_system = 1 AND code = ?", [code])) !== null,
    async insertTemplate(row: NewTemplate): Promise<void> {
      await insert(templates, row);
    },

    // Plans.
    planByCode: (code: string): Promise<PlanRow | null> => one(plans, `SELECT ${plans.columns()} FROM plan WHERE code = ?`, [code]),
    plans: (): Promise<PlanRow[]> => many(plans, `SELECT ${plans.columns()} FROM plan ORDER BY id`),
    async upsertPlan(row: NewPlan & { code: string; createdAt: number }, update: Partial<NewPlan>): Promise<PlanRow> {
      const q = plans.insert(row);
      const set = plans.assign(update);
      const [values] = q.sql.split(" RETURNING ");
      return (await one(plans, `${values} ON CONFLICT (code) DO UPDATE SET ${set.sql} RETURNING ${plans.columns()}`, [
        ...q.params,
        ...set.params,
      ]))!;
    },

    // Accounts.
    account: (id: number): Promise<AccountRow | null> => one(accounts, `SELECT ${accounts.columns()} FROM account WHERE id = ?`, [id]),
    ownerAccount: (): Promise<AccountRow | null> =>
      one(accounts, `SELECT ${accounts.columns()} FROM account WHERE is_owner = ? ORDER BY id LIMIT 1`, [true]),
    anyAccount: async (): Promise<boolean> => (await db.get("SELECT id FROM account LIMIT 1")) !== null,
    insertAccount: (row: typeof account.$inferInsert): Promise<AccountRow> => insert(accounts, row),
    async updateAccount(id: number, change: Partial<Pick<AccountRow, "status" | "planId" | "smsLengthCap">>): Promise<AccountRow | null> {
      const set = accounts.assign(change);
      return one(accounts, `UPDATE account SET ${set.sql} WHERE id = ? RETURNING ${accounts.columns()}`, [...set.params, id]);
    },
    async accountsWithPlan() {
      const rows = await db.all<{
        id: number;
        name: string;
        status: AccountRow["status"];
        isOwner: number | boolean;
        plan: string;
        smsLengthCap: number;
        createdAt: number;
      }>(
        `SELECT a.id, a.name, a.status, a.is_owner AS "isOwner", p.code AS plan, a.sms_length_cap AS "smsLengthCap", a.created_at AS "createdAt"
        FROM account a JOIN plan p ON p.id = a.plan_id ORDER BY a.id`,
      );
      return rows.map((r) => ({ ...r, isOwner: flag(r.isOwner) }));
    },

    // Workspaces.
    workspace: (id: number): Promise<WorkspaceRow | null> =>
      one(workspaces, `SELECT ${workspaces.columns()} FROM workspace WHERE id = ?`, [id]),
    firstWorkspaceOf: (accountId: number): Promise<WorkspaceRow | null> =>
      one(workspaces, `SELECT ${workspaces.columns()} FROM workspace WHERE account_id = ? ORDER BY id LIMIT 1`, [accountId]),
    workspaces: (accountId?: number): Promise<WorkspaceRow[]> =>
      accountId === undefined
        ? many(workspaces, `SELECT ${workspaces.columns()} FROM workspace ORDER BY id`)
        : many(workspaces, `SELECT ${workspaces.columns()} FROM workspace WHERE account_id = ? ORDER BY id`, [accountId]),
    insertWorkspace: (row: typeof workspace.$inferInsert): Promise<WorkspaceRow> => insert(workspaces, row),
    setPairingToken: (workspaceId: number, sealedToken: string): Promise<WorkspaceRow | null> =>
      one(workspaces, `UPDATE workspace SET pairing_token = ? WHERE id = ? RETURNING ${workspaces.columns()}`, [sealedToken, workspaceId]),

    // API keys.
    /** A key by its numeric id or by its public `pk_…` value. */
    apiKey: (ref: { id: number } | { key: string }): Promise<ApiKeyRow | null> =>
      "id" in ref
        ? one(keys, `SELECT ${keys.columns()} FROM api_key WHERE id = ?`, [ref.id])
        : one(keys, `SELECT ${keys.columns()} FROM api_key WHERE key = ?`, [ref.key]),
    apiKeys: (workspaceId?: number): Promise<ApiKeyRow[]> =>
      workspaceId === undefined
        ? many(keys, `SELECT ${keys.columns()} FROM api_key ORDER BY id`)
        : many(keys, `SELECT ${keys.columns()} FROM api_key WHERE workspace_id = ? ORDER BY id`, [workspaceId]),
    insertApiKey: (row: typeof apiKey.$inferInsert): Promise<ApiKeyRow> => insert(keys, row),
    async updateApiKey(
      id: number,
      change: Partial<
        Pick<
          ApiKeyRow,
          | "secretHash"
          | "secretHint"
          | "rotatedAt"
          | "status"
          | "name"
          | "scopes"
          | "recipients"
          | "dailyCap"
          | "expiresAt"
          | "needsApproval"
        >
      >,
    ): Promise<ApiKeyRow | null> {
      const set = keys.assign(change);
      return one(keys, `UPDATE api_key SET ${set.sql} WHERE id = ? RETURNING ${keys.columns()}`, [...set.params, id]);
    },

    // A key's daily send count (api_key_day).
    /**
     * Inside a unit of work: the sends the key accepted on `day`, its row made if missing and held
     * until the unit ends. The upsert's update takes the row's lock on PostgreSQL, so a concurrent
     * accept of the same key waits and then reads the count this one leaves; SQLite's single
     * writer already runs them one after another.
     */
    async holdKeyDay(keyId: number, day: number): Promise<number> {
      const row = await db.get<{ sends: number }>(
        `INSERT INTO api_key_day (key_id, day, sends) VALUES (?, ?, 0)
        ON CONFLICT (key_id, day) DO UPDATE SET sends = api_key_day.sends RETURNING sends`,
        [keyId, day],
      );
      return Number(row?.sends ?? 0);
    },
    async addKeyDaySends(keyId: number, day: number, count: number): Promise<void> {
      await db.run("UPDATE api_key_day SET sends = sends + ? WHERE key_id = ? AND day = ?", [count, keyId, day]);
    },
    keyDaySends: async (keyId: number, day: number): Promise<number> =>
      Number((await db.get<{ sends: number }>("SELECT sends FROM api_key_day WHERE key_id = ? AND day = ?", [keyId, day]))?.sends ?? 0),
  };
}

export type AccountRepository = ReturnType<typeof createAccountRepository>;
