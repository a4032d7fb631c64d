// The phone's side of the companion-app protocol over HTTP: registration, the reads (settings,
// webhooks, messages), the state PATCHes with the app's retries, and opening the event stream.
// What the settings and webhook lists say is kept in PhoneSettings for the rest of the phone.
import { nanoid } from "../../lib/tokens";
import { SIM_SELECTION_MODES, type SimSelectionMode, type SimulatePhoneOptions } from "./args";
import type { Lifetime } from "./lifetime";
import {
  backoff,
  OKHTTP_USER_AGENT,
  errorText,
  failureOf,
  PATCH_ATTEMPTS,
  record,
  REQUEST_TIMEOUT_MS,
  simCards,
  text,
  type Json,
  type LocalState,
  type Webhook,
} from "./wire";

type LimitPeriod = "Disabled" | "PerMinute" | "Per30Minutes" | "PerHour" | "PerDay";
const LIMIT_PERIODS: readonly LimitPeriod[] = ["Disabled", "PerMinute", "Per30Minutes", "PerHour", "PerDay"];
/** The app's Period before 1.67.0 (Per30Minutes came with it, commit 11580ad). */
const LIMIT_PERIODS_BEFORE_1_67: readonly LimitPeriod[] = ["Disabled", "PerMinute", "PerHour", "PerDay"];
/** Each period's length (MessagesSettings.Period.duration). */
export const PERIOD_MS: Record<LimitPeriod, number> = {
  Disabled: 0,
  PerMinute: 60_000,
  Per30Minutes: 1_800_000,
  PerHour: 3_600_000,
  PerDay: 86_400_000,
};

/**
 * The phone's settings, kept as the app keeps them: its own choices until the server's settings are
 * imported, then changed key by key exactly as the app's importers do (see import()).
 */
export class PhoneSettings {
  // Like the app: a device-local random key until the server provisions one through /settings.
  signingKey = nanoid(8);
  /** Whether the signing key is one the server gave (else the device's own). */
  serverKey = false;
  sendIntervalMin: number | null = null;
  sendIntervalMax: number | null = null;
  limitPeriod: LimitPeriod = "Disabled";
  limitValue: number | null = null;
  simSelection: SimSelectionMode;
  order: "lifo" | "fifo";
  pingSeconds: number | null;
  notificationChannel: "AUTO" | "SSE_ONLY";
  /** The app's encryption.passphrase: null until typed in (--passphrase) or given by the server. */
  passphrase: string | null;
  webhooks = new Map<string, Webhook[]>();
  private readonly periods: readonly LimitPeriod[];

  constructor(opts: Pick<SimulatePhoneOptions, "simSelection" | "order" | "pingSeconds" | "channel" | "passphrase" | "appVersion">) {
    this.passphrase = opts.passphrase ?? null;
    const [major = 0, minor = 0] = opts.appVersion.split(".").map((p) => Number.parseInt(p, 10) || 0);
    this.periods = major > 1 || (major === 1 && minor >= 67) ? LIMIT_PERIODS : LIMIT_PERIODS_BEFORE_1_67;
    this.simSelection = opts.simSelection;
    this.order = opts.order;
    this.pingSeconds = opts.pingSeconds;
    this.notificationChannel = opts.channel === "auto" ? "AUTO" : "SSE_ONLY";
  }

  /** The app's sendIntervalRange: none without a maximum or when the minimum is above it. */
  get sendInterval(): { min: number; max: number } | null {
    const min = this.sendIntervalMin ?? 0;
    const max = this.sendIntervalMax;
    return max === null || min > max ? null : { min, max };
  }

