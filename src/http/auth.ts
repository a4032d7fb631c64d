// API-key authentication (spec section 5): `Authorization: Bearer <key>` + `X-API-SECRET`, or the
// `x-api-key` + `x-api-secret` pair. Missing or wrong credentials: 401; a disabled key or a
// suspended account: 403, and only after the secret matched, so the 403 leaks nothing.
import type { Database, Statement } from "bun:sqlite";
import type { Clock } from "../clock";
import { matchesHash } from "../lib/tokens";
import { AppError } from "./errors";

export interface AuthContext {
  keyId: number;
  keyName: string;
  workspaceId: number;
  accountId: number;
  isOwner: boolean;
  smsLengthCap: number;
  plan: {
    id: number;
    code: string;
    requestsPerMinute: number;
    requestsPerDay: number;
    monthlySmsLimit: number | null;
    allowUrls: boolean;
  };
}

interface KeyRow {
  key_id: number;
  key_name: string;
  secret_hash: string;
  key_status: string;
  last_used_at: number | null;
  workspace_id: number;
  account_id: number;
  account_status: string;
  is_owner: number;
  sms_length_cap: number;
  plan_id: number;
  plan_code: string;
  requests_per_minute: number;
  requests_per_day: number;
  monthly_sms_limit: number | null;
  allow_urls: number;
}

/** Reads the key and secret from either header pair; null where absent. */
export function readCredentials(headers: Headers): { key: string | null; secret: string | null } {
  const authorization = headers.get("authorization");
  let key = headers.get("x-api-key");
  if (!key && authorization) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) key = match[1];
  }
  const secret = headers.get("x-api-secret");
  return { key: key?.trim() || null, secret: secret?.trim() || null };
}

export function createAuthenticator(sqlite: Database, clock: Clock) {
  // One indexed lookup per request, prepared once.
  const byKey: Statement<KeyRow, [string]> = sqlite.prepare(`
    SELECT k.id AS key_id, k.name AS key_name, k.secret_hash, k.status AS key_status, k.last_used_at,
           w.id AS workspace_id, a.id AS account_id, a.status AS account_status, a.is_owner, a.sms_length_cap,
           p.id AS plan_id, p.code AS plan_code, p.requests_per_minute, p.requests_per_day,
           p.monthly_sms_limit, p.allow_urls
    FROM api_key k
    JOIN workspace w ON w.id = k.workspace_id
    JOIN account a ON a.id = w.account_id
    JOIN plan p ON p.id = a.plan_id
    WHERE k.key = ?`);
  const touch = sqlite.prepare("UPDATE api_key SET last_used_at = ? WHERE id = ?");

  return function authenticate(headers: Headers): AuthContext {
    const { key, secret } = readCredentials(headers);
    if (!key) {
      throw new AppError("unauthorized", "Missing API key: send Authorization: Bearer <API_KEY> (or x-api-key)");
    }
    if (!secret) throw new AppError("unauthorized", "Missing API secret: send X-API-SECRET (or x-api-secret)");
    const row = byKey.get(key);
    if (!row || !matchesHash(secret, row.secret_hash)) {
      throw new AppError("unauthorized", "Invalid API key or secret");
    }
    if (row.key_status !== "active") throw new AppError("key_disabled", "This API key is disabled");
    if (row.account_status !== "active") throw new AppError("account_suspended", "This account is suspended");

    // last_used_at is a hint for the key list; writing it once a minute keeps requests read-only.
    const now = clock.now();
    if (row.last_used_at === null || now - row.last_used_at > 60_000) touch.run(now, row.key_id);

    return {
      keyId: row.key_id,
      keyName: row.key_name,
      workspaceId: row.workspace_id,
      accountId: row.account_id,
      isOwner: row.is_owner === 1,
      smsLengthCap: row.sms_length_cap,
      plan: {
        id: row.plan_id,
        code: row.plan_code,
        requestsPerMinute: row.requests_per_minute,
        requestsPerDay: row.requests_per_day,
        monthlySmsLimit: row.monthly_sms_limit,
        allowUrls: row.allow_urls === 1,
      },
    };
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
