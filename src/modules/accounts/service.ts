// Accounts, plans, workspaces (the spec's projects) and API keys: the operator's side, used by the
// CLI and by start-up. No Elysia here.
import { and, asc, eq } from "drizzle-orm";
import type { Clock } from "../../clock";
import type { Db } from "../../db/client";
import { account, apiKey, contactType, plan, template, workspace } from "../../db/schema";
import { AppError } from "../../http/errors";
import type { SecretBox } from "../../lib/secrets";
import { nanoid, randomBase62, sha256Hex, uuid } from "../../lib/tokens";

export type PlanRow = typeof plan.$inferSelect;
export type AccountRow = typeof account.$inferSelect;
export type WorkspaceRow = typeof workspace.$inferSelect;
export type ApiKeyRow = typeof apiKey.$inferSelect;

export interface PlanSpec {
  code: string;
  name: string;
  requestsPerMinute?: number;
  requestsPerDay?: number;
  monthlySmsLimit?: number | null;
  allowUrls?: boolean;
}

const DEFAULT_PLANS: PlanSpec[] = [
  { code: "owner", name: "Owner (unlimited)", monthlySmsLimit: null, allowUrls: true },
  { code: "free", name: "Free", monthlySmsLimit: 10, allowUrls: false },
  { code: "standard", name: "Standard", monthlySmsLimit: 5000, allowUrls: true },
];

const DEFAULT_CONTACT_TYPES = [
  { code: "customer", name: "Customer", description: "Buys from the business" },
  { code: "lead", name: "Lead", description: "A prospective customer" },
  { code: "supplier", name: "Supplier", description: "Sells to the business" },
  { code: "staff", name: "Staff", description: "Works for the business" },
  { code: "other", name: "Other", description: "Anyone else" },
];

const SYSTEM_TEMPLATES = [
  {
    code: "OTP",
    name: "One-time code",
    description: "A verification code with its validity",
    body: "Your verification code is {{code}}. It expires in {{minutes}} minutes.",
  },
  {
    code: "APPT_REMINDER",
    name: "Appointment reminder",
    description: "Reminds a customer of an appointment",
    body: "Hi {{name}}, this is a reminder of your appointment on {{date}} at {{time}}.",
  },
  {
    code: "ORDER_READY",
    name: "Order ready",
    description: "Tells a customer their order can be collected",
    body: "Hi {{name}}, your order {{order_id}} is ready for pickup.",
  },
];

export interface CreatedKey {
  key_id: number;
  name: string;
  workspace_id: number;
  api_key: string;
  api_secret: string;
  status: string;
  created_at: string;
}

