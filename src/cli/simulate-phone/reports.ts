// What the phone reports on its own, as the app does: the SMS and MMS it receives (its inbox, which
// it re-posts when the server asks with MessagesExportRequested) and its health (system:ping on
// the ping interval it started with).
import { sha256Hex } from "../../lib/tokens";
import type { MessageQueue } from "./messages";
import { PhonePart, type PhoneParts } from "./parts";
import type { WebhookPoster } from "./webhooks";
import { OWN_NUMBER, record, SIM_NUMBER, stamp, text, versionAtLeast, type Json } from "./wire";

/** One message in the phone's inbox (the Android SMS/MMS provider). */
type InboxItem =
  | { kind: "sms"; address: string; date: number; body: string }
  | { kind: "mms"; address: string; date: number; mmsId: string; subject: string; attachments: Json[] };

// The app versions (CHANGELOG.md) each behaviour came with.
const PING_SINCE = "1.16.0";
const HEALTH_DETAILS_SINCE = "1.30.0";
const EXPORT_SINCE = "1.28.0";
const EXPORT_OPTIONS_SINCE = "1.59.0";
const EXPORT_MMS_SINCE = "1.63.0";
const MMS_SINCE = "1.47.0";
const MMS_DOWNLOADED_SINCE = "1.56.0";
/** From here the app skips, on export, messages it already handled (its incoming-messages table). */
const EXPORT_DEDUP_SINCE = "1.65.2";

/** An 8×8 green PNG: the simulated MMS's picture unless --mms-file names another file. */
export const MMS_PICTURE_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEUlEQVR4nGPQqzXCihiGlgQAlgM3QfcSdGIAAAAASUVORK5CYII=";

export class Inbox extends PhonePart {
  private readonly items: InboxItem[] = [];
  /** Ids of what the app processed (its incoming-messages table). */
  private readonly handled = new Set<string>();
  private nextMmsId = 1;

  constructor(
    parts: PhoneParts,
    private readonly hooks: WebhookPoster,
  ) {
    super(parts);
  }

  /** An SMS arrives while the app runs: into the inbox, and posted as sms:received. */
  async receiveSms(body: string): Promise<void> {
    const item: InboxItem = { kind: "sms", address: this.opts.from, date: Date.now(), body };
    this.items.push(item);
    const delivered = await this.process(item);
    if (delivered > 0) this.log(`received SMS from ${this.opts.from} posted`);
    else this.log(`received SMS from ${this.opts.from} not posted: no sms:received webhook took it`);
  }

  /**
   * A data SMS arrives on the app's port (its DATA_SMS_RECEIVED receiver): posted as
   * sms:data-received with the PDU's user data in base64 (SmsEventPayload.SmsDataReceived). The
   * SMS provider keeps no data SMS, so an inbox export never posts it again.
   */
  async receiveData(data: string): Promise<void> {
    const date = Date.now();
    const bytes = Buffer.from(data, "base64");
    this.handled.add(`data:${data}:${date}`);
    const messageId = parseInt(sha256Hex(`${this.opts.from}\n${data}\n${stamp(date)}`).slice(0, 8), 16).toString(16);
    const delivered = await this.hooks.emit("sms:data-received", {
      messageId,
      sender: this.opts.from,
      recipient: OWN_NUMBER,
      simNumber: SIM_NUMBER,
      phoneNumber: this.opts.from,
      data: bytes.toString("base64"),
      receivedAt: stamp(date),
    });
    this.log(
      delivered > 0
        ? `received data SMS from ${this.opts.from} (${bytes.length} bytes) posted`
        : `received data SMS from ${this.opts.from} not posted: no sms:data-received webhook took it`,
    );
  }

  /** An SMS that arrived while the app was not running: in the inbox, never processed. */
  addMissed(body: string): void {
    this.items.push({ kind: "sms", address: this.opts.from, date: Date.now() - 60_000, body });
    this.log(`SMS from ${this.opts.from} waiting in the inbox, not posted`);
  }