  /**
   * Imports GET /settings as the app's SettingsService does: each section's importer walks the keys
   * it was given, one after another. A key left out keeps the phone's value; a key given as null
   * goes back to the app's default (no interval, no limit, OSDefault, LIFO, ping off, AUTO, a fresh
   * signing key). A value the app cannot read throws, after the keys before it were stored.
   */
  import(data: Json): void {
    const each = (section: string, apply: (key: string, value: unknown) => void) => {
      const values = record(data[section]);
      if (values) for (const [key, value] of Object.entries(values)) apply(key, value);
    };
    each("messages", (key, value) => {
      switch (key) {
        case "send_interval_min":
          this.sendIntervalMin = whole(value);
          return;
        case "send_interval_max":
          this.sendIntervalMax = whole(value);
          return;
        case "limit_period":
          this.limitPeriod = value === null ? "Disabled" : oneOf(value, this.periods, key);
          return;
        case "limit_value": {
          const limit = whole(value);
          if (limit !== null && limit < 0) throw new Error("Limit value must be >= 0");
          this.limitValue = limit;
          return;
        }
        case "sim_selection_mode":
          this.simSelection = value === null ? "OSDefault" : oneOf(value, SIM_SELECTION_MODES, key);
          return;
        case "processing_order":
          this.order = value === null ? "lifo" : oneOf(value, ["LIFO", "FIFO"] as const, key) === "FIFO" ? "fifo" : "lifo";
          return;
        case "log_lifetime_days": {
          const days = whole(value);
          if (days !== null && days < 1) throw new Error("Log lifetime days must be >= 1");
          return;
        }
      }
    });
    each("ping", (key, value) => {
      if (key !== "interval_seconds") return;
      const seconds = whole(value);
      this.pingSeconds = seconds !== null && seconds > 0 ? seconds : null;
    });
    each("gateway", (key, value) => {
      if (key === "notification_channel")
        this.notificationChannel = value === null ? "AUTO" : oneOf(value, ["AUTO", "SSE_ONLY"] as const, key);
    });
    each("encryption", (key, value) => {
      // Given as null, the app goes back to its default: no passphrase.
      if (key === "passphrase") this.passphrase = value === null ? null : String(value);
    });
    each("webhooks", (key, value) => {
      if (key === "retry_count" && (whole(value) ?? 15) < 1) throw new Error("Retry count must be >= 1");
      // Cleared, the app makes itself a new random key the next time it signs.
      if (key !== "signing_key") return;
      this.signingKey = value === null ? nanoid(8) : String(value);
      this.serverKey = value !== null;
    });
  }

  /** MessagesSettings.limitEnabled: a value above 0 in a period other than Disabled. */
  get limit(): { period: LimitPeriod; value: number } | null {
    return this.limitPeriod !== "Disabled" && this.limitValue !== null && this.limitValue > 0
      ? { period: this.limitPeriod, value: this.limitValue }
      : null;
  }

  /** One line of what the phone now uses, for the log. */
  describe(): string {
    const interval = this.sendInterval ? `send interval ${this.sendInterval.min}–${this.sendInterval.max} s` : "no send interval";
    const limit = this.limitPeriod === "Disabled" || !this.limitValue ? "no limit" : `limit ${this.limitValue} ${this.limitPeriod}`;
    const ping = this.pingSeconds === null ? "ping off" : `ping ${this.pingSeconds} s`;
    return `${interval}, ${limit}, order ${this.order.toUpperCase()}, SIM selection ${this.simSelection}, ${ping}, channel ${this.notificationChannel}${this.passphrase === null ? "" : ", encryption passphrase set"}`;
  }
}

/** The app's number reading: toString().toFloat().toInt(), null staying null. */
function whole(value: unknown): number | null {
  if (value === null) return null;
  const n = Number.parseFloat(String(value));
  if (!Number.isFinite(n)) throw new Error(`not a number: ${JSON.stringify(value)}`);
  return Math.trunc(n);
}

/** The app's Enum.valueOf: the exact name or an error. */
function oneOf<T extends string>(value: unknown, names: readonly T[], key: string): T {
  const name = String(value);
  if (!(names as readonly string[]).includes(name)) throw new Error(`${key}: no such value ${JSON.stringify(value)}`);
  return name as T;
}

