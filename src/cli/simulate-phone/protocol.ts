// The phone's side of the companion-app protocol over HTTP: registration, the reads (settings,
// webhooks, messages), the state PATCHes with the app's retries, and opening the event stream.
// What the settings and webhook lists say is kept in PhoneSettings for the rest of the phone.
import { nanoid } from "../../lib/tokens";
import type { SimulatePhoneOptions } from "./args";
import type { Lifetime } from "./lifetime";
import { backoff, OKHTTP_USER_AGENT, errorText, failureOf, finite, PATCH_ATTEMPTS, record, REQUEST_TIMEOUT_MS, simCards, text, type LocalState, type Webhook } from "./wire";

/** What the server provisioned: the webhook signing key, send pacing, pull order and webhooks. */
export class PhoneSettings {
  // Like the app: a device-local random key until the server provisions one through /settings.
  signingKey = nanoid(8);
  sendInterval: { min: number; max: number } | null = null;
  order: "lifo" | "fifo" = "lifo";
  webhooks = new Map<string, Webhook[]>();
}

export class ProtocolClient {
  deviceId = "";
  private deviceToken = "";

  constructor(
    private readonly opts: SimulatePhoneOptions,
    private readonly life: Lifetime,
    private readonly settings: PhoneSettings,
  ) {}

  private log(line: string): void {
    this.opts.log(line);
  }

  private headers(json: boolean, token = this.deviceToken): Record<string, string> {
    return {
      "User-Agent": `me.capcom.smsgateway/${this.opts.appVersion}`,
      Authorization: `Bearer ${token}`,
      // Ktor's content negotiation announces the type it can read on every call.
      Accept: "application/json",
      ...(json ? { "Content-Type": "application/json" } : {}),
    };
  }

  /** Reads: cut short by stop(), since nothing waits for their answer then. */
  private readSignal(): AbortSignal {
    return AbortSignal.any([this.life.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]);
  }

  async getJson(path: string): Promise<unknown> {
    try {
      const res = await fetch(`${this.opts.server}${path}`, { headers: this.headers(false), signal: this.readSignal() });
      if (!res.ok) {
        this.log(`GET ${path} failed: ${await failureOf(res)}`);
        return undefined;
      }
      return await res.json();
    } catch (error) {
      if (!this.life.stopped) this.log(`GET ${path} failed: ${errorText(error)}`);
      return undefined;
    }
  }

  async register(): Promise<void> {
    const res = await fetch(`${this.opts.server}/device`, {
      method: "POST",
      // The pairing token authorises only this call; every later one uses the device token.
      headers: this.headers(true, this.opts.token),
      // No pushToken: in SSE-only mode the app registers with a null token, which Gson leaves out.
      body: JSON.stringify({ name: this.opts.name, simCards: simCards(this.opts.sims) }),
      signal: this.readSignal(),
    });
    if (!res.ok) throw new Error(`registration failed: ${await failureOf(res)}`);
    const body = record(await res.json());
    const id = text(body?.id);
    const token = text(body?.token);
    if (!id || !token) throw new Error("registration answer has no id and token");
    this.deviceId = id;
    this.deviceToken = token;
    this.log(`registered as ${id}`);
  }

  /** Reads GET /settings; whether the server answered. */
  async loadSettings(): Promise<boolean> {
    const body = await this.getJson("/settings");
    if (body === undefined) return false;
    const settings = record(body) ?? {};
    const messages = record(settings.messages);
    const webhooks = record(settings.webhooks);

    // The app's importer only changes the keys it is given, so an absent key keeps the current one.
    const key = text(webhooks?.signing_key);
    if (key) this.settings.signingKey = key;
    const min = finite(messages?.send_interval_min);
    const max = finite(messages?.send_interval_max);
    if (min !== null || max !== null) {
      const low = min ?? max ?? 0;
      const high = max ?? min ?? 0;
      this.settings.sendInterval = { min: Math.min(low, high), max: Math.max(low, high) };
    }
    const order = text(messages?.processing_order);
    if (order === "LIFO" || order === "FIFO") this.settings.order = order === "LIFO" ? "lifo" : "fifo";

    const interval = this.settings.sendInterval ? `, send interval ${this.settings.sendInterval.min}–${this.settings.sendInterval.max} s` : "";
    this.log(`settings loaded (signing key ${key ? "from the server" : "of the device"}${interval})`);
    return true;
  }

  /** Reads GET /webhooks; whether the server answered with a list. */
  async loadWebhooks(): Promise<boolean> {
    const body = await this.getJson("/webhooks");
    if (body === undefined) return false;
    if (!Array.isArray(body)) {
      this.log("GET /webhooks did not answer an array; keeping the current webhooks");
      return false;
    }
    // The app replaces its whole list of server-provided webhooks with each answer.
    const byEvent = new Map<string, Webhook[]>();
    for (const item of body) {
      const hook = record(item);
      const id = text(hook?.id);
      const url = text(hook?.url);
      const event = text(hook?.event);
      if (!id || !url || !event) continue;
      byEvent.set(event, [...(byEvent.get(event) ?? []), { id, url }]);
    }
    this.settings.webhooks = byEvent;
    const events = [...byEvent.keys()].sort().join(", ");
    this.log(`webhooks: ${events || "none"}`);
    return true;
  }

  async patchMessage(id: string, state: LocalState, body: string): Promise<void> {
    let failure = "";
    for (let attempt = 1; attempt <= PATCH_ATTEMPTS; attempt++) {
      try {
        const res = await fetch(`${this.opts.server}/message`, {
          method: "PATCH",
          headers: this.headers(true),
          body,
          // Not tied to stop(): stop waits for PATCHes already on the wire.
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        if (res.ok) return;
        failure = await failureOf(res);
      } catch (error) {
        failure = errorText(error);
      }
      if (attempt < PATCH_ATTEMPTS && !(await this.life.sleep(backoff(attempt)))) break;
    }
    this.log(`message ${id}: PATCH ${state} not accepted: ${failure}`);
  }

  async openEvents(): Promise<Response> {
    const res = await fetch(`${this.opts.server}/events`, {
      // The app opens its stream with a plain OkHttp client, not the API client that names the app:
      // the server sees OkHttp's default User-Agent here, never the app version.
      headers: { ...this.headers(false), "User-Agent": OKHTTP_USER_AGENT, Accept: "text/event-stream" },
      signal: this.life.signal,
    });
    if (!res.ok || !res.body) throw new Error(`events stream refused: ${await failureOf(res)}`);
    if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      await res.body.cancel();
      throw new Error(`events stream answered ${res.headers.get("content-type") ?? "no content type"}, not text/event-stream`);
    }
    return res;
  }
}
