// The phones of bench/swarm.ts: one process playing many paired phones at once, each speaking the
// companion app's protocol as Pigeon serves it (src/channels/phone/routes.ts), the way
// `pigeon simulate-phone` plays one (src/cli/simulate-phone/):
//
// - pairing: POST /device with the workspace's pairing token (the app's "Private Token"), a name of
//   its own (MANUFACTURER/PRODUCT; a name and SIM list already paired would take that phone over)
//   and its redacted SIM card, as the SSE-only app registers: no push token;
// - its event stream (GET /events, OkHttp's User-Agent) held open, reopened with the app's back-off
//   when it ends, and a pull (GET /message) on every open;
// - WebhooksUpdated and SettingsUpdated read GET /webhooks and GET /settings (the signing key);
// - MessageEnqueued pulls GET /message (a pull asked for while one runs is folded into one more);
// - each pulled message sent one at a time, as the app's radio does: PATCH /message Processed, the
//   radio's time, Sent (with the sms:sent webhook, signed), then the radio's time again and
//   Delivered (sms:delivered) when a delivery report was asked for; a message pulled again only has
//   its state sent again; a Cancelling one it never had is answered Cancelled.
//
// Usage: bun bench/swarm-phones.ts CONFIG.json (see Config). "pair" registers the phones and opens
// their streams; "connect" brings back phones paired before (their tokens, signing keys and
// webhooks from the credentials file, as the app keeps them) and opens their streams. A control
// server on 127.0.0.1 answers GET /stats, GET /enqueued (when each MessageEnqueued arrived, on
// which phone) and POST /save (writes the credentials file); its port is printed as
// `control PORT`. SIGTERM drops every stream and ends the process.
import { createHmac } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { EventStreamParser, reconnectDelay } from "../src/cli/simulate-phone/event-stream";
import { OKHTTP_USER_AGENT, OWN_NUMBER, simCards } from "../src/cli/simulate-phone/wire";
import { nanoid } from "../src/lib/tokens";

export interface Config {
  mode: "pair" | "connect";
  /** Mobile API bases (…/mobile/v1); phone i pairs through servers[i % servers.length]. */
  servers: string[];
  pairingToken: string;
  phones: number;
  /** Written by POST /save; read in "connect" mode. */
  credentials: string;
  /** How long the radio takes from Processed to Sent, and from Sent to the delivery report. */
  radioMs: number;
  /** Whether the phones post the sms:sent and sms:delivered webhooks the app posts. */
  webhooks: boolean;
  /** Registrations in flight at once in "pair" mode. */
  pairConcurrency: number;
}

/** What "connect" mode needs to bring a phone back as the app would after a restart. */
export interface SavedPhone {
  index: number;
  base: string;
  id: string;
  token: string;
  signingKey: string | null;
  hooks: Record<string, { id: string; url: string }[]>;
}

export interface PhoneStats {
  phones: number;
  registered: number;
  /** Phones whose settings (signing key) and webhooks have been read. */
  configured: number;
  /** Streams open now. */
  open: number;
  /** Streams opened, reopenings included. */
  opens: number;
  /** Streams that ended without the phone ending them. */
  drops: number;
  pulls: number;
  pulled: number;
  patches: number;
  webhooks: number;
  /** Reports sent again for a message a pull handed again (the app answers a known one so). */
  repeats: number;
  /** Requests that failed (an error or a status other than the one expected). */
  failures: number;
  /** Messages pulled and not finished yet, pulls running, reports on the wire. */
  busy: number;
  /** Each registration's time, in ms (pair mode). */
  registrationMs: number[];
  /** The first few failures, for the report. */
  errors: string[];
}

const APP_UA = "me.capcom.smsgateway/1.68.0";
const TIMEOUT_MS = 30_000;
const REPORT_ATTEMPTS = 5;

/** Wall-clock milliseconds with a fraction, comparable between processes on one machine. */
export const wallMs = () => performance.timeOrigin + performance.now();

const stats: PhoneStats = {
  phones: 0,
  registered: 0,
  configured: 0,
  open: 0,
  opens: 0,
  drops: 0,
  pulls: 0,
  pulled: 0,
  patches: 0,
  webhooks: 0,
  repeats: 0,
  failures: 0,
  busy: 0,
  registrationMs: [],
  errors: [],
};
/** Each MessageEnqueued: the phone's index and when it arrived (wallMs). */
const enqueued: [number, number][] = [];
const stopping = new AbortController();

function failed(what: string) {
  stats.failures++;
  if (stats.errors.length < 20) stats.errors.push(what);
}

