// One simulated phone put together: it registers, loads its settings and webhooks, keeps the
// event stream open, pulls on each event and on a timer, and stops cleanly.
import type { SimulatedPhoneHandle, SimulatePhoneOptions } from "./args";
import { listenForEvents } from "./event-stream";
import { Lifetime } from "./lifetime";
import { MessageQueue } from "./messages";
import { PhoneSettings, ProtocolClient } from "./protocol";
import { WebhookPoster } from "./webhooks";
import { record, text } from "./wire";

class SimulatedPhone {
  private readonly life: Lifetime;
  private readonly client: ProtocolClient;
  private readonly hooks: WebhookPoster;
  private readonly queue: MessageQueue;
  private poller: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly opts: SimulatePhoneOptions) {
    const settings = new PhoneSettings();
    this.life = new Lifetime((line) => opts.log(line));
    this.client = new ProtocolClient(opts, this.life, settings);
    const parts = { opts, life: this.life, client: this.client, settings };
    this.hooks = new WebhookPoster(parts);
    this.queue = new MessageQueue(parts, this.hooks);
  }

  get deviceId(): string {
    return this.client.deviceId;
  }

  async start(): Promise<void> {
    await this.client.register();
    await this.client.loadSettings();
    await this.client.loadWebhooks();
    const stream = await this.client.openEvents();
    this.life.track(
      listenForEvents(stream, this.client, this.life, {
        onOpen: () => this.queue.pull(),
        onEvent: (event, data) => this.onEvent(event, data),
      }),
    );
    this.poller = setInterval(() => this.queue.pull(), this.opts.pollSeconds * 1000);
    if (this.opts.inbound !== null) this.life.track(this.hooks.receive(this.opts.inbound));
  }

  async stop(): Promise<void> {
    if (this.poller) clearInterval(this.poller);
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
        this.life.track(this.client.loadWebhooks());
        return;
      case "SettingsUpdated":
        this.life.track(this.client.loadSettings());
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