export function createAccountsService(db: Db, clock: Clock, secrets: SecretBox) {
  // The pairing token is shown to the owner again (pairing info), so it is sealed, not hashed.
  const reveal = (row: WorkspaceRow): WorkspaceRow => ({ ...row, pairingToken: secrets.open(row.pairingToken) });

  /** Plans, contact types and system templates every installation has; safe to run at every start. */
  function seed(): void {
    const now = clock.now();
    db.transaction((tx) => {
      for (const p of DEFAULT_PLANS) {
        tx.insert(plan)
          .values({
            code: p.code,
            name: p.name,
            requestsPerMinute: p.requestsPerMinute ?? 60,
            requestsPerDay: p.requestsPerDay ?? 10000,
            monthlySmsLimit: p.monthlySmsLimit ?? null,
            allowUrls: p.allowUrls ?? true,
            createdAt: now,
          })
          .onConflictDoNothing()
          .run();
      }
      for (const ct of DEFAULT_CONTACT_TYPES) tx.insert(contactType).values(ct).onConflictDoNothing().run();
      for (const st of SYSTEM_TEMPLATES) {
        const exists = tx
          .select({ id: template.id })
          .from(template)
          .where(and(eq(template.isSystem, 1), eq(template.code, st.code)))
          .get();
        if (exists) continue;
        tx.insert(template)
          .values({
            ...st,
            guid: uuid(),
            channel: "sms",
            isSystem: 1,
            status: "active",
            variables: [...st.body.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]),
            createdAt: now,
            updatedAt: now,
          })
          .run();
      }
    });
  }

  function planByCode(code: string): PlanRow {
    const row = db.select().from(plan).where(eq(plan.code, code)).get();
    if (!row) throw new AppError("not_found", `plan "${code}" not found`);
    return row;
  }

  function ownerAccount(): AccountRow | null {
    return db.select().from(account).where(eq(account.isOwner, true)).orderBy(asc(account.id)).get() ?? null;
  }

  function insertWorkspace(accountId: number, name: string): WorkspaceRow {
    return reveal(
      db
        .insert(workspace)
        .values({ accountId, name, pairingToken: secrets.seal(nanoid(32)), createdAt: clock.now() })
        .returning()
        .get(),
    );
  }

  /**
   * On an empty database: the owner account and its default workspace. Returns what it created,
   * or null when an account already exists.
   */
  function bootstrap(): { account: AccountRow; workspace: WorkspaceRow } | null {
    return db.transaction(() => {
      const any = db.select({ id: account.id }).from(account).limit(1).get();
      if (any) return null;
      const owner = db
        .insert(account)
        .values({ name: "Owner", planId: planByCode("owner").id, isOwner: true, createdAt: clock.now() })
        .returning()
        .get();
      return { account: owner, workspace: insertWorkspace(owner.id, "Default") };
    });
  }

  function requireOwner(): AccountRow {
    const owner = ownerAccount();
    if (owner) return owner;
    bootstrap();
    return ownerAccount()!;
  }

  function getAccount(id: number): AccountRow {
    const row = db.select().from(account).where(eq(account.id, id)).get();
    if (!row) throw new AppError("not_found", `account ${id} not found`);
    return row;
  }

  function getWorkspace(id: number): WorkspaceRow {
    const row = db.select().from(workspace).where(eq(workspace.id, id)).get();
    if (!row) throw new AppError("not_found", `workspace ${id} not found`);
    return reveal(row);
  }

  function defaultWorkspace(): WorkspaceRow {
    const owner = requireOwner();
    return reveal(db.select().from(workspace).where(eq(workspace.accountId, owner.id)).orderBy(asc(workspace.id)).get()!);
  }

  function createAccount(name: string, planCode = "free") {
    return db.transaction(() => {
      const row = db
        .insert(account)
        .values({ name, planId: planByCode(planCode).id, createdAt: clock.now() })
        .returning()
        .get();
      return { account: row, workspace: insertWorkspace(row.id, "Default") };
    });
  }

  function createWorkspace(name: string, accountId?: number): WorkspaceRow {
    const owner = accountId === undefined ? requireOwner() : getAccount(accountId);
    return insertWorkspace(owner.id, name);
  }

  /** A key as shown the one time its secret is known. */
  function withSecret(row: ApiKeyRow, secret: string): CreatedKey {
    return {
      key_id: row.id,
      name: row.name,
      workspace_id: row.workspaceId,
      api_key: row.key,
      api_secret: secret,
      status: row.status,
      created_at: new Date(row.createdAt).toISOString(),
    };
  }

  function issueSecret() {
    const secret = `sk_${randomBase62(40)}`;
    return { secret, hash: sha256Hex(secret), hint: secret.slice(-4) };
  }

  function createKey(name: string, workspaceId?: number): CreatedKey {
    const ws = workspaceId === undefined ? defaultWorkspace() : getWorkspace(workspaceId);
    const { secret, hash, hint } = issueSecret();
    const row = db
      .insert(apiKey)
      .values({
        workspaceId: ws.id,
        name,
        key: `pk_${randomBase62(24)}`,
        secretHash: hash,
        secretHint: hint,
        createdAt: clock.now(),
      })
      .returning()
      .get();
    return withSecret(row, secret);
  }

  function findKey(ref: string): ApiKeyRow {
    const byId = /^\d+$/.test(ref) ? eq(apiKey.id, Number(ref)) : eq(apiKey.key, ref);
    const row = db.select().from(apiKey).where(byId).get();
    if (!row) throw new AppError("not_found", `API key ${ref} not found`);
    return row;
  }

  /** A new secret for the same key; the old secret stops working at once. */
  function rotateKey(ref: string): CreatedKey {
    const row = findKey(ref);
    const { secret, hash, hint } = issueSecret();
    db.update(apiKey).set({ secretHash: hash, secretHint: hint, rotatedAt: clock.now() }).where(eq(apiKey.id, row.id)).run();
    return withSecret(row, secret);
  }

  function setKeyStatus(ref: string, status: "active" | "disabled"): ApiKeyRow {
    const row = findKey(ref);
    return db.update(apiKey).set({ status }).where(eq(apiKey.id, row.id)).returning().get();
  }

  function listKeys(workspaceId?: number): ApiKeyRow[] {
    const q = db.select().from(apiKey);
    return (workspaceId === undefined ? q : q.where(eq(apiKey.workspaceId, workspaceId))).orderBy(asc(apiKey.id)).all();
  }

  function setAccountStatus(id: number, status: "active" | "suspended"): AccountRow {
    getAccount(id);
    return db.update(account).set({ status }).where(eq(account.id, id)).returning().get();
  }

  function setAccountPlan(id: number, planCode: string): AccountRow {
    getAccount(id);
    return db.update(account).set({ planId: planByCode(planCode).id }).where(eq(account.id, id)).returning().get();
  }

  function setSmsLengthCap(id: number, cap: number): AccountRow {
    getAccount(id);
    return db.update(account).set({ smsLengthCap: cap }).where(eq(account.id, id)).returning().get();
  }

  function listAccounts() {
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
  }

  function listWorkspaces(accountId?: number): WorkspaceRow[] {
    const q = db.select().from(workspace);
    return (accountId === undefined ? q : q.where(eq(workspace.accountId, accountId))).orderBy(asc(workspace.id)).all().map(reveal);
  }

  function listPlans(): PlanRow[] {
    return db.select().from(plan).orderBy(asc(plan.id)).all();
  }

  function upsertPlan(spec: PlanSpec): PlanRow {
    const values = {
      name: spec.name,
      requestsPerMinute: spec.requestsPerMinute ?? 60,
      requestsPerDay: spec.requestsPerDay ?? 10000,
      monthlySmsLimit: spec.monthlySmsLimit ?? null,
      allowUrls: spec.allowUrls ?? true,
    };
    return db
      .insert(plan)
      .values({ code: spec.code, ...values, createdAt: clock.now() })
      .onConflictDoUpdate({ target: plan.code, set: values })
      .returning()
      .get();
  }

  function rotatePairingToken(workspaceId: number): WorkspaceRow {
    return reveal(
      db
        .update(workspace)
        .set({ pairingToken: secrets.seal(nanoid(32)) })
        .where(eq(workspace.id, workspaceId))
        .returning()
        .get(),
    );
  }

  return {
    seed,
    bootstrap,
    planByCode,
    getAccount,
    getWorkspace,
    defaultWorkspace,
    createAccount,
    createWorkspace,
    createKey,
    rotateKey,
    setKeyStatus,
    listKeys,
    setAccountStatus,
    setAccountPlan,
    setSmsLengthCap,
    listAccounts,
    listWorkspaces,
    listPlans,
    upsertPlan,
    rotatePairingToken,
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;