const sleep = (ms: number) =>
  new Promise<boolean>((resolve) => {
    if (stopping.signal.aborted) return resolve(false);
    const timer = setTimeout(() => resolve(true), ms);
    stopping.signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve(false);
      },
      { once: true },
    );
  });

type State = "Pending" | "Processed" | "Sent" | "Delivered" | "Cancelled";

interface Message {
  id: string;
  to: string;
  priority: number;
  withDeliveryReport: boolean;
  state: State;
  states: Partial<Record<State, string>>;
  /** The message's PATCHes go out in order, each after the one before. */
  reporting: Promise<void>;
}

class Phone {
  id = "";
  token = "";
  signingKey: string | null = null;
  hooks: Record<string, { id: string; url: string }[]> = {};
  private settingsRead = false;
  private hooksRead = false;
  private readonly messages = new Map<string, Message>();
  private readonly queue: Message[] = [];
  private sending = false;
  private pulling = false;
  private pullAgain = false;
  private sendGapMs = 0;

  constructor(
    readonly index: number,
    readonly base: string,
    private readonly config: Config,
  ) {}

  get name(): string {
    return `Swarm/phone-${String(this.index).padStart(5, "0")}`;
  }

  private headers(json = false): Record<string, string> {
    return {
      "user-agent": APP_UA,
      authorization: `Bearer ${this.token}`,
      accept: "application/json",
      ...(json ? { "content-type": "application/json" } : {}),
    };
  }

