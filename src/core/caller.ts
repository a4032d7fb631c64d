// Who a request acts for: a workspace under its account's plan, and the API key used, if any.
// The domain's own vocabulary, below the transport: services take it, routes hand it on.
import type { KeyLimits } from "./scopes";
import { AppError } from "./errors";

/**
 * How fresh a caller's record must be: `atLeast`, a record kept in memory is used only if tagged
 * with at least that generation (undefined: any kept one will do, as a first guess the admission
 * then checks); `known`, the newest generation this server knew before the read, the tag of a
 * record read now. Without it (the in-memory limiter) nothing is kept or taken from memory.
 */
export interface Freshness {
  atLeast?: number;
  known?: number;
}

/** Who a send or a read is for: a workspace under its account's plan, and the API key used, if any. */
export interface AuthContext {
  /** null when a dashboard user acts (signed in with a session, not a key). */
  keyId: number | null;
  keyName: string;
  /** The key's sends wait for a person's approval (stored awaiting_approval); false for a dashboard user. */
  needsApproval: boolean;
  /** The agent session the request names (X-Pigeon-Agent-Session, see agentSessionOf), recorded with each send. */
  agentSession?: string | null;
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
  /**
   * What the key may do (src/core/scopes.ts): its scopes, recipients, daily cap and expiry. Absent
   * for a dashboard user and for what Pigeon sends of its own accord: no limits.
   */
  limits?: KeyLimits;
  /**
   * The database's cache generation when the request was admitted (PostgreSQL's shared limiter
   * sets it): what a server keeps in memory is used for this request only if it is at least as
   * new (src/lib/generation-cache.ts). Absent on SQLite and for a dashboard user: read afresh.
   */
  cacheGeneration?: number;
  /** The generation the caller's own record was read at, when it may come from memory. */
  generation?: number;
}

/** A caller that came with an API key (every /v1 request). */
export type KeyAuthContext = AuthContext & { keyId: number };

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
}): Omit<AuthContext, "keyId" | "keyName" | "needsApproval"> {
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

/** Checks an API key and secret from a request's headers (the accounts module's `authenticate`). */
export type Authenticator = (headers: Headers, freshness?: Freshness) => Promise<KeyAuthContext>;

/** The header an agent (an MCP client) names its session with; recorded on each send it makes. */
export const AGENT_SESSION_HEADER = "x-pigeon-agent-session";

/**
 * The agent session a request names, or null without the header. At most 128 printable ASCII
 * characters; anything else is a 400 (validation_error naming the header).
 */
export function agentSessionOf(headers: Headers): string | null {
  const value = headers.get(AGENT_SESSION_HEADER);
  if (value === null) return null;
  if (value.length === 0 || value.length > 128 || !/^[\x20-\x7e]+$/.test(value)) {
    throw new AppError("validation_error", "Invalid header 'X-Pigeon-Agent-Session': must be 1 to 128 printable ASCII characters", {
      field: "X-Pigeon-Agent-Session",
      location: "header",
      reason: "must be 1 to 128 printable ASCII characters",
    });
  }
  return value;
}
