// A small client for the chat-app platform's Graph API: the calls Pigeon makes, with errors read
// from the platform's `{"error": {code, message, error_data}}` body. What the platform says is
// kept in the notification's log and may reach the server's: a token it quotes back is cut out.
import { withoutSecrets } from "../../lib/log";

export interface GraphOptions {
  baseUrl: string;
  version: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

export class GraphError extends Error {
  constructor(
    readonly status: number,
    readonly code: number | null,
    message: string,
    readonly details: string | null,
  ) {
    super(message);
  }
}

/** Could not reach the platform or it did not answer in time; whether it acted is unknown. */
export class GraphUnreachable extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
  ) {
    super(message);
  }
}

export interface PhoneNumber {
  id: string;
  display_phone_number: string;
  verified_name?: string;
  quality_rating?: string;
}

export interface PlatformTemplate {
  id: string;
  name: string;
  language: string;
  status: string;
  category?: string;
  components?: { type: string; format?: string; text?: string }[];
}

export function createGraphClient(opts: GraphOptions) {
  const doFetch = opts.fetch ?? fetch;
  const base = `${opts.baseUrl.replace(/\/+$/, "")}/${opts.version}`;

  async function call<T>(token: string, pathOrUrl: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
    const url = pathOrUrl.startsWith("http") ? pathOrUrl : `${base}${pathOrUrl}`;
    let res: Response;
    try {
      res = await doFetch(url, {
        method: init.method ?? "GET",
        headers: {
          authorization: `Bearer ${token}`,
          accept: "application/json",
          ...(init.body ? { "content-type": "application/json" } : {}),
        },
        body: init.body ? JSON.stringify(init.body) : undefined,
        signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000),
        redirect: "manual",
      });
    } catch (error) {
      const e = error as Error;
      const timedOut = e.name === "TimeoutError" || e.name === "AbortError";
      const message = timedOut ? "the platform did not answer in time" : `cannot reach the platform: ${e.message}`;
      throw new GraphUnreachable(withoutSecrets(message, [token]), timedOut);
    }
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      /* not JSON */
    }
    if (!res.ok) {
      const err = (json.error ?? {}) as { code?: unknown; message?: unknown; error_data?: { details?: unknown } };
      const details = typeof err.error_data?.details === "string" ? err.error_data.details : null;
      throw new GraphError(
        res.status,
        typeof err.code === "number" ? err.code : null,
        withoutSecrets(typeof err.message === "string" ? err.message : `HTTP ${res.status}`, [token]),
        details === null ? null : withoutSecrets(details, [token]),
      );
    }
    return json as T;
  }

  return {
    /** The business accounts a token was granted (debug_token's granular scopes). */
    async businessAccountsOf(token: string): Promise<string[]> {
      const r = await call<{ data?: { granular_scopes?: { scope: string; target_ids?: string[] }[] } }>(
        token,
        `/debug_token?input_token=${encodeURIComponent(token)}`,
      );
      const scopes = r.data?.granular_scopes ?? [];
      const ids = scopes
        .filter((s) => s.scope === "whatsapp_business_management" || s.scope === "whatsapp_business_messaging")
        .flatMap((s) => s.target_ids ?? []);
      return [...new Set(ids)];
    },

    businessAccount: (token: string, wabaId: string) =>
      call<{ id: string; name?: string }>(token, `/${encodeURIComponent(wabaId)}?fields=id,name`),

    async phoneNumbers(token: string, wabaId: string): Promise<PhoneNumber[]> {
      const r = await call<{ data?: PhoneNumber[] }>(token, `/${encodeURIComponent(wabaId)}/phone_numbers`);
      return r.data ?? [];
    },

    /** Every template of a business account, following paging.next to the end. */
    async templates(token: string, wabaId: string): Promise<PlatformTemplate[]> {
      const out: PlatformTemplate[] = [];
      let next: string | null = `/${encodeURIComponent(wabaId)}/message_templates?limit=100`;
      for (let pages = 0; next && pages < 100; pages++) {
        const page: { data?: PlatformTemplate[]; paging?: { next?: string } } = await call(token, next);
        out.push(...(page.data ?? []));
        next = page.paging?.next ?? null;
      }
      return out;
    },

    sendMessage: (token: string, phoneNumberId: string, body: unknown) =>
      call<{ messages?: { id: string; message_status?: string }[] }>(token, `/${encodeURIComponent(phoneNumberId)}/messages`, {
        method: "POST",
        body,
      }),
  };
}

export type GraphClient = ReturnType<typeof createGraphClient>;
