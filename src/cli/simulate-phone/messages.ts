// The phone's messages, as the app's GatewayService and MessagesService handle them: pulled from
// GET /message into the phone's own queue (Pending, cancellable there), sent one at a time with the
// configured gap (Processed when handed to the radio, then Sent or Failed), cancelled while still
// Pending by MessageCancelled or a Cancelling item, and every state change reported by PATCH in order.
import { DATA_SMS_MAX_OCTETS } from "../../lib/data-sms";
import { countSegments } from "../../lib/segments";
import { androidBase64Decode, appDecrypt } from "./decrypt";
import { PhonePart, type PhoneParts } from "./parts";
import { PERIOD_MS } from "./protocol";
import type { WebhookPoster } from "./webhooks";
import { finite, GENERIC_FAILURE, PRIORITY_EXPEDITED, record, stamp, text, type Json, type LocalMessage, type LocalState } from "./wire";

/** The app's Message.PRIORITY_MIN: what "the previous message" counts as before the first. */
const PRIORITY_MIN = -128;

export class MessageQueue extends PhonePart {
  private readonly messages = new Map<string, LocalMessage>();
  private readonly sendQueue: LocalMessage[] = [];
  private sending = false;
  private pulling = false;
  private pullAgain = false;

  constructor(
    parts: PhoneParts,
    private readonly hooks: WebhookPoster,
  ) {
    super(parts);
  }

  /**
   * What the app's messages:failed health check counts: messages taken up in the last hour that
   * failed, and those that were processed, sent or delivered.
   */
  lastHour(now = Date.now()): { failed: number; processed: number } {
    let failed = 0;
    let processed = 0;
    for (const m of this.messages.values()) {
      const at = Date.parse(m.states.Processed ?? "");
      if (Number.isNaN(at) || at < now - 3_600_000) continue;
      if (m.state === "Failed") failed++;
      else if (m.state !== "Cancelled") processed++;
    }
    return { failed, processed };
  }

  /** Pulls GET /message; calls that arrive while one runs are folded into one more pull after it. */
  pull(): void {
    if (this.life.stopped) return;
    if (this.pulling) {
      this.pullAgain = true;
      return;
    }
    this.pulling = true;
    this.life.track(
      (async () => {
        try {
          do {
            this.pullAgain = false;
            await this.pullOnce();
          } while (this.pullAgain && !this.life.stopped);
        } finally {
          this.pulling = false;
        }
      })(),
    );
  }

