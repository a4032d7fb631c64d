// Accounts, plans, workspaces (the spec's projects) and API keys: the operator's side, used by the
// CLI and by start-up. No Elysia here.
import type { Clock } from "../../clock";
import type { Db } from "../../db/client";
import { readCredentials, termsOf, type AuthContext, type KeyAuthContext } from "../../http/auth";
import { AppError } from "../../http/errors";
import type { SecretBox } from "../../lib/secrets";
import { matchesHash, nanoid, randomBase62, sha256Hex, uuid } from "../../lib/tokens";
import { createAccountRepository, type AccountRow, type ApiKeyRow, type PlanRow, type WorkspaceRow } from "./repository";

export type { AccountRow, ApiKeyRow, PlanRow, WorkspaceRow };

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
  const repo = createAccountRepository(db.$client);
  // The pairing token is shown to the owner again (pairing info), so it is sealed, not hashed.
  const reveal = (row: WorkspaceRow): WorkspaceRow => ({ ...row, pairingToken: secrets.open(row.pairingToken) });

  /** Plans, contact types and system templates every installation has; safe to run at every start. */
  function seed(): void {
    const now = clock.now();
    repo.transaction(() => {
      for (const p of DEFAULT_PLANS) {
        repo.insertPlanIfMissing({
          code: p.code,
          name: p.name,
          requestsPerMinute: p.requestsPerMinute ?? 60,
          requestsPerDay: p.requestsPerDay ?? 10000,
          monthlySmsLimit: p.monthlySmsLimit ?? null,
          allowUrls: p.allowUrls ?? true,
          createdAt: now,
        });
      }
      for (const ct of DEFAULT_CONTACT_TYPES) repo.insertContactTypeIfMissing(ct);
      for (const st of SYSTEM_TEMPLATES) {
        if (repo.systemTemplateExists(st.code)) continue;
        repo.insertTemplate({
          ...st,
          guid: uuid(),
          channel: "sms",
          isSystem: 1,
          status: "active",
          variables: [...st.body.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]),
          createdAt: now,
          updatedAt: now,
        });
      }
    });
  }

  function planByCode(code: string): PlanRow {
    const row = repo.planByCode(code);
    if (!row) throw new AppError("not_found", `plan "${code}" not found`);
    return row;
  }

  function insertWorkspace(accountId: number, name: string): WorkspaceRow {
    return reveal(repo.insertWorkspace({ accountId, name, pairingToken: secrets.seal(nanoid(32)), createdAt: clock.now() }));
  }

  /**
   * On an empty database: the owner account and its default workspace. Returns what it created,
   * or null when an account already exists.
   */
  function bootstrap(): { account: AccountRow; workspace: WorkspaceRow } | null {
    return repo.transaction(() => {
      if (repo.anyAccount()) return null;
      const owner = repo.insertAccount({ name: "Owner", planId: planByCode("owner").id, isOwner: true, createdAt: clock.now() });
      return { account: owner, workspace: insertWorkspace(owner.id, "Default") };
    });
  }

  function requireOwner(): AccountRow {
    const owner = repo.ownerAccount();
    if (owner) return owner;
    bootstrap();
    return repo.ownerAccount()!;
  }

  function getAccount(id: number): AccountRow {
    const row = repo.account(id);
    if (!row) throw new AppError("not_found", `account ${id} not found`);
    return row;
  }

  function getWorkspace(id: number): WorkspaceRow {
    const row = repo.workspace(id);
    if (!row) throw new AppError("not_found", `workspace ${id} not found`);
    return reveal(row);
  }

  function defaultWorkspace(): WorkspaceRow {
    const owner = requireOwner();
    return reveal(repo.firstWorkspaceOf(owner.id)!);
  }

  function createAccount(name: string, planCode = "free") {
    return repo.transaction(() => {
      const row = repo.insertAccount({ name, planId: planByCode(planCode).id, createdAt: clock.now() });
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
    const row = repo.insertApiKey({
      workspaceId: ws.id,
      name,
      key: `pk_${randomBase62(24)}`,
      secretHash: hash,
      secretHint: hint,
      createdAt: clock.now(),
    });
    return withSecret(row, secret);
  }

  function findKey(ref: string): ApiKeyRow {
    const row = repo.apiKey(/^\d+$/.test(ref) ? { id: Number(ref) } : { key: ref });
    if (!row) throw new AppError("not_found", `API key ${ref} not found`);
    return row;
  }

  /** A new secret for the same key; the old secret stops working at once. */
  function rotateKey(ref: string): CreatedKey {
    const row = findKey(ref);
    const { secret, hash, hint } = issueSecret();
    repo.updateApiKey(row.id, { secretHash: hash, secretHint: hint, rotatedAt: clock.now() });
    return withSecret(row, secret);
  }

  function setKeyStatus(ref: string, status: "active" | "disabled"): ApiKeyRow {
    const row = findKey(ref);
    return repo.updateApiKey(row.id, { status })!;
  }

  /** A workspace acted on by a dashboard user: its account's plan and caps, no key. 403 when suspended. */
  function callerFor(workspaceId: number): AuthContext {
    const row = repo.workspaceTerms(workspaceId);
    if (!row) throw new AppError("not_found", `workspace ${workspaceId} not found`);
    if (row.accountStatus !== "active") throw new AppError("account_suspended", "This account is suspended");
    return { keyId: null, keyName: "dashboard", ...termsOf(row) };
  }

  /**
   * An API request's caller, from its key and secret (every /v1 request). Missing or wrong
   * credentials: 401; a disabled key or a suspended account: 403, and only after the secret
   * matched, so the 403 leaks nothing.
   */
  function authenticate(headers: Headers): KeyAuthContext {
    const { key, secret } = readCredentials(headers);
    if (!key) {
      throw new AppError("unauthorized", "Missing API key: send Authorization: Bearer <API_KEY> (or x-api-key)");
    }
    if (!secret) throw new AppError("unauthorized", "Missing API secret: send X-API-SECRET (or x-api-secret)");
    const row = repo.keyCredentials(key);
    if (!row || !matchesHash(secret, row.secretHash)) {
      throw new AppError("unauthorized", "Invalid API key or secret");
    }
    if (row.keyStatus !== "active") throw new AppError("key_disabled", "This API key is disabled");
    if (row.accountStatus !== "active") throw new AppError("account_suspended", "This account is suspended");

    // last_used_at is a hint for the key list; writing it once a minute keeps requests read-only.
    const now = clock.now();
    if (row.lastUsedAt === null || now - row.lastUsedAt > 60_000) repo.touchKey(row.keyId, now);

    return { keyId: row.keyId, keyName: row.keyName, ...termsOf(row) };
  }

  /** An API key by its id, whatever its status; null when there is none. */
  function keyById(id: number): ApiKeyRow | null {
    return repo.apiKey({ id });
  }

  /** The workspaces a key of this workspace can see (the API's projects): the workspace itself. */
  function visibleWorkspaces(workspaceId: number): { id: number; name: string; createdAt: number }[] {
    const row = repo.workspace(workspaceId);
    return row ? [{ id: row.id, name: row.name, createdAt: row.createdAt }] : [];
  }

  function listKeys(workspaceId?: number): ApiKeyRow[] {
    return repo.apiKeys(workspaceId);
  }

  function setAccountStatus(id: number, status: "active" | "suspended"): AccountRow {
    getAccount(id);
    return repo.updateAccount(id, { status })!;
  }

  function setAccountPlan(id: number, planCode: string): AccountRow {
    getAccount(id);
    return repo.updateAccount(id, { planId: planByCode(planCode).id })!;
  }

  function setSmsLengthCap(id: number, cap: number): AccountRow {
    getAccount(id);
    return repo.updateAccount(id, { smsLengthCap: cap })!;
  }

  function listAccounts() {
    return repo.accountsWithPlan();
  }

  function listWorkspaces(accountId?: number): WorkspaceRow[] {
    return repo.workspaces(accountId).map(reveal);
  }

  function listPlans(): PlanRow[] {
    return repo.plans();
  }

  function upsertPlan(spec: PlanSpec): PlanRow {
    const values = {
      name: spec.name,
      requestsPerMinute: spec.requestsPerMinute ?? 60,
      requestsPerDay: spec.requestsPerDay ?? 10000,
      monthlySmsLimit: spec.monthlySmsLimit ?? null,
      allowUrls: spec.allowUrls ?? true,
    };
    return repo.upsertPlan({ code: spec.code, ...values, createdAt: clock.now() }, values);
  }

  function rotatePairingToken(workspaceId: number): WorkspaceRow {
    return reveal(repo.setPairingToken(workspaceId, secrets.seal(nanoid(32)))!);
  }

  return {
    seed,
    bootstrap,
    requireOwner,
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
    callerFor,
    authenticate,
    keyById,
    visibleWorkspaces,
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
