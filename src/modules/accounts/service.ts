// Accounts, plans, workspaces (the spec's projects) and API keys: the operator's side, used by the
// CLI and by start-up. No Elysia here.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { readCredentials } from "../../http/auth";
import { agentSessionOf, termsOf, type AuthContext, type KeyAuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import {
  describeRecipients,
  keyExpired,
  KEY_SCOPES,
  recipientsOf,
  storedRecipients,
  utcDay,
  type KeyLimits,
  type KeyScope,
  type RecipientPolicy,
} from "../../core/scopes";
import type { Freshness } from "../../core/caller";
import { createGenerationCache } from "../../lib/generation-cache";
import type { SecretBox } from "../../lib/secrets";
import { matchesHash, nanoid, randomBase62, sha256Hex, uuid } from "../../lib/tokens";
import { createAccountRepository, type KeyCredentials } from "./repository";
import type { AccountRow, ApiKeyRow, PlanRow, WorkspaceRow } from "./model";

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

/** A key as the API, the CLI and the dashboard show it (never its secret). */
export interface KeyView {
  key_id: number;
  name: string;
  workspace_id: number;
  api_key: string;
  status: string;
  /** null: every scope. */
  scopes: KeyScope[] | null;
  /** anyone, contacts, tag:<tag>, or the numbers with commas. */
  recipients: string;
  daily_cap: number | null;
  expires_at: string | null;
  /** Its sends wait for a person's approval (docs/approval.md). */
  needs_approval: boolean;
  created_at: string;
  last_used_at: string | null;
}

export interface CreatedKey extends KeyView {
  api_secret: string;
}

/** What a key may be given when made or changed (undefined: left as it is; on create, no limit). */
export interface KeyOptions {
  name?: string;
  /** null: every scope. */
  scopes?: KeyScope[] | null;
  recipients?: RecipientPolicy;
  dailyCap?: number | null;
  expiresAt?: number | null;
  /** Its sends wait for a person's approval. */
  needsApproval?: boolean;
}

/** The limits a key's row gives its caller. */
export function limitsOf(row: Pick<ApiKeyRow, "scopes" | "recipients" | "dailyCap" | "expiresAt">): KeyLimits {
  const scopes = row.scopes === null ? null : KEY_SCOPES.filter((s) => (row.scopes as string[]).includes(s));
  return { scopes, recipients: recipientsOf(row.recipients), dailyCap: row.dailyCap, expiresAt: row.expiresAt };
}

/** A key's row as shown. */
export function keyView(row: ApiKeyRow): KeyView {
  const limits = limitsOf(row);
  return {
    key_id: row.id,
    name: row.name,
    workspace_id: row.workspaceId,
    api_key: row.key,
    status: row.status,
    scopes: limits.scopes,
    recipients: describeRecipients(limits.recipients),
    daily_cap: limits.dailyCap,
    expires_at: limits.expiresAt === null ? null : new Date(limits.expiresAt).toISOString(),
    needs_approval: row.needsApproval,
    created_at: new Date(row.createdAt).toISOString(),
    last_used_at: row.lastUsedAt === null ? null : new Date(row.lastUsedAt).toISOString(),
  };
}

/** The columns a key's options set. */
function columnsOf(options: KeyOptions) {
  return {
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.scopes === undefined ? {} : { scopes: options.scopes }),
    ...(options.recipients === undefined ? {} : { recipients: storedRecipients(options.recipients) }),
    ...(options.dailyCap === undefined ? {} : { dailyCap: options.dailyCap }),
    ...(options.expiresAt === undefined ? {} : { expiresAt: options.expiresAt }),
    ...(options.needsApproval === undefined ? {} : { needsApproval: options.needsApproval }),
  };
}