  private async pullOnce(): Promise<void> {
    const body = await this.client.getJson(`/message?order=${this.settings.order}`);
    if (body === undefined || this.life.stopped) return;
    if (!Array.isArray(body)) {
      this.log("GET /message did not answer an array");
      return;
    }
    // GatewayService.processMessage, item by item.
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
        // A known id only has its state sent again (SendStateWorker), so repeated pulls never send twice.
        if (known) this.report(known);
        else this.accept(id, message);
      } else if (state === "Cancelling") {
        // MessagesService.cancelMessage: one it never had is answered Cancelled; one still Pending in
        // its queue is cancelled; one already Cancelled, or taken up, is left as it is.
        if (!known) this.cancelUnknown(id, message);
        else if (known.state === "Pending") this.cancel(known);
      }
      // Any other state is not for the phone; the app ignores it too.
    }
  }

  private phoneNumbersOf(id: string, message: Json): string[] | null {
    const numbers = message.phoneNumbers;
    if (!Array.isArray(numbers) || numbers.length === 0 || !numbers.every((n) => typeof n === "string")) {
      this.log(`message ${id} has no phoneNumbers; skipped`);
      return null;
    }
    return numbers as string[];
  }

  /**
   * A new message joins the phone's own queue, Pending (the app reports nothing on download); the
   * send worker takes it up after holdMs. Until then a cancel drops it.
   */
  private accept(id: string, message: Json): void {
    const phoneNumbers = this.phoneNumbersOf(id, message);
    if (!phoneNumbers) return;
    // The app's Message.content: dataMessage, else textMessage, else the older message.
    const dataMessage = record(message.dataMessage);
    const encrypted = message.isEncrypted === true;
    const body = dataMessage ? null : (text(record(message.textMessage)?.text) ?? text(message.message));
    // An encrypted payload is ciphertext until it is sent; a plain one is read now.
    const data = dataMessage ? (encrypted ? sealedDataOf(dataMessage) : dataOf(dataMessage)) : null;
    const validUntil = Date.parse(text(message.validUntil) ?? "");
    const simNumber = finite(message.simNumber);
    const local: LocalMessage = {
      id,
      phoneNumbers,
      // A data message is a single binary PDU; text is split the way the radio splits it.
      partsCount: body === null ? 1 : countSegments(body).segments,
      data: data && "bytes" in data ? data : null,
      sealedData: data && "value" in data ? data : null,
      unsendable: dataMessage && data && "error" in data ? data.error : !dataMessage && body === null ? "Invalid message content" : null,
      withDeliveryReport: message.withDeliveryReport !== false,
      validUntil: Number.isNaN(validUntil) ? null : validUntil,
      simNumber: simNumber !== null && Number.isInteger(simNumber) ? simNumber : null,
      priority: finite(message.priority) ?? 0,
      text: body,
      encrypted,
      failedRecipients: new Map(),
      state: "Pending",
      error: null,
      states: {},
      reporting: Promise.resolve(),
    };
    this.messages.set(id, local);
    this.log(`message ${id} waiting in the phone's queue`);
    const queue = () => {
      if (local.state !== "Pending" || this.life.stopped) return;
      this.sendQueue.push(local);
      if (!this.sending) this.life.track(this.drainSendQueue());
    };
    if (this.opts.holdMs === 0) queue();
    else this.life.later(this.opts.holdMs, queue);
  }

  /**
   * Sends queued messages one at a time, as the app does: highest priority first (then in arrival
   * order), with the configured gap between them, except after an expedited message (priority 100
   * or more) that outranks the one before it, which the app sends without a pause.
   */
  private async drainSendQueue(): Promise<void> {
    this.sending = true;
    let previousPriority = PRIORITY_MIN;
    try {
      // The rest of this download joins the queue first: the app stores a whole download before
      // its send worker picks the highest priority.
      await Promise.resolve();
      while (this.sendQueue.length > 0 && !this.life.stopped) {
        const message = this.takeNext();
        // Re-checked as the app does before sending: cancelled while it waited in the queue.
        if (message.state !== "Pending") continue;
        // The limit holds every message but an expedited one that outranks the one before it.
        if (message.priority < PRIORITY_EXPEDITED || previousPriority >= message.priority) {
          if (!(await this.applyLimit())) return;
          if (message.state !== "Pending") continue;
        }
        // A message that was not sent needs no pause after it (the app's sendPendingMessages).
        if (!(await this.send(message))) continue;
        const expedited = message.priority >= PRIORITY_EXPEDITED && previousPriority < message.priority;
        previousPriority = message.priority;
        if (expedited) continue;
        if (this.sendQueue.length > 0 && !(await this.life.sleep(this.sendGap()))) return;
      }
    } finally {
      this.sending = false;
    }
  }

  /**
   * MessagesService.applyLimit: with the limit on, counts the messages taken up (Processed, and
   * not Failed or Cancelled since) over the period just past; at the limit it waits until the
   * period has passed since the last of them, plus a second, then goes on. False once stopped.
   */
  private async applyLimit(): Promise<boolean> {
    const limit = this.settings.limit;
    if (!limit) return true;
    const now = Date.now();
    let count = 0;
    let last = 0;
    for (const m of this.messages.values()) {
      const at = Date.parse(m.states.Processed ?? "");
      if (Number.isNaN(at) || at < now - PERIOD_MS[limit.period]) continue;
      if (m.state === "Pending" || m.state === "Failed" || m.state === "Cancelled") continue;
      count++;
      last = Math.max(last, at);
    }
    if (count < limit.value) return true;
    const waitMs = PERIOD_MS[limit.period] - (now - last) + 1000;
    this.log(`limit ${limit.value} ${limit.period} reached: the next message waits ${Math.ceil(waitMs / 1000)} s`);
    return this.life.sleep(waitMs);
  }

  /** The app's queue order: priority descending, then oldest first. */
  private takeNext(): LocalMessage {
    let best = 0;
    for (let i = 1; i < this.sendQueue.length; i++) if (this.sendQueue[i].priority > this.sendQueue[best].priority) best = i;
    return this.sendQueue.splice(best, 1)[0];
  }

  /** A random gap from the server's send interval, capped at delayMs so tests never wait seconds. */
  private sendGap(): number {
    if (!this.settings.sendInterval) return 0;
    const { min, max } = this.settings.sendInterval;
    return Math.min((min + Math.random() * (max - min)) * 1000, this.opts.delayMs);
  }

  /** Sends one message; whether it went out (a failure is not "sent"). */
  private async send(message: LocalMessage): Promise<boolean> {
    // The app checks validUntil itself when it takes the message from its queue.
    if (message.validUntil !== null && Date.now() > message.validUntil) {
      this.fail(message, "TTL expired");
      return false;
    }
    // The app looks the SIM up among the active subscriptions and fails the send when it is absent.
    if (message.simNumber !== null && (message.simNumber < 1 || message.simNumber > this.opts.sims)) {
      this.fail(message, `Can't send message: SIM ${message.simNumber} not found`);
      return false;
    }
    if (message.unsendable !== null) {
      this.fail(message, message.unsendable);
      return false;
    }
    // An encrypted data message's payload is decrypted and decoded before any recipient, as the
    // app's sendSMS does: either failing fails the whole message.
    if (message.sealedData !== null && message.data === null) {
      const opened = this.openData(message, message.sealedData);
      if (opened === null) return false;
      message.data = opened;
    }
    // The app decrypts the text before any recipient: a text it cannot read fails the whole message.
    let plain = message.text;
    if (message.encrypted && plain !== null) {
      try {
        plain = appDecrypt(this.settings.passphrase, plain);
      } catch (error) {
        this.fail(message, `Can't send message: ${(error as Error).message}`);
        return false;
      }
      message.partsCount = countSegments(plain).segments;
    }
    // Handed to the radio: Processed (MessagesService.sendSMS); the radio answers delayMs later.
    // From here a cancel no longer reaches it.
    this.transition(message, "Processed");
    if (!(await this.life.sleep(this.opts.delayMs))) return false;
    if (Math.random() < this.opts.failRate) {
      this.fail(message, GENERIC_FAILURE);
      return false;
    }
    // Then each number on its own: one that does not decrypt fails that recipient alone.
    const radio: { recipient: string; number: string }[] = [];
    for (const recipient of message.phoneNumbers) {
      let number = recipient;
      if (message.encrypted) {
        try {
          number = appDecrypt(this.settings.passphrase, recipient);
        } catch (error) {
          message.failedRecipients.set(recipient, `sendSMS: ${(error as Error).message}`);
          continue;
        }
      }
      // Android's sendDataMessage refuses no bytes at once, and fails the send of more than one
      // PDU carries (its PDU cannot be built): only an encrypted payload can reach the phone so.
      const bytes = message.data?.bytes.length;
      if (bytes === 0) {
        message.failedRecipients.set(recipient, "sendSMS: Invalid message data");
        continue;
      }
      if (bytes !== undefined && bytes > DATA_SMS_MAX_OCTETS) {
        message.failedRecipients.set(recipient, GENERIC_FAILURE);
        continue;
      }
      radio.push({ recipient, number });
    }
    if (radio.length === 0) {
      this.fail(message, [...message.failedRecipients.values()][0]);
      return false;
    }

    this.log(
      `message ${message.id} goes out on SIM ${message.simNumber ?? 1}${message.priority >= PRIORITY_EXPEDITED ? " (expedited)" : ""}`,
    );
    // What the radio is handed: the plain number and text, or a data SMS's bytes and port
    // (sendDataMessage), whatever the server saw.
    for (const r of radio) {
      const data = message.data;
      this.log(
        data
          ? `radio: data SMS ${message.id} to ${r.number} port ${data.port}: ${data.bytes.length} bytes ${Buffer.from(data.bytes).toString("hex")}`
          : `radio: to ${r.number}: ${JSON.stringify(plain ?? "")}`,
      );
    }
    for (const [recipient, error] of message.failedRecipients) {
      void this.hooks.emit("sms:failed", { ...this.hooks.outgoing(message, recipient), failedAt: stamp(), reason: error });
    }
    const sentAt = this.transition(message, "Sent");
    for (const { recipient } of radio) {
      void this.hooks.emit("sms:sent", { ...this.hooks.outgoing(message, recipient), partsCount: message.partsCount, sentAt });
    }
    // Without a delivery report the radio never says more, and the message stays Sent.
    if (!message.withDeliveryReport) return true;
    this.life.later(this.opts.delayMs, () => {
      const deliveredAt = this.transition(message, "Delivered");
      for (const { recipient } of radio) {
        void this.hooks.emit("sms:delivered", { ...this.hooks.outgoing(message, recipient), deliveredAt });
      }
    });
    return true;
  }

  /**
   * An encrypted payload, opened as the app opens it: decrypted with the passphrase (its plaintext
   * is base64), then decoded by Android's Base64.DEFAULT. Null, with the message failed in the
   * app's words, when either step throws.
   */
  private openData(message: LocalMessage, sealed: { value: string; port: number }): { bytes: Uint8Array; port: number } | null {
    let plain: string;
    try {
      plain = appDecrypt(this.settings.passphrase, sealed.value);
    } catch (error) {
      this.fail(message, `Can't send message: ${(error as Error).message}`);
      return null;
    }
    try {
      return { bytes: androidBase64Decode(plain), port: sealed.port };
    } catch {
      this.fail(message, `Can't send message: Invalid Base64 data for message ${message.id}`);
      return null;
    }
  }

  private fail(message: LocalMessage, reason: string): void {
    const failedAt = this.transition(message, "Failed", reason);
    for (const recipient of message.phoneNumbers) {
      void this.hooks.emit("sms:failed", { ...this.hooks.outgoing(message, recipient), failedAt, reason });
    }
  }

  /**
   * A MessageCancelled push (gateway/EventsReceiver → MessagesService.cancelMessage): only a message
   * still Pending in the phone's queue is cancelled; one it never had, or one taken up, is left.
   */
  cancelKnown(id: string): void {
    const message = this.messages.get(id);
    if (message?.state === "Pending") this.cancel(message);
  }

  private cancel(message: LocalMessage): void {
    const cancelledAt = this.transition(message, "Cancelled");
    for (const recipient of message.phoneNumbers) {
      void this.hooks.emit("sms:cancelled", { ...this.hooks.outgoing(message, recipient), cancelledAt });
    }
  }

  /**
   * The app answers a Cancelling message it never saw with Cancelled at once, keeping nothing
   * (GatewayService.processMessage sends the state itself).
   */
  private cancelUnknown(id: string, message: Json): void {
    const phoneNumbers = this.phoneNumbersOf(id, message);
    if (!phoneNumbers) return;
    const local: LocalMessage = {
      id,
      phoneNumbers,
      partsCount: 0,
      withDeliveryReport: false,
      validUntil: null,
      simNumber: null,
      priority: 0,
      data: null,
      sealedData: null,
      unsendable: null,
      text: null,
      encrypted: message.isEncrypted === true,
      failedRecipients: new Map(),
      state: "Cancelled",
      error: null,
      states: {},
      reporting: Promise.resolve(),
    };
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
        recipients: message.phoneNumbers.map((phoneNumber) => {
          const own = message.failedRecipients.get(phoneNumber);
          if (own !== undefined) return { phoneNumber, state: "Failed", error: own };
          return message.error === null
            ? { phoneNumber, state: message.state }
            : { phoneNumber, state: message.state, error: message.error };
        }),
        states: { ...message.states },
      },
    ]);
    message.reporting = message.reporting.then(() => this.client.patchMessage(message.id, message.state, body));
    this.life.track(message.reporting);
  }
}

/**
 * A dataMessage as the app reads it: base64 `data` (Android's Base64.DEFAULT) and a 16-bit `port`;
 * what the app cannot send fails the message with its reason.
 */
function dataOf(m: Json): { bytes: Uint8Array; port: number } | { error: string } {
  const data = text(m.data);
  const port = finite(m.port);
  if (data === null || port === null || !Number.isInteger(port) || port < 0 || port > 65535) return { error: "Invalid message content" };
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data.replace(/\s+/g, ""))) return { error: "Invalid Base64 data" };
  return { bytes: new Uint8Array(Buffer.from(data, "base64")), port };
}

/** An encrypted dataMessage: its ciphertext kept as pulled, and its port (which is not encrypted). */
function sealedDataOf(m: Json): { value: string; port: number } | { error: string } {
  const value = text(m.data);
  const port = finite(m.port);
  if (value === null || port === null || !Number.isInteger(port) || port < 0 || port > 65535) return { error: "Invalid message content" };
  return { value, port };
}
