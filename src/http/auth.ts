// API-key authentication (spec section 5): `Authorization: Bearer <key>` + `X-API-SECRET`, or the
// `x-api-key` + `x-api-secret` pair. Missing or wrong credentials: 401; a disabled key or a
// suspended account: 403, and only after the secret matched, so the 403 leaks nothing.
import type { Database } from "bun:sqlite";
import type { Clock } from "../clock";
import { matchesHash } from "../lib/tokens";
import { createAccountRepository } from "../modules/accounts/repository";
import { AppError } from "./errors";

/** Who a send or a read is for: a workspace under its account's plan, and the API key used, if any. */
export interface AuthContext {
  /** null when a dashboard user acts (signed in with a session, not a key). */
  keyId: number | null;
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

/** Reads the key and secret from either header pair; null where absent. */
/** A caller that came with an API key (every /v1 request). */
export type KeyAuthContext = AuthContext & { keyId: number };

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
  // The key lookup is a prepared statement in the account repository (it runs on every request).
  const accounts = createAccountRepository(sqlite);

  return function authenticate(headers: Headers): KeyAuthContext {
    const { key, secret } = readCredentials(headers);
    if (!key) {
      throw new AppError("unauthorized", "Missing API key: send Authorization: Bearer <API_KEY> (or x-api-key)");
    }
    if (!secret) throw new AppError("unauthorized", "Missing API secret: send X-API-SECRET (or x-api-secret)");
    const row = accounts.keyCredentials(key);
    if (!row || !matchesHash(secret, row.secretHash)) {
      throw new AppError("unauthorized", "Invalid API key or secret");
    }
    if (row.keyStatus !== "active") throw new AppError("key_disabled", "This API key is disabled");
    if (row.accountStatus !== "active") throw new AppError("account_suspended", "This account is suspended");

    // last_used_at is a hint for the key list; writing it once a minute keeps requests read-only.
    const now = clock.now();
    if (row.lastUsedAt === null || now - row.lastUsedAt > 60_000) accounts.touchKey(row.keyId, now);

    return { keyId: row.keyId, keyName: row.keyName, ...termsOf(row) };
  };
}

/** A workspace's account and plan as a caller carries them, from the joined row that holds them. */
export function termsOf(row: {
  workspaceId: number;
  accountId: number;
  isOwner: boolean;
  smsLengthCap: number;
  planId: number;
  planCode: string;
  requestsPerMinute: number;
  requestsPerDay: number;
  monthlySmsLimit: number | null;
  allowUrls: boolean;
}): Omit<AuthContext, "keyId" | "keyName"> {
  return {
    workspaceId: row.workspaceId,
    accountId: row.accountId,
    isOwner: row.isOwner,
    smsLengthCap: row.smsLengthCap,
    plan: {
      id: row.planId,
      code: row.planCode,
      requestsPerMinute: row.requestsPerMinute,
      requestsPerDay: row.requestsPerDay,
      monthlySmsLimit: row.monthlySmsLimit,
      allowUrls: row.allowUrls,
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
