// Who calls the SMSGate-compatible API, and what they may do there. SMSGate's clients send
// `Authorization: Basic` (its user name and password; here a Pigeon API key and its secret, which
// may do everything) or `Bearer` with a JWT from POST /auth/token, limited to the scopes asked for.
// Tokens are HS256 JWTs signed with a key derived from the data directory's secret key; each is
// recorded so it can be revoked, and a refresh token is good once.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { Authenticator, KeyAuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import type { SecretBox } from "../../lib/secrets";
import { nanoid } from "../../lib/tokens";
import type { AccountsService } from "../accounts/service";
import type { SmsGateRepository } from "./repository";

/** The scopes SMSGate names (client-go's smsgateway.Scope*); "all:any" stands for every one. */
export const SCOPES = [
  "all:any",
  "messages:send",
  "messages:read",
  "messages:list",
  "messages:cancel",
  "messages:export",
  "devices:list",
  "devices:delete",
  "webhooks:list",
  "webhooks:write",
  "webhooks:delete",
  "settings:read",
  "settings:write",
  "inbox:list",
  "inbox:refresh",
  "logs:read",
  "tokens:manage",
] as const;
export type Scope = (typeof SCOPES)[number];

/** Only a refresh token carries this one, and it is good for POST /auth/token/refresh alone. */
export const REFRESH_SCOPE = "tokens:refresh";

/** An access token lives an hour unless asked otherwise, and at most thirty days. */
export const TOKEN_TTL_DEFAULT_SECONDS = 3600;
export const TOKEN_TTL_MAX_SECONDS = 30 * 24 * 3600;
/** A refresh token outlives its access token by this long. */
const REFRESH_TTL_SECONDS = 30 * 24 * 3600;

/** A caller of the SMSGate API: the workspace and key it acts for, and what it may do. */
export interface SmsGateCaller {
  auth: KeyAuthContext;
  /** null for Basic (every scope). */
  scopes: string[] | null;
  /** The JWT's id and kind when the caller came with a token. */
  token: { jti: string; kind: "access" | "refresh" } | null;
}

const callers = new WeakMap<Request, SmsGateCaller>();

/** Paths of the SMSGate API, under either base a client may be given. */
export const SMSGATE_BASES = ["/3rdparty/v1", "/api/3rdparty/v1"] as const;

/** The SMSGate API's paths that need credentials (all but health, as on SMSGate). */
export function needsSmsGateAuth(path: string): boolean {
  const base = SMSGATE_BASES.find((b) => path === b || path.startsWith(`${b}/`));
  if (!base) return false;
  const rest = path.slice(base.length);
  return !(rest === "/health" || rest.startsWith("/health/"));
}

export function isSmsGatePath(path: string): boolean {
  return SMSGATE_BASES.some((b) => path === b || path.startsWith(`${b}/`));
}

/** The caller the early gate recognised (routes reach it through their declared auth). */
export function smsGateCallerOf(request: Request): SmsGateCaller {
  const caller = callers.get(request);
  if (!caller) throw new AppError("unauthorized", "Unauthorized");
  return caller;
}

/** Refuses with 403 unless the caller may use `scope`; Basic may use all, a refresh token none. */
export function requireScope(request: Request, scope: Scope): void {
  const { scopes, token } = smsGateCallerOf(request);
  if (token?.kind === "refresh") throw new AppError("forbidden", "A refresh token is only good for POST /auth/token/refresh", { scope });
  if (scopes === null || scopes.includes("all:any") || scopes.includes(scope)) return;
  throw new AppError("forbidden", `This token lacks the scope ${scope}`, { scope });
}

const b64url = (data: string | Buffer) => Buffer.from(data).toString("base64url");

