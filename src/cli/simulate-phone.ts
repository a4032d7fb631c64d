// A stand-in for the "SMS Gateway for Android" app in Cloud-server mode with notifications set to
// SSE only, speaking the phone's side of the companion-app protocol
// (shared/reference/companion-app-protocol.md), so Pigeon can be tried end to end without a phone
// and our tests can drive the real binary the way a paired phone would.
// Where the app's behaviour is observable on the wire (paths, bodies, headers, dates, retries,
// webhook signing) this copies it; everything a handset would do with a radio is simulated.
import { createHmac } from "node:crypto";
import { parseArgs } from "node:util";
import { countSegments } from "../lib/segments";
import { nanoid, sha256Hex } from "../lib/tokens";

export interface SimulatePhoneOptions {
  /** Base URL including the mobile prefix, e.g. http://127.0.0.1:8080/mobile/v1. */
  server: string;
  /** The workspace pairing token: the app's "Private Token". */
  token: string;
  /** Probability, 0..1, that a message fails instead of being sent. */
  failRate: number;
  /** When set, the phone "receives" one SMS with this text after registering and reports it. */
  inbound: string | null;
  /** Sender of that inbound SMS. */
  from: string;
  /** Time from Processed to Sent and from Sent to Delivered. */
  delayMs: number;
  /** Device name sent at registration (the app sends MANUFACTURER/PRODUCT). */
  name: string;
  /** App version for the User-Agent. */
  appVersion: string;
  /** Seconds between safety-net polls of GET /message. */
  pollSeconds: number;
  /**
   * How long a downloaded message waits in the phone's own queue before the phone takes it up
   * (reports Processed); a cancel that arrives meanwhile drops it. 0: taken up at once.
   */
  holdMs: number;
  log: (line: string) => void;
}

export interface SimulatedPhoneHandle {
  deviceId: string;
  stop(): Promise<void>;
}

const DEFAULTS = {
  from: "+15550001111",
  delayMs: 1000,
  name: "Pigeon/simulator",
  appVersion: "1.68.0",
  pollSeconds: 30,
};

/** The phone's own number: the recipient of inbound SMS and the sender of outgoing ones. */
const OWN_NUMBER = "+15550009999";
const SIM_NUMBER = 1;
// Redacted the way the app redacts SIM details before sending them: all but the last 4 characters.
const SIM_CARD = { slotIndex: 0, simNumber: SIM_NUMBER, phoneNumber: "*******1234", carrierName: "***ile", iccid: "****************5678" };

const GENERIC_FAILURE = "Send result: RESULT_ERROR_GENERIC_FAILURE";
// The app's own timeout for webhook requests; we use it for every call so a hung server cannot
// hold stop() forever.
const REQUEST_TIMEOUT_MS = 30_000;
// The app retries a state PATCH up to 10 times, as we do. It retries webhooks up to 15 times on
// WorkManager's minutes-long back-off; a simulator should surface a broken endpoint quickly instead.
const PATCH_ATTEMPTS = 10;
const WEBHOOK_ATTEMPTS = 5;

const FLAGS = {
  server: { type: "string" },
  token: { type: "string" },
  "fail-rate": { type: "string" },
  inbound: { type: "string" },
  from: { type: "string" },
  delay: { type: "string" },
  name: { type: "string" },
  "app-version": { type: "string" },
  poll: { type: "string" },
  hold: { type: "string" },
} as const;

