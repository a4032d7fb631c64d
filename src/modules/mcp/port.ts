// The one way the MCP tools and resources reach Pigeon: its own HTTP API, called with the agent's
// credentials, so every check a route makes (the key's scopes, recipient lists, caps, approvals,
// rate limits, idempotency) applies to an agent exactly as to any other client. In the server the
// request is handed to the app in process; `pigeon mcp` sends it over HTTP to --url.

/** Pigeon's answer: its HTTP status and the parsed envelope `{status_id, message, data}` (or null when not JSON). */
export interface ApiReply {
  status: number;
  body: { status_id?: number; message?: string; data?: Record<string, unknown> } | null;
}

export interface ApiCallOptions {
  body?: unknown;
  headers?: Record<string, string>;
  query?: Record<string, string | number | boolean | undefined | null>;
}

/** Calls one route of Pigeon's API as the agent. */
export type ApiCall = (method: "GET" | "POST", path: string, options?: ApiCallOptions) => Promise<ApiReply>;

/** What a tool call carries beside its arguments: the agent's session, sent with every send. */
export interface AgentContext {
  /** Sent as X-Pigeon-Agent-Session on sends, so a message records which agent session made it. */
  session: string;
}

/**
 * An ApiCall over `send` (the app's in-process handler, or fetch), adding `credentials` (the
 * agent's key and secret as the API takes them) to every request.
 */
export function requestPort(send: (request: Request) => Promise<Response>, base: string, credentials: Record<string, string>): ApiCall {
  const root = base.replace(/\/+$/, "");
  return async (method, path, options = {}) => {
    const query = Object.entries(options.query ?? {}).filter(([, v]) => v !== undefined && v !== null && v !== "");
    const qs = query.length > 0 ? `?${new URLSearchParams(query.map(([k, v]) => [k, String(v)]))}` : "";
    const headers: Record<string, string> = { accept: "application/json", ...credentials, ...options.headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["content-type"] = "application/json";
    }
    const response = await send(new Request(`${root}${path}${qs}`, { method, headers, body }));
    const text = await response.text();
    let parsed: ApiReply["body"] = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    return { status: response.status, body: parsed };
  };
}

/**
 * The key and secret in a request's headers, as the API takes them (Authorization: Bearer with
 * X-API-SECRET, the x-api-key pair, or Basic base64(key:secret)); null when they are missing.
 */
export function credentialHeaders(headers: Headers): Record<string, string> | null {
  const authorization = headers.get("authorization")?.trim() ?? "";
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1], "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon <= 0 || colon === decoded.length - 1) return null;
    return { "x-api-key": decoded.slice(0, colon), "x-api-secret": decoded.slice(colon + 1) };
  }
  const bearer = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  const key = headers.get("x-api-key")?.trim() || bearer;
  const secret = headers.get("x-api-secret")?.trim();
  if (!key || !secret) return null;
  return { "x-api-key": key, "x-api-secret": secret };
}