export function createSmsGateAuth(deps: {
  clock: Clock;
  secrets: SecretBox;
  authenticate: Authenticator;
  accounts: AccountsService;
  repo: SmsGateRepository;
  storage: Storage;
}) {
  const { clock, repo, storage } = deps;
  let signingKey: string | null = null;
  // Derived from the data directory's key: tokens stay valid across restarts, and die with the key.
  const key = () => (signingKey ??= deps.secrets.digest("smsgate-jwt-signing-key-v1"));
  const sign = (input: string) => createHmac("sha256", key()).update(input).digest();

  function encode(claims: Record<string, unknown>): string {
    const head = `${b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }))}.${b64url(JSON.stringify(claims))}`;
    return `${head}.${b64url(sign(head))}`;
  }

  /** The claims of a token this server signed, or null for anything else. */
  function decode(token: string): { jti: string } | null {
    const parts = token.split(".");
    if (parts.length !== 3) return null;
    const expected = sign(`${parts[0]}.${parts[1]}`);
    const given = Buffer.from(parts[2], "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    try {
      const claims = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8")) as { jti?: unknown };
      return typeof claims.jti === "string" ? { jti: claims.jti } : null;
    } catch {
      return null;
    }
  }

  async function fromBasic(value: string): Promise<SmsGateCaller> {
    let decoded: string;
    try {
      decoded = Buffer.from(value, "base64").toString("utf8");
    } catch {
      throw new AppError("unauthorized", "Unauthorized");
    }
    const colon = decoded.indexOf(":");
    if (colon <= 0) throw new AppError("unauthorized", "Unauthorized: send the API key as user name and its secret as password");
    const headers = new Headers({ authorization: `Bearer ${decoded.slice(0, colon)}`, "x-api-secret": decoded.slice(colon + 1) });
    return { auth: await deps.authenticate(headers), scopes: null, token: null };
  }

  async function fromBearer(value: string): Promise<SmsGateCaller> {
    const claims = decode(value);
    const row = claims ? await repo.token(claims.jti) : null;
    const now = clock.now();
    if (!row || row.revokedAt !== null || row.expiresAt <= now)
      throw new AppError("unauthorized", "Unauthorized: the token is invalid, expired or revoked");
    const apiKey = await deps.accounts.keyById(row.apiKeyId);
    if (!apiKey || apiKey.workspaceId !== row.workspaceId) throw new AppError("unauthorized", "Unauthorized: the token's API key is gone");
    if (apiKey.status !== "active") throw new AppError("key_disabled", "The API key this token was issued to is disabled");
    const auth: KeyAuthContext = {
      ...(await deps.accounts.callerFor(row.workspaceId)),
      keyId: apiKey.id,
      keyName: apiKey.name,
      needsApproval: apiKey.needsApproval,
    };
    return { auth, scopes: row.scopes, token: { jti: row.jti, kind: row.kind } };
  }

  /** The early gate's check: run before the body is read, under the failed-sign-in throttle. */
  async function authenticate(request: Request): Promise<KeyAuthContext> {
    const header = request.headers.get("authorization")?.trim() ?? "";
    const match = /^(Basic|Bearer)\s+(\S+)$/i.exec(header);
    if (!match) throw new AppError("unauthorized", "Unauthorized: send Authorization: Basic <API key:secret> or Bearer <token>");
    const caller = match[1].toLowerCase() === "basic" ? await fromBasic(match[2]) : await fromBearer(match[2]);
    callers.set(request, caller);
    return caller.auth;
  }

  /** A new access token with its refresh token, as SMSGate's TokenResponse. */
  async function issue(auth: KeyAuthContext, scopes: string[], ttlSeconds: number) {
    const now = clock.now();
    const access = { jti: nanoid(21), exp: now + ttlSeconds * 1000 };
    const refresh = { jti: nanoid(21), exp: now + (ttlSeconds + REFRESH_TTL_SECONDS) * 1000 };
    const common = { workspaceId: auth.workspaceId, apiKeyId: auth.keyId, accessJti: access.jti, createdAt: now };
    await storage.transaction(async () => {
      await repo.insertToken({ ...common, jti: access.jti, kind: "access", scopes, expiresAt: access.exp });
      await repo.insertToken({ ...common, jti: refresh.jti, kind: "refresh", scopes, expiresAt: refresh.exp });
    });
    const claims = (jti: string, exp: number, s: string[]) => ({
      iss: "pigeon",
      sub: String(auth.workspaceId),
      jti,
      iat: Math.floor(now / 1000),
      exp: Math.floor(exp / 1000),
      scopes: s,
    });
    return {
      id: access.jti,
      token_type: "Bearer",
      access_token: encode(claims(access.jti, access.exp, scopes)),
      refresh_token: encode(claims(refresh.jti, refresh.exp, [REFRESH_SCOPE])),
      expires_at: new Date(access.exp).toISOString(),
    };
  }

  return {
    authenticate,

    /** POST /auth/token: scopes SMSGate knows, a ttl within bounds (0 or absent: the default). */
    createToken(request: Request, body: { ttl?: number | null; scopes: string[] }) {
      requireScope(request, "tokens:manage");
      const caller = smsGateCallerOf(request);
      const unknown = body.scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
      if (unknown.length > 0)
        throw new AppError("validation_error", `Unknown scope ${unknown.join(", ")}`, {
          field: "scopes",
          location: "body",
          reason: `one of ${SCOPES.join(", ")}`,
        });
      // A token may not grant more than its maker holds.
      const held = caller.scopes;
      if (held !== null && !held.includes("all:any")) {
        const extra = body.scopes.filter((s) => !held.includes(s));
        if (extra.length > 0)
          throw new AppError("forbidden", `A token cannot grant scopes its maker lacks: ${extra.join(", ")}`, { scopes: extra });
      }
      const ttl = body.ttl ? body.ttl : TOKEN_TTL_DEFAULT_SECONDS;
      return issue(caller.auth, [...new Set(body.scopes)], ttl);
    },

    /** POST /auth/token/refresh with the refresh token: a new pair; the old pair is spent. */
    refresh(request: Request) {
      const caller = smsGateCallerOf(request);
      const token = caller.token;
      if (token?.kind !== "refresh")
        throw new AppError("forbidden", "Send the refresh token as Bearer to refresh", { scope: REFRESH_SCOPE });
      // Spending the old pair and issuing the new one are one unit: a replay finds the token used.
      return storage.transaction(async () => {
        const row = (await repo.token(token.jti))!;
        if (!(await repo.useRefresh(row.jti, clock.now())))
          throw new AppError("unauthorized", "Unauthorized: this refresh token was already used");
        await repo.revoke(row.workspaceId, row.accessJti, clock.now());
        const access = await repo.token(row.accessJti);
        const ttl = access ? Math.max(1, Math.round((access.expiresAt - access.createdAt) / 1000)) : TOKEN_TTL_DEFAULT_SECONDS;
        return issue(caller.auth, row.scopes, ttl);
      });
    },

    /** DELETE /auth/token/{jti}: the access token and its refresh token stop working. */
    async revoke(request: Request, jti: string): Promise<void> {
      requireScope(request, "tokens:manage");
      const caller = smsGateCallerOf(request);
      if (!(await repo.revoke(caller.auth.workspaceId, jti, clock.now()))) throw new AppError("not_found", `token ${jti} not found`);
    },
  };
}

export type SmsGateAuth = ReturnType<typeof createSmsGateAuth>;
