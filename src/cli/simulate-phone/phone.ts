// One simulated phone put together, behaving like the app paired with "Sign up": it registers,
// keeps the event stream open, loads its settings and webhooks only when an event says so, pulls
// on each event, each (re)opened stream, its ping and a slow timer, reports what it receives and its
// health, re-posts its inbox when asked, and stops cleanly. On the AUTO channel it registers a push
// token instead and opens no stream, so only the timer and the ping pull.
import type { SimulatedPhoneHandle, SimulatePhoneOptions } from "./args";
import { listenForEvents } from "./event-stream";
import { Lifetime } from "./lifetime";
import { MessageQueue } from "./messages";
import { PhoneSettings, ProtocolClient } from "./protocol";
import { HealthPinger, Inbox } from "./reports";
import { WebhookPoster } from "./webhooks";
import { record, text } from "./wire";

class SimulatedPhone {
  private readonly life: Lifetime;
  private readonly client: ProtocolClient;
  private readonly hooks: WebhookPoster;
  private readonly queue: MessageQueue;
  private readonly timers: ReturnType<typeof setInterval>[] = [];
  private readonly inbox: Inbox;
  private readonly pinger: HealthPinger;
  /** Settles once both the settings (signing key) and the webhooks have been read from the server. */
  private readonly configured: Promise<boolean>;
  private markSettings!: () => void;
  private markWebhooks!: () => void;

  constructor(private readonly opts: SimulatePhoneOptions) {
    const settings = new PhoneSettings(opts);
    this.life = new Lifetime((line) => opts.log(line));
    this.client = new ProtocolClient(opts, this.life, settings);
    const parts = { opts, life: this.life, client: this.client, settings };
    this.hooks = new WebhookPoster(parts);
    this.queue = new MessageQueue(parts, this.hooks);
    this.inbox = new Inbox(parts, this.hooks);
    this.pinger = new HealthPinger(parts, this.hooks, this.queue);
    const settingsRead = new Promise<void>((resolve) => (this.markSettings = resolve));
    const webhooksRead = new Promise<void>((resolve) => (this.markWebhooks = resolve));
    const stopped = new Promise<boolean>((resolve) => this.life.signal.addEventListener("abort", () => resolve(false), { once: true }));
    this.configured = Promise.race([Promise.all([settingsRead, webhooksRead]).then(() => true), stopped]);
  }

  get deviceId(): string {
    return this.client.deviceId;
  }

  async start(): Promise<void> {
    // The app queues its webhooks and settings updates beside its registration at start; they run
    // before the registration answers, find no device token, make no request and wait a day. So
    // after sign-up the phone knows neither until the server sends WebhooksUpdated/SettingsUpdated.
    await this.client.register();
    this.opts.log("webhooks and settings not loaded: not yet registered when the update ran; next try in 24 h");
    if (this.opts.channel === "sse") {
      const stream = await this.client.openEvents();
      this.life.track(
        listenForEvents(stream, this.client, this.life, {
          onOpen: () => this.queue.pull(),
          onEvent: (event, data) => this.onEvent(event, data),
        }),
      );
    } else {
      // With a push token the app starts no event stream (EventsReceiver's DeviceRegisteredEvent);
      // its periodic pull ran once at start, before it was registered, so the next is one period on.
      this.opts.log(`no event stream: push token registered (AUTO channel); polling every ${this.opts.pollSeconds} s`);
    }
    this.timers.push(setInterval(() => this.queue.pull(), this.opts.pollSeconds * 1000));
    // The ping runs from the app's start with the interval it had then: each ping posts system:ping
    // (until the webhooks are loaded it goes nowhere) and pulls messages.
    this.pinger.start();
    if (this.opts.missed !== null) this.inbox.addMissed(this.opts.missed);
    const { inbound, mms } = this.opts;
    if (this.opts.channel === "auto" && (inbound !== null || mms !== null)) {
      this.opts.log("the received SMS waits: without an event stream nothing tells the phone its webhooks before a restart");
    }
    // Messages "arrive" once the phone knows where to post them and how to sign them.
    if (inbound !== null) this.life.track(this.configured.then((ready) => (ready ? this.inbox.receiveSms(inbound) : undefined)));
    if (mms !== null) this.life.track(this.configured.then((ready) => (ready ? this.inbox.receiveMms(mms) : undefined)));
    const { inboundData } = this.opts;
    if (inboundData !== null) this.life.track(this.configured.then((ready) => (ready ? this.inbox.receiveData(inboundData) : undefined)));
  }

  setNetwork(up: boolean): void {
    this.client.setNetwork(up);
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    await this.life.stop();
  }

  private onEvent(event: string | null, data: string): void {
    // The app treats a frame without an event name as MessageEnqueued.
    switch (event ?? "MessageEnqueued") {
      case "MessageEnqueued":
        this.queue.pull();
        return;
      case "MessageCancelled": {
        // Apps before 1.67 have no handler for it and log it as an unknown event.
        if (!knowsCancel(this.opts.appVersion)) break;
        let id: string | null = null;
        try {
          id = text(record(JSON.parse(data))?.messageId);
        } catch {
          // Malformed data is reported below like missing data.
        }
        if (!id) this.opts.log(`MessageCancelled without a messageId: ${data}`);
        else this.queue.cancelKnown(id);
        return;
      }
      case "WebhooksUpdated":
        this.life.track(this.client.loadWebhooks().then((ok) => ok && this.markWebhooks()));
        return;
      case "SettingsUpdated":
        this.life.track(this.client.loadSettings().then((ok) => ok && this.markSettings()));
        return;
      case "MessagesExportRequested":
        this.life.track(this.inbox.export(data));
        return;
    }
    this.opts.log(`event ${event} ignored`);
  }
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
    setNetwork: (up) => phone.setNetwork(up),
    stop: async () => {
      signal?.removeEventListener("abort", onAbort);
      await phone.stop();
    },
  };
}

/** Whether an app version (e.g. "1.68.0") handles MessageCancelled: 1.67.0 and later do. */
export function knowsCancel(version: string): boolean {
  const [major = 0, minor = 0] = version.split(".").map((p) => Number.parseInt(p, 10) || 0);
  return major > 1 || (major === 1 && minor >= 67);
}