export function createAccountsService(storage: Storage, clock: Clock, secrets: SecretBox) {
  const repo = createAccountRepository(storage);
  // The pairing token is shown to the owner again (pairing info), so it is sealed, not hashed.
  const reveal = (row: WorkspaceRow): WorkspaceRow => ({ ...row, pairingToken: secrets.open(row.pairingToken) });

  /** Plans, contact types and system templates every installation has; safe to run at every start. */
  async function seed(): Promise<void> {
    const now = clock.now();
    await storage.transaction(async () => {
      for (const p of DEFAULT_PLANS) {
        await repo.insertPlanIfMissing({
          code: p.code,
          name: p.name,
          requestsPerMinute: p.requestsPerMinute ?? 60,
          requestsPerDay: p.requestsPerDay ?? 10000,
          monthlySmsLimit: p.monthlySmsLimit ?? null,
          allowUrls: p.allowUrls ?? true,
          createdAt: now,
        });
      }
      for (const ct of DEFAULT_CONTACT_TYPES) await repo.insertContactTypeIfMissing(ct);
      for (const st of SYSTEM_TEMPLATES) {
        if (await repo.systemTemplateExists(st.code)) continue;
        await repo.insertTemplate({
          ...st,
          guid: uuid(),
          channel: "sms",
          isSystem: true,
          status: "active",
          variables: [...st.body.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]),
          createdAt: now,
          updatedAt: now,
        });
      }
    });
  }

  async function planByCode(code: string): Promise<PlanRow> {
    const row = await repo.planByCode(code);
    if (!row) throw new AppError("not_found", `plan "${code}" not found`);
    return row;
  }

  async function insertWorkspace(accountId: number, name: string): Promise<WorkspaceRow> {
    return reveal(await repo.insertWorkspace({ accountId, name, pairingToken: secrets.seal(nanoid(32)), createdAt: clock.now() }));
  }

  /**
   * On an empty database: the owner account and its default workspace. Returns what it created,
   * or null when an account already exists.
   */
  function bootstrap(): Promise<{ account: AccountRow; workspace: WorkspaceRow } | null> {
    return storage.transaction(async () => {
      if (await repo.anyAccount()) return null;
      const owner = await repo.insertAccount({
        name: "Owner",
        planId: (await planByCode("owner")).id,
        isOwner: true,
        createdAt: clock.now(),
      });
      return { account: owner, workspace: await insertWorkspace(owner.id, "Default") };
    });
  }

  async function requireOwner(): Promise<AccountRow> {
    const owner = await repo.ownerAccount();
    if (owner) return owner;
    await bootstrap();
    return (await repo.ownerAccount())!;
  }

  async function getAccount(id: number): Promise<AccountRow> {
    const row = await repo.account(id);
    if (!row) throw new AppError("not_found", `account ${id} not found`);
    return row;
  }

  async function getWorkspace(id: number): Promise<WorkspaceRow> {
    const row = await repo.workspace(id);
    if (!row) throw new AppError("not_found", `workspace ${id} not found`);
    return reveal(row);
  }

  async function defaultWorkspace(): Promise<WorkspaceRow> {
    const owner = await requireOwner();
    return reveal((await repo.firstWorkspaceOf(owner.id))!);
  }

  function createAccount(name: string, planCode = "free") {
    return storage.transaction(async () => {
      const row = await repo.insertAccount({ name, planId: (await planByCode(planCode)).id, createdAt: clock.now() });
      return { account: row, workspace: await insertWorkspace(row.id, "Default") };
    });
  }

  async function createWorkspace(name: string, accountId?: number): Promise<WorkspaceRow> {
    const owner = accountId === undefined ? await requireOwner() : await getAccount(accountId);
    return insertWorkspace(owner.id, name);
  }

  /** A key as shown the one time its secret is known. */
  function withSecret(row: ApiKeyRow, secret: string): CreatedKey {
    return { ...keyView(row), api_secret: secret };
  }

  function issueSecret() {
    const secret = `sk_${randomBase62(40)}`;
    return { secret, hash: sha256Hex(secret), hint: secret.slice(-4) };
  }

  async function createKey(name: string, workspaceId?: number, options: KeyOptions = {}): Promise<CreatedKey> {
    const ws = workspaceId === undefined ? await defaultWorkspace() : await getWorkspace(workspaceId);
    const { secret, hash, hint } = issueSecret();
    const row = await repo.insertApiKey({
      ...columnsOf(options),
      workspaceId: ws.id,
      name,
      key: `pk_${randomBase62(24)}`,
      secretHash: hash,
      secretHint: hint,
      createdAt: clock.now(),
    });
    return withSecret(row, secret);
  }

  async function findKey(ref: string): Promise<ApiKeyRow> {
    const row = await repo.apiKey(/^\d+$/.test(ref) ? { id: Number(ref) } : { key: ref });
    if (!row) throw new AppError("not_found", `API key ${ref} not found`);
    return row;
  }

  /** A new secret for the same key; the old secret stops working at once. */
  async function rotateKey(ref: string): Promise<CreatedKey> {
    const row = await findKey(ref);
    const { secret, hash, hint } = issueSecret();
    await repo.updateApiKey(row.id, { secretHash: hash, secretHint: hint, rotatedAt: clock.now() });
    return withSecret(row, secret);
  }

  /** Changes a key's name or limits; what `change` leaves undefined stays. In `workspaceId` only, when given. */
  async function updateKey(ref: string, change: KeyOptions, workspaceId?: number): Promise<ApiKeyRow> {
    const row = await findKey(ref);
    if (workspaceId !== undefined && row.workspaceId !== workspaceId) throw new AppError("not_found", `API key ${ref} not found`);
    const columns = columnsOf(change);
    if (Object.keys(columns).length === 0) return row;
    return (await repo.updateApiKey(row.id, columns))!;
  }

  /** Whether a key's sends wait for a person's approval (docs/approval.md); takes effect on its next request. */
  function setKeyApproval(ref: string, needsApproval: boolean): Promise<ApiKeyRow> {
    return updateKey(ref, { needsApproval });
  }

  async function setKeyStatus(ref: string, status: "active" | "disabled"): Promise<ApiKeyRow> {
    const row = await findKey(ref);
    return (await repo.updateApiKey(row.id, { status }))!;
  }

  /** A workspace acted on by a dashboard user: its account's plan and caps, no key. 403 when suspended. */
  async function callerFor(workspaceId: number): Promise<AuthContext> {
    const row = await repo.workspaceTerms(workspaceId);
    if (!row) throw new AppError("not_found", `workspace ${workspaceId} not found`);
    if (row.accountStatus !== "active") throw new AppError("account_suspended", "This account is suspended");
    return { keyId: null, keyName: "dashboard", needsApproval: false, ...termsOf(row) };
  }

  // Each key's record kept between requests (src/lib/generation-cache.ts), so that a request
  // reads it only when something it holds may have changed, on either database. Only keys that
  // exist are kept: a made-up key costs a read each time.
  const kept = createGenerationCache<string, KeyCredentials>();

  /**
   * An API request's caller, from its key and secret (every /v1 request). Missing or wrong
   * credentials: 401; a disabled key or a suspended account: 403, and only after the secret
   * matched, so the 403 leaks nothing. With `freshness` (the shared limiter's), the key's record
   * may come from memory, and the caller says which generation it was read at.
   */
  async function authenticate(headers: Headers, freshness?: Freshness): Promise<KeyAuthContext> {
    const { key, secret } = readCredentials(headers);
    if (!key) {
      throw new AppError("unauthorized", "Missing API key: send Authorization: Bearer <API_KEY> (or x-api-key)");
    }
    if (!secret) throw new AppError("unauthorized", "Missing API secret: send X-API-SECRET (or x-api-secret)");
    const refusal = (row: KeyCredentials | null): AppError | null => {
      if (!row || !matchesHash(secret, row.secretHash)) return new AppError("unauthorized", "Invalid API key or secret");
      if (row.keyStatus !== "active") return new AppError("key_disabled", "This API key is disabled");
      if (row.accountStatus !== "active") return new AppError("account_suspended", "This account is suspended");
      if (row.expiresAt !== null && row.expiresAt <= clock.now()) return keyExpired(row.expiresAt);
      return null;
    };
    let row: KeyCredentials | null = null;
    let generation: number | undefined;
    const entry = freshness ? kept.peek(key) : undefined;
    // A kept record that would refuse the request is read again first: the secret may have been
    // rotated, or the key enabled again, through another server since it was kept.
    if (entry && (freshness?.atLeast === undefined || entry.tag >= freshness.atLeast) && !refusal(entry.value)) {
      row = entry.value;
      generation = entry.tag;
    } else {
      row = await repo.keyCredentials(key);
      generation = freshness?.known;
      if (row) kept.set(key, row, generation);
      else kept.delete(key);
    }
    const refused = refusal(row);
    if (refused || !row) throw refused;

    // last_used_at is a hint for the key list; written once a minute, without holding the request
    // up (a write that fails, on a full disk, loses nothing but the hint).
    const now = clock.now();
    if (row.lastUsedAt === null || now - row.lastUsedAt > 60_000) {
      row.lastUsedAt = now;
      repo.touchKey(row.keyId, now).catch(() => {});
    }

    return {
      keyId: row.keyId,
      keyName: row.keyName,
      needsApproval: row.needsApproval,
      agentSession: agentSessionOf(headers),
      ...termsOf(row),
      limits: limitsOf(row),
      ...(generation === undefined ? {} : { generation }),
    };
  }

  /**
   * The caller a key stands for when its holder proved it another way (an SMSGate token issued to
   * it, Twilio's account SID and auth token that act as it): its workspace's terms and its limits.
   * A disabled key: 403; an expired one: 401 key_expired.
   */
  async function callerForKey(key: ApiKeyRow): Promise<KeyAuthContext> {
    if (key.status !== "active") throw new AppError("key_disabled", "The API key these credentials act as is disabled");
    if (key.expiresAt !== null && key.expiresAt <= clock.now()) throw keyExpired(key.expiresAt);
    return {
      ...(await callerFor(key.workspaceId)),
      keyId: key.id,
      keyName: key.name,
      needsApproval: key.needsApproval,
      limits: limitsOf(key),
    };
  }

  /** An API key by its id, whatever its status; null when there is none. */
  function keyById(id: number): Promise<ApiKeyRow | null> {
    return repo.apiKey({ id });
  }

  /** The workspaces a key of this workspace can see (the API's projects): the workspace itself. */
  async function visibleWorkspaces(workspaceId: number): Promise<{ id: number; name: string; createdAt: number }[]> {
    const row = await repo.workspace(workspaceId);
    return row ? [{ id: row.id, name: row.name, createdAt: row.createdAt }] : [];
  }

  function listKeys(workspaceId?: number): Promise<ApiKeyRow[]> {
    return repo.apiKeys(workspaceId);
  }

  async function setAccountStatus(id: number, status: "active" | "suspended"): Promise<AccountRow> {
    await getAccount(id);
    return (await repo.updateAccount(id, { status }))!;
  }

  async function setAccountPlan(id: number, planCode: string): Promise<AccountRow> {
    await getAccount(id);
    return (await repo.updateAccount(id, { planId: (await planByCode(planCode)).id }))!;
  }

  async function setSmsLengthCap(id: number, cap: number): Promise<AccountRow> {
    await getAccount(id);
    return (await repo.updateAccount(id, { smsLengthCap: cap }))!;
  }

  function listAccounts() {
    return repo.accountsWithPlan();
  }

  async function listWorkspaces(accountId?: number): Promise<WorkspaceRow[]> {
    return (await repo.workspaces(accountId)).map(reveal);
  }

  function listPlans(): Promise<PlanRow[]> {
    return repo.plans();
  }

  function upsertPlan(spec: PlanSpec): Promise<PlanRow> {
    const values = {
      name: spec.name,
      requestsPerMinute: spec.requestsPerMinute ?? 60,
      requestsPerDay: spec.requestsPerDay ?? 10000,
      monthlySmsLimit: spec.monthlySmsLimit ?? null,
      allowUrls: spec.allowUrls ?? true,
    };
    return repo.upsertPlan({ code: spec.code, ...values, createdAt: clock.now() }, values);
  }

  async function rotatePairingToken(workspaceId: number): Promise<WorkspaceRow> {
    return reveal((await repo.setPairingToken(workspaceId, secrets.seal(nanoid(32))))!);
  }

  return {
    /** The database's cache generation (what SQLite's in-memory limiter reads once a request). */
    cacheGeneration: () => repo.cacheGeneration(),
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
    updateKey,
    callerForKey,
    /** Inside the accept's unit of work: the key's sends today (UTC), its counter row held (api_key_day). */
    holdKeyDay: (keyId: number, now: number) => repo.holdKeyDay(keyId, utcDay(now)),
    addKeyDaySends: (keyId: number, now: number, count: number) => repo.addKeyDaySends(keyId, utcDay(now), count),
    /** The key's sends today (UTC), as the key list shows them. */
    keySendsToday: (keyId: number) => repo.keyDaySends(keyId, utcDay(clock.now())),
    /** The key's sends on the UTC day of `now`. */
    keyDaySendsOn: (keyId: number, now: number) => repo.keyDaySends(keyId, utcDay(now)),
    rotateKey,
    setKeyStatus,
    setKeyApproval,
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