export class ProtocolClient {
  deviceId = "";
  private deviceToken = "";
  /**
   * The phone's connection to the internet. Without it every request waits for it to come back
   * (the app's workers run under a network constraint and keep their work), the event stream
   * drops, and the radio still sends what the phone has downloaded.
   */
  private connected = true;
  private waitingForNetwork: (() => void)[] = [];
  private streamDropped = new AbortController();
  /** A Firebase registration token's shape: an instance id, a colon, a long opaque part. */
  private readonly pushToken: string | null;

  constructor(
    private readonly opts: SimulatePhoneOptions,
    private readonly life: Lifetime,
    private readonly settings: PhoneSettings,
  ) {
    this.pushToken = opts.channel === "auto" ? `${nanoid(22)}:APA91b${nanoid(134)}` : null;
  }

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

  /** Loses or regains the connection (SIGUSR1 and SIGUSR2 to the command). */
  setNetwork(up: boolean): void {
    if (up === this.connected) return;
    this.connected = up;
    this.log(up ? "network back" : "network lost: requests wait for it, the event stream drops");
    if (!up) this.streamDropped.abort(new Error("no network"));
    else {
      this.streamDropped = new AbortController();
      for (const wake of this.waitingForNetwork.splice(0)) wake();
    }
  }

  /** Resolves once the phone has a connection (at once when it has); false when it stopped first. */
  async online(): Promise<boolean> {
    while (!this.connected && !this.life.stopped) {
      await new Promise<void>((resolve) => {
        this.waitingForNetwork.push(resolve);
        this.life.signal.addEventListener("abort", () => resolve(), { once: true });
      });
    }
    return !this.life.stopped;
  }

  async getJson(path: string): Promise<unknown> {
    if (!(await this.online())) return undefined;
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
      // In SSE-only mode the app registers with a null token, which Gson leaves out; in AUTO mode
      // with the Firebase registration token.
      body: JSON.stringify({
        name: this.opts.name,
        ...(this.pushToken ? { pushToken: this.pushToken } : {}),
        simCards: simCards(this.opts.sims),
      }),
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

    const before = { ping: this.settings.pingSeconds, channel: this.settings.notificationChannel };
    try {
      this.settings.import(settings);
    } catch (error) {
      // The app's worker fails and retries later; what was imported before the bad key stays.
      this.log(`settings not imported: ${errorText(error)}`);
      return false;
    }
    this.log(`settings loaded (signing key ${this.settings.serverKey ? "from the server" : "of the device"}; ${this.settings.describe()})`);
    // The app runs its ping service and picks its channel at start, and asks the user to restart.
    if (before.ping !== this.settings.pingSeconds || before.channel !== this.settings.notificationChannel) {
      this.log("settings changed via API: ping and notification channel take effect when the app restarts");
    }
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
    // Where they point matters: release builds of the app refuse cleartext http:// URLs.
    const targets = [...new Set([...byEvent.values()].flat().map((h) => h.url))].sort().join(", ");
    this.log(`webhooks: ${events || "none"}${targets ? ` → ${targets}` : ""}`);
    return true;
  }

  async patchMessage(id: string, state: LocalState, body: string): Promise<void> {
    let failure = "";
    for (let attempt = 1; attempt <= PATCH_ATTEMPTS; attempt++) {
      // Without a connection the report waits for one (a phone stopped meanwhile drops it).
      if (!this.connected && !(await this.online())) break;
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
    if (!(await this.online())) throw new Error("stopped");
    const res = await fetch(`${this.opts.server}/events`, {
      // The app opens its stream with a plain OkHttp client, not the API client that names the app:
      // the server sees OkHttp's default User-Agent here, never the app version.
      headers: { ...this.headers(false), "User-Agent": OKHTTP_USER_AGENT, Accept: "text/event-stream" },
      signal: AbortSignal.any([this.life.signal, this.streamDropped.signal]),
    });
    if (!res.ok || !res.body) throw new Error(`events stream refused: ${await failureOf(res)}`);
    if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      await res.body.cancel();
      throw new Error(`events stream answered ${res.headers.get("content-type") ?? "no content type"}, not text/event-stream`);
    }
    return res;
  }
}