  async register(pairingToken: string): Promise<void> {
    const started = performance.now();
    const res = await fetch(`${this.base}/device`, {
      method: "POST",
      headers: {
        "user-agent": APP_UA,
        authorization: `Bearer ${pairingToken}`,
        accept: "application/json",
        "content-type": "application/json",
      },
      body: JSON.stringify({ name: this.name, simCards: simCards(1) }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (res.status !== 201) throw new Error(`registration of ${this.name}: HTTP ${res.status} ${await res.text()}`);
    const body = (await res.json()) as { id: string; token: string };
    this.id = body.id;
    this.token = body.token;
    stats.registrationMs.push(performance.now() - started);
    stats.registered++;
  }

  restore(saved: SavedPhone): void {
    this.id = saved.id;
    this.token = saved.token;
    this.signingKey = saved.signingKey;
    this.hooks = saved.hooks;
    this.settingsRead = this.hooksRead = true;
    stats.registered++;
    stats.configured++;
  }

  saved(): SavedPhone {
    return { index: this.index, base: this.base, id: this.id, token: this.token, signingKey: this.signingKey, hooks: this.hooks };
  }

  /** Holds the event stream open until the process stops, reopening it with the app's back-off. */
  async listen(): Promise<void> {
    let failures = 0;
    while (!stopping.signal.aborted) {
      let res: Response | null = null;
      try {
        res = await fetch(`${this.base}/events`, {
          headers: { "user-agent": OKHTTP_USER_AGENT, authorization: `Bearer ${this.token}`, accept: "text/event-stream" },
          signal: stopping.signal,
        });
        if (!res.ok || !res.body) {
          failed(`${this.name}: GET /events HTTP ${res.status}`);
          res = null;
        }
      } catch (error) {
        if (stopping.signal.aborted) return;
        failed(`${this.name}: GET /events ${(error as Error).message}`);
      }
      if (res) {
        failures = 0;
        stats.open++;
        stats.opens++;
        // The app pulls on every open, in case it missed an event meanwhile.
        this.pull();
        const parser = new EventStreamParser((event, data) => this.onEvent(event, data));
        const decoder = new TextDecoder();
        const reader = res.body!.getReader();
        try {
          for (let r = await reader.read(); !r.done; r = await reader.read()) parser.push(decoder.decode(r.value, { stream: true }));
        } catch {
          // Ended below either way.
        }
        stats.open--;
        if (stopping.signal.aborted) return;
        stats.drops++;
      }
      failures++;
      if (!(await sleep(reconnectDelay(failures)))) return;
    }
  }

  private onEvent(event: string | null, _data: string): void {
    // The app takes a frame without an event name as MessageEnqueued.
    switch (event ?? "MessageEnqueued") {
      case "MessageEnqueued":
        enqueued.push([this.index, wallMs()]);
        this.pull();
        return;
      case "WebhooksUpdated":
        void this.loadWebhooks();
        return;
      case "SettingsUpdated":
        void this.loadSettings();
        return;
    }
  }

  private async getJson(path: string): Promise<unknown> {
    stats.busy++;
    try {
      const res = await fetch(`${this.base}${path}`, { headers: this.headers(), signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (!res.ok) {
        failed(`${this.name}: GET ${path} HTTP ${res.status}`);
        return undefined;
      }
      return await res.json();
    } catch (error) {
      if (!stopping.signal.aborted) failed(`${this.name}: GET ${path} ${(error as Error).message}`);
      return undefined;
    } finally {
      stats.busy--;
    }
  }

  private configuredNow(): void {
    if (this.settingsRead && this.hooksRead) stats.configured++;
  }

  private async loadSettings(): Promise<void> {
    const body = (await this.getJson("/settings")) as {
      webhooks?: { signing_key?: string };
      messages?: { send_interval_min?: number | null; send_interval_max?: number | null };
    } | null;
    if (!body) return;
    this.signingKey = body.webhooks?.signing_key ?? this.signingKey;
    // The app's pause between messages, when the user chose one (seconds, a random point between).
    const min = body.messages?.send_interval_min ?? 0;
    const max = body.messages?.send_interval_max;
    this.sendGapMs = typeof max === "number" && max >= min ? (min + Math.random() * (max - min)) * 1000 : 0;
    if (!this.settingsRead) {
      this.settingsRead = true;
      this.configuredNow();
    }
  }

  private async loadWebhooks(): Promise<void> {
    const body = await this.getJson("/webhooks");
    if (!Array.isArray(body)) return;
    const hooks: Record<string, { id: string; url: string }[]> = {};
    for (const h of body as { id: string; url: string; event: string }[])
      hooks[h.event] = [...(hooks[h.event] ?? []), { id: h.id, url: h.url }];
    this.hooks = hooks;
    if (!this.hooksRead) {
      this.hooksRead = true;
      this.configuredNow();
    }
  }

  /** GET /message; a pull asked for while one runs becomes one more pull after it. */
  pull(): void {
    if (stopping.signal.aborted) return;
    if (this.pulling) {
      this.pullAgain = true;
      return;
    }
    this.pulling = true;
    void (async () => {
      try {
        do {
          this.pullAgain = false;
          await this.pullOnce();
        } while (this.pullAgain && !stopping.signal.aborted);
      } finally {
        this.pulling = false;
      }
    })();
  }

  private async pullOnce(): Promise<void> {
    stats.pulls++;
    const list = await this.getJson("/message?order=lifo");
    if (!Array.isArray(list)) return;
    for (const item of list as { id: string; phoneNumbers: string[]; priority?: number; withDeliveryReport?: boolean; state?: string }[]) {
      const known = this.messages.get(item.id);
      if ((item.state ?? "Pending") === "Cancelling") {
        if (!known) this.report(this.remember(item, "Cancelled"));
        else if (known.state === "Pending") this.transition(known, "Cancelled");
        continue;
      }
      // A message it already has only has its state sent again, so a repeated pull never sends twice.
      if (known) {
        stats.repeats++;
        this.report(known);
        continue;
      }
      stats.pulled++;
      this.queue.push(this.remember(item, "Pending"));
    }
    if (!this.sending && this.queue.length > 0) void this.drain();
  }

  private remember(item: { id: string; phoneNumbers: string[]; priority?: number; withDeliveryReport?: boolean }, state: State): Message {
    const message: Message = {
      id: item.id,
      to: item.phoneNumbers[0],
      priority: item.priority ?? 0,
      withDeliveryReport: item.withDeliveryReport !== false,
      state,
      states: { [state]: new Date().toISOString() },
      reporting: Promise.resolve(),
    };
    this.messages.set(item.id, message);
    if (state === "Pending") stats.busy++;
    return message;
  }

  /** One message at a time, highest priority first, as the app's send worker takes them. */
  private async drain(): Promise<void> {
    this.sending = true;
    try {
      while (this.queue.length > 0 && !stopping.signal.aborted) {
        let best = 0;
        for (let i = 1; i < this.queue.length; i++) if (this.queue[i].priority > this.queue[best].priority) best = i;
        const message = this.queue.splice(best, 1)[0];
        if (message.state !== "Pending") continue;
        this.transition(message, "Processed");
        if (!(await sleep(this.config.radioMs))) return;
        this.transition(message, "Sent");
        this.hook("sms:sent", message, { sentAt: message.states.Sent, partsCount: 1 });
        if (message.withDeliveryReport) {
          void sleep(this.config.radioMs).then((awake) => {
            if (!awake) return;
            this.transition(message, "Delivered");
            this.hook("sms:delivered", message, { deliveredAt: message.states.Delivered });
            stats.busy--;
          });
        } else stats.busy--;
        if (this.queue.length > 0 && this.sendGapMs > 0 && !(await sleep(this.sendGapMs))) return;
      }
    } finally {
      this.sending = false;
    }
  }

  private transition(message: Message, state: State): void {
    if (state === "Cancelled" && message.state === "Pending") stats.busy--;
    message.state = state;
    message.states[state] = new Date().toISOString();
    this.report(message);
  }

  /** PATCH /message with the message's state now; the app retries a report until it is taken. */
  private report(message: Message): void {
    const body = JSON.stringify([
      {
        id: message.id,
        state: message.state,
        recipients: [{ phoneNumber: message.to, state: message.state }],
        states: { ...message.states },
      },
    ]);
    stats.busy++;
    message.reporting = message.reporting.then(async () => {
      try {
        for (let attempt = 1; attempt <= REPORT_ATTEMPTS; attempt++) {
          try {
            stats.patches++;
            const res = await fetch(`${this.base}/message`, {
              method: "PATCH",
              headers: this.headers(true),
              body,
              signal: AbortSignal.timeout(TIMEOUT_MS),
            });
            if (res.status === 204) return;
            failed(`${this.name}: PATCH /message HTTP ${res.status}`);
          } catch (error) {
            if (stopping.signal.aborted) return;
            failed(`${this.name}: PATCH /message ${(error as Error).message}`);
          }
          if (!(await sleep(200 * 2 ** (attempt - 1)))) return;
        }
      } finally {
        stats.busy--;
      }
    });
  }

  /** A state webhook to each URL the server listed for the event, signed as the app signs it. */
  private hook(event: "sms:sent" | "sms:delivered", message: Message, extra: Record<string, unknown>): void {
    if (!this.config.webhooks || !this.signingKey) return;
    for (const hook of this.hooks[event] ?? []) {
      const body = JSON.stringify({
        id: nanoid(),
        webhookId: hook.id,
        event,
        deviceId: this.id,
        payload: { messageId: message.id, sender: OWN_NUMBER, recipient: message.to, simNumber: 1, phoneNumber: message.to, ...extra },
      });
      const timestamp = String(Math.floor(Date.now() / 1000));
      const signature = createHmac("sha256", this.signingKey)
        .update(body + timestamp)
        .digest("hex");
      stats.webhooks++;
      stats.busy++;
      void fetch(hook.url, {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": APP_UA, "x-timestamp": timestamp, "x-signature": signature },
        body,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
        .then((res) => {
          if (res.status !== 204) failed(`${this.name}: webhook ${event} HTTP ${res.status}`);
        })
        .catch((error: Error) => {
          if (!stopping.signal.aborted) failed(`${this.name}: webhook ${event} ${error.message}`);
        })
        .finally(() => stats.busy--);
    }
  }
}

async function main() {
  const config = JSON.parse(readFileSync(process.argv[2], "utf8")) as Config;
  const phones: Phone[] = [];
  stats.phones = config.phones;

  const control = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const { pathname, searchParams } = new URL(req.url);
      if (pathname === "/stats") return Response.json(stats);
      if (pathname === "/enqueued") {
        const since = Number(searchParams.get("since") ?? 0);
        return Response.json(enqueued.filter(([, at]) => at >= since));
      }
      if (pathname === "/save" && req.method === "POST") {
        writeFileSync(config.credentials, JSON.stringify(phones.filter((p) => p.token).map((p) => p.saved())));
        return new Response(null, { status: 204 });
      }
      return new Response("not found", { status: 404 });
    },
  });
  console.log(`control ${control.port}`);

  process.on("SIGTERM", () => {
    stopping.abort();
    // The aborted streams close their sockets; a moment for that, then out.
    setTimeout(() => process.exit(0), 200);
  });

  if (config.mode === "pair") {
    for (let i = 0; i < config.phones; i++) phones.push(new Phone(i, config.servers[i % config.servers.length], config));
    // The first phone pairs alone, as an owner starts (the first registration also makes the
    // workspace's app login and is shown its password); the rest a few at a time.
    let next = 0;
    const worker = async (count = Number.POSITIVE_INFINITY) => {
      for (let n = 0; n < count && next < phones.length && !stopping.signal.aborted; n++) {
        const phone = phones[next++];
        try {
          await phone.register(config.pairingToken);
          // The app opens its stream right after registering.
          void phone.listen();
        } catch (error) {
          failed((error as Error).message);
        }
      }
    };
    await worker(1);
    await Promise.all(Array.from({ length: Math.max(1, config.pairConcurrency) }, () => worker()));
  } else {
    const saved = JSON.parse(readFileSync(config.credentials, "utf8")) as SavedPhone[];
    for (const s of saved.slice(0, config.phones)) {
      const phone = new Phone(s.index, s.base, config);
      phone.restore(s);
      phones.push(phone);
    }
    // Every phone comes back at once, as after the server's restart.
    for (const phone of phones) void phone.listen();
  }
}

if (import.meta.main) await main();
