// How an API key reaches us: `Authorization: Bearer <key>` +
// `X-API-SECRET`, or the `x-api-key` + `x-api-secret` pair. The check itself is the accounts
// module's (`authenticate` in src/modules/accounts/service.ts), which owns the keys; who a request
// is for (`AuthContext`) is the domain's, in src/core/caller.ts.

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