function numberFlag(raw: string | undefined, flag: string, fallback: number, min: number, max: number, whole = false): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(value) || value < min || value > max || (whole && !Number.isInteger(value))) {
    throw new Error(`${flag} needs ${whole ? "a whole number" : "a number"} from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** Reads the simulate-phone flags; throws an Error naming the flag when one is missing or invalid. */
export function parseSimulatePhoneArgs(argv: string[]): SimulatePhoneOptions {
  const { values } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false });

  const server = values.server?.trim();
  if (!server) throw new Error("--server is required, e.g. --server http://127.0.0.1:8080/mobile/v1");
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new Error(`--server needs an http(s) URL, got "${server}"`);
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash) {
    throw new Error(`--server needs an http(s) base URL without query or fragment, got "${server}"`);
  }

  const token = values.token?.trim();
  if (!token) throw new Error("--token is required (the workspace's pairing token)");

  const from = values.from ?? DEFAULTS.from;
  if (!/^\+[1-9]\d{6,14}$/.test(from)) throw new Error(`--from needs a number in E.164 form such as +15550001111, got "${from}"`);

  const name = values.name ?? DEFAULTS.name;
  // The server accepts names of at most 128 characters.
  if (!name.trim() || name.length > 128) throw new Error("--name needs 1 to 128 characters");

  const appVersion = values["app-version"] ?? DEFAULTS.appVersion;
  if (!/^\S+$/.test(appVersion)) throw new Error(`--app-version needs a version such as 1.68.0, got "${appVersion}"`);

  if (values.inbound !== undefined && values.inbound === "") throw new Error("--inbound needs the text of the received SMS");

  return {
    // The app appends "/device", "/message" … to the base verbatim, so a trailing slash would double.
    server: server.replace(/\/+$/, ""),
    token,
    failRate: numberFlag(values["fail-rate"], "--fail-rate", 0, 0, 1),
    inbound: values.inbound ?? null,
    from,
    delayMs: numberFlag(values.delay, "--delay", DEFAULTS.delayMs, 0, 3_600_000, true),
    name,
    appVersion,
    pollSeconds: numberFlag(values.poll, "--poll", DEFAULTS.pollSeconds, 0.01, 86_400),
    holdMs: numberFlag(values.hold, "--hold", 0, 0, 3_600_000, true),
    log: (line) => console.log(line),
  };
}

/** The app's SSE back-off: 5 s for the first five failures in a row, 30 s up to the tenth, then 60 s. */
export function reconnectDelay(failures: number): number {
  return failures > 10 ? 60_000 : failures > 5 ? 30_000 : 5_000;
}

/**
 * An incremental text/event-stream parser with the rules OkHttp (and so the app) follows: comment
 * lines are skipped, data lines are joined with "\n", and a frame without data is not dispatched.
 */
export class EventStreamParser {
  private buffer = "";
  private event = "";
  private data: string[] = [];

  constructor(private readonly onEvent: (event: string | null, data: string) => void) {}

  push(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      if (end < 0) return;
      // A CR at the very end may be the first half of a CRLF split across chunks.
      if (this.buffer[end] === "\r" && end === this.buffer.length - 1) return;
      const width = this.buffer.startsWith("\r\n", end) ? 2 : 1;
      this.line(this.buffer.slice(0, end));
      this.buffer = this.buffer.slice(end + width);
    }
  }

  private line(line: string): void {
    if (line === "") {
      if (this.data.length > 0) this.onEvent(this.event || null, this.data.join("\n"));
      this.event = "";
      this.data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
  }
}

type LocalState = "Processed" | "Sent" | "Delivered" | "Failed" | "Cancelled";
type WebhookEvent = "sms:received" | "sms:sent" | "sms:delivered" | "sms:failed" | "sms:cancelled";

interface LocalMessage {
  id: string;
  phoneNumbers: string[];
  partsCount: number;
  withDeliveryReport: boolean;
  validUntil: number | null;
  state: LocalState;
  error: string | null;
  /** When each state was reached, in the app's date form; sent whole with every PATCH. */
  states: Partial<Record<LocalState, string>>;
  /** The PATCHes of one message go out in order, each after the previous one settled. */
  reporting: Promise<void>;
}

interface Webhook {
  id: string;
  url: string;
}

type Json = Record<string, unknown>;

const record = (value: unknown): Json | null =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : null;
const text = (value: unknown): string | null => (typeof value === "string" ? value : null);
const finite = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);
const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * The app's Gson writes dates as yyyy-MM-dd'T'HH:mm:ss.SSSXXX; in UTC that is exactly what
 * toISOString gives (XXX prints "Z" for a zero offset).
 */
const stamp = (ms = Date.now()): string => new Date(ms).toISOString();

async function failureOf(res: Response): Promise<string> {
  const body = await res.text().catch(() => "");
  let message: string | null = null;
  try {
    message = text(record(JSON.parse(body))?.message);
  } catch {
    // Not JSON: the status alone says enough.
  }
  return `HTTP ${res.status}${message ? ` ${message}` : ""}`;
}

class SimulatedPhone {
  deviceId = "";
  private deviceToken = "";
  private readonly stopping = new AbortController();
  private readonly inflight = new Set<Promise<void>>();
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private poller: ReturnType<typeof setInterval> | null = null;
  private readonly messages = new Map<string, LocalMessage>();
  /** Downloaded but not yet taken up (see holdMs), by id. */
  private readonly held = new Map<string, Json>();
  private readonly sendQueue: LocalMessage[] = [];
  private sending = false;
  private pulling = false;
  private pullAgain = false;
  private webhooks = new Map<string, Webhook[]>();
  // Like the app: a device-local random key until the server provisions one through /settings.
  private signingKey = nanoid(8);
  private sendInterval: { min: number; max: number } | null = null;
  private order: "lifo" | "fifo" = "lifo";

  constructor(private readonly opts: SimulatePhoneOptions) {}

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private log(line: string): void {
    this.opts.log(line);
  }

  async start(): Promise<void> {
    await this.register();
    await this.loadSettings();
    await this.loadWebhooks();
    const stream = await this.openEvents();
    this.track(this.listen(stream));
    this.poller = setInterval(() => this.pull(), this.opts.pollSeconds * 1000);
    if (this.opts.inbound !== null) this.track(this.receive(this.opts.inbound));
  }

  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopping.abort();
      if (this.poller) clearInterval(this.poller);
      for (const timer of this.timers) clearTimeout(timer);
      this.timers.clear();
    }
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  // ---- background work and time ----

  private track(work: Promise<unknown>): void {
    const settled = work.then(
      () => undefined,
      (error) => {
        if (!this.stopped) this.log(`error: ${errorText(error)}`);
      },
    );
    this.inflight.add(settled);
    void settled.finally(() => this.inflight.delete(settled));
  }

  private later(ms: number, run: () => void): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }

  /** Waits, or returns false at once when the phone is stopped. */
  private sleep(ms: number): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const signal = this.stopping.signal;
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      }, ms);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  // ---- HTTP ----

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
    return AbortSignal.any([this.stopping.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]);
  }

  private async getJson(path: string): Promise<unknown> {
    try {
      const res = await fetch(`${this.opts.server}${path}`, { headers: this.headers(false), signal: this.readSignal() });
      if (!res.ok) {
        this.log(`GET ${path} failed: ${await failureOf(res)}`);
        return undefined;
      }
      return await res.json();
    } catch (error) {
      if (!this.stopped) this.log(`GET ${path} failed: ${errorText(error)}`);
      return undefined;
    }
  }

  private async register(): Promise<void> {
    const res = await fetch(`${this.opts.server}/device`, {
      method: "POST",
      // The pairing token authorises only this call; every later one uses the device token.
      headers: this.headers(true, this.opts.token),
      // No pushToken: in SSE-only mode the app registers with a null token, which Gson leaves out.
      body: JSON.stringify({ name: this.opts.name, simCards: [SIM_CARD] }),
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

  private async loadSettings(): Promise<void> {
    const body = await this.getJson("/settings");
    if (body === undefined) return;
    const settings = record(body) ?? {};
    const messages = record(settings.messages);
    const webhooks = record(settings.webhooks);

    // The app's importer only changes the keys it is given, so an absent key keeps the current one.
    const key = text(webhooks?.signing_key);
    if (key) this.signingKey = key;
    const min = finite(messages?.send_interval_min);
    const max = finite(messages?.send_interval_max);
    if (min !== null || max !== null) {
      const low = min ?? max ?? 0;
      const high = max ?? min ?? 0;
      this.sendInterval = { min: Math.min(low, high), max: Math.max(low, high) };
    }
    const order = text(messages?.processing_order);
    if (order === "LIFO" || order === "FIFO") this.order = order === "LIFO" ? "lifo" : "fifo";

    const interval = this.sendInterval ? `, send interval ${this.sendInterval.min}–${this.sendInterval.max} s` : "";
    this.log(`settings loaded (signing key ${key ? "from the server" : "of the device"}${interval})`);
  }

  private async loadWebhooks(): Promise<void> {
    const body = await this.getJson("/webhooks");
    if (body === undefined) return;
    if (!Array.isArray(body)) {
      this.log("GET /webhooks did not answer an array; keeping the current webhooks");
      return;
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
    this.webhooks = byEvent;
    const events = [...byEvent.keys()].sort().join(", ");
    this.log(`webhooks: ${events || "none"}`);
  }

  // ---- the event stream ----

  private async openEvents(): Promise<Response> {
    const res = await fetch(`${this.opts.server}/events`, {
      headers: { ...this.headers(false), Accept: "text/event-stream" },
      signal: this.stopping.signal,
    });
    if (!res.ok || !res.body) throw new Error(`events stream refused: ${await failureOf(res)}`);
    if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      await res.body.cancel();
      throw new Error(`events stream answered ${res.headers.get("content-type") ?? "no content type"}, not text/event-stream`);
    }
    return res;
  }

  private async listen(first: Response): Promise<void> {
    let stream: Response | null = first;
    let failures = 0;
    while (!this.stopped) {
      let reason: string;
      if (stream) {
        // The app counts failures in a row: a successful open starts the back-off afresh.
        failures = 0;
        this.log("events stream open");
        this.pull();
        reason = await this.consume(stream);
        if (this.stopped) return;
      } else {
        reason = "could not reconnect";
      }
      failures += 1;
      const wait = reconnectDelay(failures);
      this.log(`events stream ${reason}; reconnecting in ${wait / 1000} s`);
      if (!(await this.sleep(wait))) return;
      try {
        stream = await this.openEvents();
      } catch (error) {
        if (this.stopped) return;
        this.log(errorText(error));
        stream = null;
      }
    }
  }

  /** Reads the stream until it ends; returns why it ended. */
  private async consume(res: Response): Promise<string> {
    const parser = new EventStreamParser((event, data) => this.onEvent(event, data));
    const decoder = new TextDecoder();
    const reader = res.body!.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return "closed by the server";
        parser.push(decoder.decode(value, { stream: true }));
      }
    } catch (error) {
      return `failed (${errorText(error)})`;
    }
  }

  private onEvent(event: string | null, data: string): void {
    // The app treats a frame without an event name as MessageEnqueued.
    switch (event ?? "MessageEnqueued") {
      case "MessageEnqueued":
        this.pull();
        return;
      case "MessageCancelled": {
        let id: string | null = null;
        try {
          id = text(record(JSON.parse(data))?.messageId);
        } catch {
          // Malformed data is reported below like missing data.
        }
        if (!id) this.log(`MessageCancelled without a messageId: ${data}`);
        else this.cancelKnown(id);
        return;
      }
      case "WebhooksUpdated":
        this.track(this.loadWebhooks());
        return;
      case "SettingsUpdated":
        this.track(this.loadSettings());
        return;
      default:
        this.log(`event ${event} ignored`);
    }
  }

  // ---- messages ----

  /** Pulls GET /message; calls that arrive while one runs are folded into one more pull after it. */
  private pull(): void {
    if (this.stopped) return;
    if (this.pulling) {
      this.pullAgain = true;
      return;
    }
    this.pulling = true;
    this.track(
      (async () => {
        try {
          do {
            this.pullAgain = false;
            await this.pullOnce();
          } while (this.pullAgain && !this.stopped);
        } finally {
          this.pulling = false;
        }
      })(),
    );
  }

  private async pullOnce(): Promise<void> {
    const body = await this.getJson(`/message?order=${this.order}`);
    if (body === undefined || this.stopped) return;
    if (!Array.isArray(body)) {
      this.log("GET /message did not answer an array");
      return;
    }
    for (const item of body) {
      const message = record(item);
      const id = text(message?.id);
      if (!message || !id) {
        this.log(`message without an id skipped: ${JSON.stringify(item)}`);
        continue;
      }
      const known = this.messages.get(id);
      const state = message.state ?? "Pending";
      if (state === "Pending") {
        // A known id only has its state sent again, so repeated pulls never send twice.
        if (known) this.report(known);
        else if (!this.held.has(id)) this.hold(id, message);
      } else if (state === "Cancelling") {
        if (this.held.delete(id)) this.dropHeld(id, message);
        else if (!known) this.cancelUnknown(id, message);
        else if (known.state === "Processed") this.cancel(known);
        else if (known.state === "Cancelled") this.report(known);
      }
      // Any other state is not for the phone; the app ignores it too.
    }
  }

  /** Keeps a downloaded message in the phone's queue for holdMs before taking it up. */
  private hold(id: string, message: Json): void {
    if (this.opts.holdMs === 0) return this.accept(id, message);
    this.held.set(id, message);
    this.log(`message ${id} waiting in the phone's queue`);
    this.later(this.opts.holdMs, () => {
      if (this.held.delete(id)) this.accept(id, message);
    });
  }

  /** A cancel for a message still in the phone's queue: it is dropped and never sent. */
  private dropHeld(id: string, message: Json): void {
    this.cancelUnknown(id, message);
  }

  private phoneNumbersOf(id: string, message: Json): string[] | null {
    const numbers = message.phoneNumbers;
    if (!Array.isArray(numbers) || numbers.length === 0 || !numbers.every((n) => typeof n === "string")) {
      this.log(`message ${id} has no phoneNumbers; skipped`);
      return null;
    }
    return numbers as string[];
  }

  private accept(id: string, message: Json): void {
    const phoneNumbers = this.phoneNumbersOf(id, message);
    if (!phoneNumbers) return;
    const body = text(record(message.textMessage)?.text) ?? text(message.message);
    const validUntil = Date.parse(text(message.validUntil) ?? "");
    const local: LocalMessage = {
      id,
      phoneNumbers,
      // A data message is a single binary PDU; text is split the way the radio splits it.
      partsCount: body === null ? 1 : countSegments(body).segments,
      withDeliveryReport: message.withDeliveryReport !== false,
      validUntil: Number.isNaN(validUntil) ? null : validUntil,
      state: "Processed",
      error: null,
      states: {},
      reporting: Promise.resolve(),
    };
    this.messages.set(id, local);
    this.transition(local, "Processed");
    this.sendQueue.push(local);
    if (!this.sending) this.track(this.drainSendQueue());
  }

  /** Sends queued messages one at a time, as the app does, with the configured gap between them. */
  private async drainSendQueue(): Promise<void> {
    this.sending = true;
    try {
      while (this.sendQueue.length > 0 && !this.stopped) {
        const message = this.sendQueue.shift()!;
        if (message.state !== "Processed") continue;
        if (!(await this.sleep(this.opts.delayMs))) return;
        // Cancelled while it waited for the radio.
        if (message.state !== "Processed") continue;
        this.send(message);
        if (this.sendQueue.length > 0 && !(await this.sleep(this.sendGap()))) return;
      }
    } finally {
      this.sending = false;
    }
  }

  /** A random gap from the server's send interval, capped at delayMs so tests never wait seconds. */
  private sendGap(): number {
    if (!this.sendInterval) return 0;
    const { min, max } = this.sendInterval;
    return Math.min((min + Math.random() * (max - min)) * 1000, this.opts.delayMs);
  }

  private send(message: LocalMessage): void {
    // The app checks validUntil itself when it takes the message from its queue.
    if (message.validUntil !== null && Date.now() > message.validUntil) return this.fail(message, "TTL expired");
    if (Math.random() < this.opts.failRate) return this.fail(message, GENERIC_FAILURE);

    const sentAt = this.transition(message, "Sent");
    for (const recipient of message.phoneNumbers) {
      this.emit("sms:sent", { ...this.outgoing(message, recipient), partsCount: message.partsCount, sentAt });
    }
    // Without a delivery report the radio never says more, and the message stays Sent.
    if (!message.withDeliveryReport) return;
    this.later(this.opts.delayMs, () => {
      const deliveredAt = this.transition(message, "Delivered");
      for (const recipient of message.phoneNumbers) {
        this.emit("sms:delivered", { ...this.outgoing(message, recipient), deliveredAt });
      }
    });
  }

  private fail(message: LocalMessage, reason: string): void {
    const failedAt = this.transition(message, "Failed", reason);
    for (const recipient of message.phoneNumbers) {
      this.emit("sms:failed", { ...this.outgoing(message, recipient), failedAt, reason });
    }
  }

  /** A MessageCancelled push: only a message we hold can be cancelled; the pull handles the rest. */
  private cancelKnown(id: string): void {
    const held = this.held.get(id);
    if (held && this.held.delete(id)) return this.dropHeld(id, held);
    const message = this.messages.get(id);
    if (message?.state === "Processed") this.cancel(message);
  }

  private cancel(message: LocalMessage): void {
    const cancelledAt = this.transition(message, "Cancelled");
    for (const recipient of message.phoneNumbers) {
      this.emit("sms:cancelled", { ...this.outgoing(message, recipient), cancelledAt });
    }
  }

  /** The app answers a Cancelling message it never saw with Cancelled at once. */
  private cancelUnknown(id: string, message: Json): void {
    const phoneNumbers = this.phoneNumbersOf(id, message);
    if (!phoneNumbers) return;
    const local: LocalMessage = {
      id,
      phoneNumbers,
      partsCount: 0,
      withDeliveryReport: false,
      validUntil: null,
      state: "Cancelled",
      error: null,
      states: {},
      reporting: Promise.resolve(),
    };
    this.messages.set(id, local);
    this.transition(local, "Cancelled");
  }

  /** Moves a message to a state, logs it and reports it; returns when the state was reached. */
  private transition(message: LocalMessage, state: LocalState, error: string | null = null): string {
    const at = stamp();
    message.state = state;
    message.error = error;
    message.states[state] = at;
    this.log(state === "Cancelled" ? `message ${message.id} cancelled` : `message ${message.id} → ${state}${error ? ` (${error})` : ""}`);
    this.report(message);
    return at;
  }

  private report(message: LocalMessage): void {
    // The body is fixed now, so each PATCH carries the state it was queued for even if the
    // message moves on while an earlier one is still being retried.
    const body = JSON.stringify([
      {
        id: message.id,
        state: message.state,
        recipients: message.phoneNumbers.map((phoneNumber) =>
          message.error === null ? { phoneNumber, state: message.state } : { phoneNumber, state: message.state, error: message.error },
        ),
        states: { ...message.states },
      },
    ]);
    message.reporting = message.reporting.then(() => this.patchMessage(message.id, message.state, body));
    this.track(message.reporting);
  }

  private async patchMessage(id: string, state: LocalState, body: string): Promise<void> {
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
      if (attempt < PATCH_ATTEMPTS && !(await this.sleep(backoff(attempt)))) break;
    }
    this.log(`message ${id}: PATCH ${state} not accepted: ${failure}`);
  }

  // ---- webhooks ----

  private outgoing(message: LocalMessage, recipient: string): Json {
    // Field order follows the app's payload classes; phoneNumber is the deprecated twin of recipient.
    return { messageId: message.id, sender: OWN_NUMBER, recipient, simNumber: SIM_NUMBER, phoneNumber: recipient };
  }

  private async receive(textBody: string): Promise<void> {
    const receivedAt = stamp();
    // The app's id is the 32-bit hash of the received message, printed as unsigned hex.
    const messageId = parseInt(sha256Hex(`${this.opts.from}\n${textBody}\n${receivedAt}`).slice(0, 8), 16).toString(16);
    const payload = {
      messageId,
      sender: this.opts.from,
      recipient: OWN_NUMBER,
      simNumber: SIM_NUMBER,
      phoneNumber: this.opts.from,
      message: textBody,
      receivedAt,
    };
    const delivered = await this.emit("sms:received", payload);
    if (delivered > 0) this.log(`received SMS from ${this.opts.from} posted`);
    else this.log(`received SMS from ${this.opts.from} not posted: no sms:received webhook took it`);
  }

  /** Posts an event to every webhook registered for it; resolves with how many accepted it. */
  private emit(event: WebhookEvent, payload: Json): Promise<number> {
    const hooks = this.webhooks.get(event) ?? [];
    const posts = Promise.all(hooks.map((hook) => this.postWebhook(hook, event, payload))).then(
      (results) => results.filter(Boolean).length,
    );
    this.track(posts);
    return posts;
  }

  private async postWebhook(hook: Webhook, event: WebhookEvent, payload: Json): Promise<boolean> {
    // The id stays the same across retries so the receiver can drop duplicates.
    const body = JSON.stringify({ id: nanoid(), webhookId: hook.id, event, deviceId: this.deviceId, payload });
    let failure = "";
    for (let attempt = 1; attempt <= WEBHOOK_ATTEMPTS; attempt++) {
      // Signed afresh on every attempt, as the app's signing plugin runs per request.
      const timestamp = String(Math.floor(Date.now() / 1000));
      const signature = createHmac("sha256", this.signingKey).update(body + timestamp).digest("hex");
      try {
        const res = await fetch(hook.url, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            "User-Agent": `me.capcom.smsgateway/${this.opts.appVersion}`,
            "X-Timestamp": timestamp,
            "X-Signature": signature,
          },
          body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        if (res.ok) return true;
        failure = await failureOf(res);
      } catch (error) {
        failure = errorText(error);
      }
      if (attempt < WEBHOOK_ATTEMPTS && !(await this.sleep(backoff(attempt)))) break;
    }
    this.log(`webhook ${event} to ${hook.url} failed: ${failure}`);
    return false;
  }
}

/** 200 ms doubling per attempt, at most 5 s: short enough to watch, long enough to ride out a restart. */
function backoff(attempt: number): number {
  return Math.min(200 * 2 ** (attempt - 1), 5_000);
}

/**
 * Registers a simulated phone and keeps it running in the background; resolves once it is
 * registered and its event stream is open, and fails if either cannot be done.
 */
export async function simulatePhone(opts: SimulatePhoneOptions, signal?: AbortSignal): Promise<SimulatedPhoneHandle> {
  signal?.throwIfAborted();
  const phone = new SimulatedPhone(opts);
  const onAbort = () => void phone.stop();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await phone.start();
  } catch (error) {
    signal?.removeEventListener("abort", onAbort);
    await phone.stop();
    throw error;
  }
  return {
    deviceId: phone.deviceId,
    stop: async () => {
      signal?.removeEventListener("abort", onAbort);
      await phone.stop();
    },
  };
}
