// Plans, accounts, workspaces and API keys. The operator's queries go through drizzle; the one
// lookup every API request makes (a key with its workspace, account and plan) is a prepared raw
// join, its columns aliased to the schema's names so its type still comes from the tables.
import type { Database, Statement } from "bun:sqlite";
import { and, asc, eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "../../db/schema";
import { account, apiKey, contactType, plan, template, workspace } from "../../db/schema";

export type PlanRow = typeof plan.$inferSelect;
export type AccountRow = typeof account.$inferSelect;
export type WorkspaceRow = typeof workspace.$inferSelect;
export type ApiKeyRow = typeof apiKey.$inferSelect;

/** What authenticating a request needs to know about its key, in one row. */
export type KeyCredentials = Pick<ApiKeyRow, "secretHash" | "lastUsedAt"> & {
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

/** SQLite hands booleans back as 0 or 1. */
type StoredKeyCredentials = Omit<KeyCredentials, "isOwner" | "allowUrls"> & { isOwner: number; allowUrls: number };

type NewPlan = typeof plan.$inferInsert;
type NewTemplate = typeof template.$inferInsert;
type NewContactType = typeof contactType.$inferInsert;

export function createAccountRepository(sqlite: Database) {
  const db = drizzle({ client: sqlite, schema });

  // One indexed lookup per request, prepared once.
  const byKey: Statement<StoredKeyCredentials, [string]> = sqlite.prepare(`
    SELECT k.id AS keyId, k.name AS keyName, k.secret_hash AS secretHash, k.status AS keyStatus, k.last_used_at AS lastUsedAt,
           w.id AS workspaceId, a.id AS accountId, a.status AS accountStatus, a.is_owner AS isOwner, a.sms_length_cap AS smsLengthCap,
           p.id AS planId, p.code AS planCode, p.requests_per_minute AS requestsPerMinute, p.requests_per_day AS requestsPerDay,
           p.monthly_sms_limit AS monthlySmsLimit, p.allow_urls AS allowUrls
    FROM api_key k
    JOIN workspace w ON w.id = k.workspace_id
    JOIN account a ON a.id = w.account_id
    JOIN plan p ON p.id = a.plan_id
    WHERE k.key = ?`);
  const touch = sqlite.prepare<never, [number, number]>("UPDATE api_key SET last_used_at = ? WHERE id = ?");
  // The same, for a workspace acted on without a key (a dashboard user).
  const byWorkspace: Statement<
    Omit<StoredKeyCredentials, "keyId" | "keyName" | "secretHash" | "keyStatus" | "lastUsedAt">,
    [number]
  > = sqlite.prepare(`
    SELECT w.id AS workspaceId, a.id AS accountId, a.status AS accountStatus, a.is_owner AS isOwner, a.sms_length_cap AS smsLengthCap,
           p.id AS planId, p.code AS planCode, p.requests_per_minute AS requestsPerMinute, p.requests_per_day AS requestsPerDay,
           p.monthly_sms_limit AS monthlySmsLimit, p.allow_urls AS allowUrls
    FROM workspace w JOIN account a ON a.id = w.account_id JOIN plan p ON p.id = a.plan_id
    WHERE w.id = ?`);

  return {
    // Request path.
    keyCredentials(key: string): KeyCredentials | null {
      const row = byKey.get(key);
      return row ? { ...row, isOwner: row.isOwner === 1, allowUrls: row.allowUrls === 1 } : null;
    },
    touchKey: (keyId: number, at: number) => void touch.run(at, keyId),
    workspaceTerms(workspaceId: number) {
      const row = byWorkspace.get(workspaceId);
      return row ? { ...row, isOwner: row.isOwner === 1, allowUrls: row.allowUrls === 1 } : null;
    },

    // Seeding.
    insertPlanIfMissing: (row: NewPlan) => void db.insert(plan).values(row).onConflictDoNothing().run(),
    insertContactTypeIfMissing: (row: NewContactType) => void db.insert(contactType).values(row).onConflictDoNothing().run(),
    systemTemplateExists(code: string): boolean {
      return (
        db
          .select({ id: template.id })
          .from(template)
          .where(and(eq(template.isSystem, 1), eq(template.code, code)))
          .get() !== undefined
      );
    },
    insertTemplate: (row: NewTemplate) => void db.insert(template).values(row).run(),

    // Plans.
    planByCode: (code: string): PlanRow | null => db.select().from(plan).where(eq(plan.code, code)).get() ?? null,
    plans: (): PlanRow[] => db.select().from(plan).orderBy(asc(plan.id)).all(),
    upsertPlan(row: NewPlan & { code: string; createdAt: number }, update: Partial<NewPlan>): PlanRow {
      return db.insert(plan).values(row).onConflictDoUpdate({ target: plan.code, set: update }).returning().get();
    },

    // Accounts.
    account: (id: number): AccountRow | null => db.select().from(account).where(eq(account.id, id)).get() ?? null,
    ownerAccount: (): AccountRow | null =>
      db.select().from(account).where(eq(account.isOwner, true)).orderBy(asc(account.id)).get() ?? null,
    anyAccount: (): boolean => db.select({ id: account.id }).from(account).limit(1).get() !== undefined,
    insertAccount: (row: typeof account.$inferInsert): AccountRow => db.insert(account).values(row).returning().get(),
    updateAccount(id: number, change: Partial<Pick<AccountRow, "status" | "planId" | "smsLengthCap">>): AccountRow | null {
      return db.update(account).set(change).where(eq(account.id, id)).returning().get() ?? null;
    },
    accountsWithPlan() {
      return db
        .select({
          id: account.id,
          name: account.name,
          status: account.status,
          isOwner: account.isOwner,
          plan: plan.code,
          smsLengthCap: account.smsLengthCap,
          createdAt: account.createdAt,
        })
        .from(account)
        .innerJoin(plan, eq(plan.id, account.planId))
        .orderBy(asc(account.id))
        .all();
    },

    // Workspaces.
    workspace: (id: number): WorkspaceRow | null => db.select().from(workspace).where(eq(workspace.id, id)).get() ?? null,
    firstWorkspaceOf: (accountId: number): WorkspaceRow | null =>
      db.select().from(workspace).where(eq(workspace.accountId, accountId)).orderBy(asc(workspace.id)).get() ?? null,
    workspaces(accountId?: number): WorkspaceRow[] {
      const q = db.select().from(workspace);
      return (accountId === undefined ? q : q.where(eq(workspace.accountId, accountId))).orderBy(asc(workspace.id)).all();
    },
    insertWorkspace: (row: typeof workspace.$inferInsert): WorkspaceRow => db.insert(workspace).values(row).returning().get(),
    setPairingToken(workspaceId: number, sealedToken: string): WorkspaceRow | null {
      return db.update(workspace).set({ pairingToken: sealedToken }).where(eq(workspace.id, workspaceId)).returning().get() ?? null;
    },

    // API keys.
    /** A key by its numeric id or by its public `pk_…` value. */
    apiKey(ref: { id: number } | { key: string }): ApiKeyRow | null {
      return (
        db
          .select()
          .from(apiKey)
          .where("id" in ref ? eq(apiKey.id, ref.id) : eq(apiKey.key, ref.key))
          .get() ?? null
      );
    },
    apiKeys(workspaceId?: number): ApiKeyRow[] {
      const q = db.select().from(apiKey);
      return (workspaceId === undefined ? q : q.where(eq(apiKey.workspaceId, workspaceId))).orderBy(asc(apiKey.id)).all();
    },
    insertApiKey: (row: typeof apiKey.$inferInsert): ApiKeyRow => db.insert(apiKey).values(row).returning().get(),
    updateApiKey(id: number, change: Partial<Pick<ApiKeyRow, "secretHash" | "secretHint" | "rotatedAt" | "status">>): ApiKeyRow | null {
      return db.update(apiKey).set(change).where(eq(apiKey.id, id)).returning().get() ?? null;
    },

    /** Runs `fn` in one synchronous transaction (nested in the caller's, if any). */
    transaction<T>(fn: () => T): T {
      return sqlite.transaction(fn)();
    },
  };
}

export type AccountRepository = ReturnType<typeof createAccountRepository>;