  /**
   * An MMS arrives: the WAP push carries its headers (mms:received); the messaging app downloads
   * the content, which the app finds in the MMS provider and posts as mms:downloaded.
   */
  async receiveMms(subject: string): Promise<void> {
    if (!versionAtLeast(this.opts.appVersion, MMS_SINCE)) {
      this.log(`MMS not reported: the app reports MMS from ${MMS_SINCE}`);
      return;
    }
    // MMS dates have whole seconds.
    const date = Math.floor(Date.now() / 1000) * 1000;
    const transactionId = `T${sha256Hex(`${this.opts.from}\n${subject}\n${date}`).slice(0, 12)}`;
    // A notification seldom carries a Message-ID, so the app uses the transaction id.
    const headers = {
      messageId: transactionId,
      sender: this.opts.from,
      recipient: OWN_NUMBER,
      simNumber: SIM_NUMBER,
      phoneNumber: this.opts.from,
      transactionId,
      subject,
      size: 24_576,
      contentClass: null,
      receivedAt: stamp(date),
    };
    const key = `mms-header:${transactionId}`;
    // A carrier repeats the push when it saw no acknowledgement; the app checks its table first
    // from 1.65.2, older apps post each push.
    for (let push = 1; push <= this.opts.mmsPushes && !this.life.stopped; push++) {
      if (versionAtLeast(this.opts.appVersion, EXPORT_DEDUP_SINCE) && this.handled.has(key)) {
        this.log("repeated MMS notification skipped: already handled");
        continue;
      }
      this.handled.add(key);
      const posted = await this.hooks.emit("mms:received", headers);
      this.log(posted > 0 ? `received MMS from ${this.opts.from} posted` : "received MMS not posted: no mms:received webhook took it");
    }
    if (!versionAtLeast(this.opts.appVersion, MMS_DOWNLOADED_SINCE) || this.life.stopped) return;
    if (!(await this.life.sleep(this.opts.delayMs))) return;
    // As the app's MmsContentReader reads a part: its provider id, type, name, size and bytes in base64.
    const file = this.opts.mmsFile;
    const bytes = file ? Buffer.from(file.bytes) : Buffer.from(MMS_PICTURE_PNG, "base64");
    const attachments = [
      {
        partId: 1,
        contentType: file?.contentType ?? "image/png",
        name: file?.name ?? "picture.png",
        size: bytes.length,
        data: bytes.toString("base64"),
      },
    ];
    const item: InboxItem = { kind: "mms", address: this.opts.from, date, mmsId: String(this.nextMmsId++), subject, attachments };
    this.items.push(item);
    const downloaded = await this.process(item);
    if (downloaded > 0) this.log(`downloaded MMS from ${this.opts.from} posted`);
  }

  /**
   * MessagesExportRequested: the app selects its inbox between `since` and `until` (SMS by their
   * send time in milliseconds, downloaded MMS by whole seconds), oldest first, and processes each
   * as if just received: posted again unless the app handled it already (1.65.2 and later).
   */
  async export(data: string): Promise<void> {
    if (!versionAtLeast(this.opts.appVersion, EXPORT_SINCE)) {
      this.log(`event MessagesExportRequested ignored: apps before ${EXPORT_SINCE} do not know it`);
      return;
    }
    let payload: Json | null = null;
    try {
      payload = record(JSON.parse(data));
    } catch {
      // Reported below.
    }
    const since = Date.parse(text(payload?.since) ?? "");
    const until = Date.parse(text(payload?.until) ?? "");
    if (!payload || Number.isNaN(since) || Number.isNaN(until)) {
      this.log(`MessagesExportRequested with unreadable data: ${data}`);
      return;
    }
    let types = new Set(["SMS"]);
    let trigger = true;
    if (versionAtLeast(this.opts.appVersion, EXPORT_OPTIONS_SINCE)) {
      // An unknown type makes the app fall back to SMS alone; Gson reads "true"/"false" strings too.
      const asked = text(payload.messageTypes)?.split(",");
      if (asked?.every((t) => ["SMS", "DATA_SMS", "MMS", "MMS_DOWNLOADED"].includes(t))) types = new Set(asked);
      const raw = payload.triggerWebhooks;
      if (raw === false || raw === "false") trigger = false;
    }
    const withMms = types.has("MMS") && versionAtLeast(this.opts.appVersion, EXPORT_MMS_SINCE);
    const selected = this.items
      .filter((m) =>
        m.kind === "sms"
          ? types.has("SMS") && m.date >= since && m.date <= until
          : withMms && m.date / 1000 >= Math.trunc(since / 1000) && m.date / 1000 <= Math.trunc(until / 1000),
      )
      .sort((a, b) => a.date - b.date);
    let posted = 0;
    let skipped = 0;
    const posts: Promise<number>[] = [];
    for (const item of selected) {
      if (versionAtLeast(this.opts.appVersion, EXPORT_DEDUP_SINCE) && this.handled.has(idOf(item))) {
        skipped++;
        continue;
      }
      posted++;
      posts.push(this.process(item, trigger));
    }
    await Promise.all(posts);
    this.log(`inbox export: ${posted} message(s) processed again, ${skipped} already handled skipped`);
  }

