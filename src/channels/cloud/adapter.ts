// The cloud-number channel: the Twilio Messages API. A send is one form-encoded POST to
// {base}/2010-04-01/Accounts/{sid}/Messages.json with Basic auth; delivery arrives later on the
// StatusCallback URL. After an attempt cut off mid-call, the provider's message list tells us
// whether it already has the message, so it is never handed over twice.
import { withoutSecrets } from "../../lib/log";
import { checkOutboundTarget, outboundTargetProblem } from "../../lib/net-safety";
import type { DeviceRow } from "../../modules/devices/model";
import type { NotificationRecord } from "../../modules/notifications/state";
import type { ChannelAdapter, DispatchOutcome } from "../types";
import { cloudConfigOf, type CloudConfig } from "./config";

const DEFAULT_TIMEOUT_MS = 15_000;
/** Clock skew we allow between us and the provider when matching a message after a crash. */
const RECONCILE_SKEW_MS = 5 * 60_000;
/** Page size for the message list: the provider's default (small pages answer fast). */
const RECONCILE_PAGE_SIZE = 50;
/** Pages we read at most for one check: 5,000 messages to one recipient in the window. */
const RECONCILE_MAX_PAGES = 100;

/** Provider error codes that mean "try again later" (queue overflow, internal error, unavailable). */
const RETRYABLE_CODES = new Set([30001, 20500, 20503, 20429]);

/** What the provider's asynchronous error codes mean, for the notification's log. */
export const CLOUD_ERROR_REASONS: Record<string, string> = {
  "30001": "Queue overflow",
  "30002": "Account suspended",
  "30003": "Unreachable destination handset",
  "30004": "Message blocked",
  "30005": "Unknown destination handset",
  "30006": "Landline or unreachable carrier",
  "30007": "Message filtered by the carrier",
  "30008": "Unknown error",
  "30009": "Missing segment",
  "30010": "Message price exceeds max price",
  "30034": "Message from an unregistered number",
};

interface ProviderMessage {
  sid: string;
  to: string;
  from: string | null;
  body: string;
  status: string;
  date_created: string;
}

export interface CloudAdapterOptions {
  /** Where the provider should report delivery, for a device; null when Pigeon has no public URL. */
  statusCallbackUrl(device: DeviceRow): string | null;
  fetch?: typeof fetch;
  /** How long to wait for the provider before the outcome counts as unknown. */
  timeoutMs?: number;
  /** PIGEON_ALLOW_PRIVATE_WEBHOOKS: base_url may be loopback or private (local fakes). */
  allowPrivateTargets?: boolean;
}

/** Longest provider message we keep in a notification's error_reason. */
const REASON_LIMIT = 200;

/**
 * What of a provider's error answer we show: only the `message` of a JSON error, flattened to one
 * line, without the credentials it may quote back (`secrets`), and cut short. Anything else (an
 * HTML page, a proxy's text) could be another service's content reached through a bad base_url,
 * so it is never echoed.
 */
export function providerReason(json: Record<string, unknown>, secrets: readonly string[] = []): string {
  if (typeof json.message !== "string") return "";
  const flat = withoutSecrets(json.message, secrets)
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is removed
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return flat.length > REASON_LIMIT ? `${flat.slice(0, REASON_LIMIT - 1)}…` : flat;
}

function messagesUrl(c: CloudConfig): string {
  return `${c.baseUrl}/2010-04-01/Accounts/${encodeURIComponent(c.accountSid)}/Messages.json`;
}

function authHeader(c: CloudConfig): string {
  return `Basic ${Buffer.from(`${c.accountSid}:${c.authToken}`).toString("base64")}`;
}

/** Sorts a provider error answer into our outcome classes. */
export function classifyProviderError(status: number, code: number | null, message: string): DispatchOutcome {
  const reason = message || `HTTP ${status}`;
  const codeText = code !== null ? String(code) : `http_${status}`;
  if (status === 429 || code === 20429) return { kind: "throttled", reason: `provider rate limit: ${reason}` };
  if (status >= 500 || (code !== null && RETRYABLE_CODES.has(code))) {
    // A server error is no acknowledgement, but ask before resending in case it took the message.
    return { kind: "retryable", code: codeText, reason, reconcile: true };
  }
  if (status === 401 || status === 403) return { kind: "permanent", code: codeText, reason: `provider refused the credentials: ${reason}` };
  return { kind: "permanent", code: codeText, reason };
}

export function createCloudAdapter(options: CloudAdapterOptions): ChannelAdapter {
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  async function send(n: NotificationRecord, device: DeviceRow): Promise<DispatchOutcome> {
    const config = cloudConfigOf(device.config);
    if (!config) return { kind: "permanent", code: "device_not_configured", reason: `cloud device ${device.id} has no provider settings` };
    // Checked at every send (DNS may have changed since registration), and sent to the address checked.
    const checked = await checkOutboundTarget(messagesUrl(config), options.allowPrivateTargets === true);
    if (checked.problem !== null)
      return { kind: "permanent", code: "provider_url_refused", reason: `provider base_url ${checked.problem}` };
    const form = new URLSearchParams({ To: n.recipient, Body: n.message });
    if (config.from) form.set("From", config.from);
    if (config.messagingServiceSid) form.set("MessagingServiceSid", config.messagingServiceSid);
    const callback = options.statusCallbackUrl(device);
    if (callback) form.set("StatusCallback", callback);

    let res: Response;
    try {
      res = await doFetch(checked.target.url, {
        method: "POST",
        ...(checked.target.tls ? { tls: checked.target.tls } : {}),
        headers: {
          ...checked.target.headers,
          authorization: authHeader(config),
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
        },
        body: form.toString(),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: "manual",
      });
    } catch (error) {
      const e = error as Error & { code?: string };
      if (e.name === "TimeoutError" || e.name === "AbortError") {
        return { kind: "uncertain", reason: `no answer from the provider within ${timeoutMs / 1000} s` };
      }
      // Refused or unreachable: the request never arrived, so sending again is safe.
      return { kind: "retryable", code: "network_error", reason: `cannot reach the provider: ${e.code ?? e.message}` };
    }

    const text = await res.text().catch(() => "");
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      /* not JSON: classified by status below */
    }
    if (res.status === 200 || res.status === 201) {
      if (typeof json.sid !== "string") return { kind: "uncertain", reason: "the provider answered without a message sid" };
      return { kind: "accepted", externalId: json.sid, detail: `provider accepted as ${json.sid} (${String(json.status ?? "queued")})` };
    }
    const code = typeof json.code === "number" ? json.code : null;
    return classifyProviderError(res.status, code, providerReason(json, [config.authToken, authHeader(config).slice(6)]));
  }

  /**
   * Every message the provider holds to this recipient with this text since the notification could
   * first have been handed over, walking the list (newest first) page by page until it reaches
   * older messages. Oldest first, so identical notifications tend to claim in the order they went.
   */
  async function reconcile(n: NotificationRecord, device: DeviceRow): Promise<string[]> {
    const config = cloudConfigOf(device.config);
    if (!config) return [];
    const refused = await outboundTargetProblem(config.baseUrl, options.allowPrivateTargets === true);
    if (refused) throw new Error(`provider base_url ${refused}`);
    const query = new URLSearchParams({ To: n.recipient, PageSize: String(RECONCILE_PAGE_SIZE) });
    if (config.from) query.set("From", config.from);
    // The earliest moment any attempt of this notification could have reached the provider.
    const since = Math.max(n.createdAt, n.scheduleAt ?? 0) - RECONCILE_SKEW_MS;
    const listPath = `/2010-04-01/Accounts/${encodeURIComponent(config.accountSid)}/Messages.json`;
    const found: string[] = [];
    let url: string | null = `${messagesUrl(config)}?${query}`;
    for (let page = 0; url !== null; page++) {
      if (page >= RECONCILE_MAX_PAGES)
        throw new Error(`the provider's message list runs past ${RECONCILE_MAX_PAGES} pages for this recipient`);
      const res = await doFetch(url, {
        headers: { authorization: authHeader(config), accept: "application/json" },
        signal: AbortSignal.timeout(timeoutMs),
        redirect: "manual",
      });
      if (!res.ok) throw new Error(`provider message list answered HTTP ${res.status}`);
      const body = (await res.json()) as { messages?: ProviderMessage[]; next_page_uri?: string | null };
      const messages = Array.isArray(body.messages) ? body.messages : [];
      let older = false;
      for (const m of messages) {
        const at = Date.parse(m.date_created);
        if (at < since) {
          older = true;
          continue;
        }
        if (m.to === n.recipient && m.body === n.message && typeof m.sid === "string") found.push(m.sid);
      }
      const next = body.next_page_uri;
      if (older || typeof next !== "string" || next === "") break;
      // The next page is a path on the provider we were configured with; never follow it elsewhere.
      if (!next.startsWith(`${listPath}?`)) throw new Error("the provider's next_page_uri points outside its message list");
      url = `${config.baseUrl}${next}`;
    }
    return found.reverse();
  }

  return { send, reconcile };
}