  /** The app's ReceiverService.process: recorded as handled, then posted; how many webhooks took it. */
  private process(item: InboxItem, triggerWebhooks = true): Promise<number> {
    this.handled.add(idOf(item));
    if (!triggerWebhooks) return Promise.resolve(0);
    const base = { sender: item.address, recipient: OWN_NUMBER, simNumber: SIM_NUMBER, phoneNumber: item.address };
    if (item.kind === "sms") {
      return this.hooks.emit("sms:received", { messageId: smsId(item), ...base, message: item.body, receivedAt: stamp(item.date) });
    }
    return this.hooks.emit("mms:downloaded", {
      messageId: item.mmsId,
      ...base,
      body: null,
      subject: item.subject,
      attachments: item.attachments,
      receivedAt: stamp(item.date),
    });
  }
}

/** The app's id of an SMS: the 32-bit hash of sender, date, SIM and text, printed as unsigned hex. */
function smsId(item: { address: string; date: number; body: string }): string {
  return parseInt(sha256Hex(`${item.address}\n${item.body}\n${stamp(item.date)}`).slice(0, 8), 16).toString(16);
}

function idOf(item: InboxItem): string {
  return item.kind === "sms" ? `text:${smsId(item)}` : `mms:${item.mmsId}`;
}

/**
 * The app's ping: while it runs, every interval it had at start (a new one from the server applies
 * only after a restart), it posts system:ping with its HealthService checks.
 */
export class HealthPinger extends PhonePart {
  constructor(
    parts: PhoneParts,
    private readonly hooks: WebhookPoster,
    private readonly queue: MessageQueue,
  ) {
    super(parts);
  }

  start(): void {
    const seconds = this.opts.pingSeconds;
    if (seconds === null) return;
    if (!versionAtLeast(this.opts.appVersion, PING_SINCE)) {
      this.log(`no pings: the app pings from ${PING_SINCE}`);
      return;
    }
    this.life.track(
      (async () => {
        do {
          // The app's PingEvent has two receivers: the gateway pulls messages, the webhooks post system:ping.
          this.queue.pull();
          const health = this.health();
          const posted = await this.hooks.emit("system:ping", { health });
          if (posted > 0) this.log(`ping posted (${health.status})`);
        } while (await this.life.sleep(seconds * 1000));
      })(),
    );
  }

  /** The app's HealthResponse: version, build, overall status and each check by name. */
  health(): { version: string; releaseId: number; status: string; checks: Record<string, Json> } {
    const check = (status: string, observedValue: number, observedUnit: string, description: string) => ({
      status,
      observedValue,
      observedUnit,
      description,
    });
    const { failed, processed } = this.queue.lastHour();
    const checks: Record<string, Json> = {
      "messages:failed": check(
        failed > 0 && processed === 0 ? "fail" : failed > 0 ? "warn" : "pass",
        failed,
        "messages",
        "Failed messages for last hour",
      ),
    };
    if (versionAtLeast(this.opts.appVersion, HEALTH_DETAILS_SINCE)) {
      const { connected, battery, charging } = this.opts;
      checks["connection:status"] = check(connected ? "pass" : "fail", connected ? 1 : 0, "boolean", "Internet connection status");
      // Transport flags: 2 cellular; cellular network index: 0 none, 4 4G.
      checks["connection:transport"] = check(connected ? "pass" : "fail", connected ? 2 : 0, "flags", "Network transport type");
      checks["connection:cellular"] = check("pass", connected ? 4 : 0, "index", "Cellular network type");
      checks["battery:level"] = check(
        battery < 10 ? "fail" : battery < 25 ? "warn" : "pass",
        battery,
        "percent",
        "Battery level in percent",
      );
      // Flags: 1 charging, 2 on AC.
      checks["battery:charging"] = check("pass", charging ? 3 : 0, "flags", "Is the phone charging?");
    }
    const statuses = Object.values(checks).map((c) => c.status);
    const status = statuses.includes("fail") ? "fail" : statuses.includes("warn") ? "warn" : "pass";
    const [major = 0, minor = 0, patch = 0] = this.opts.appVersion.split(".").map((p) => Number.parseInt(p, 10) || 0);
    return { version: this.opts.appVersion, releaseId: major * 10_000 + minor * 100 + patch, status, checks };
  }
}
