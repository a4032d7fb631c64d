// The webhooks a phone posts (sms:received, sms:data-received, sms:sent, sms:delivered, sms:failed,
// sms:cancelled, mms:received, mms:downloaded, system:ping, app:started): which ones it should
// call, and each delivery checked (signature, fresh timestamp, an event id seen once) and applied:
// inbound messages into threads, statuses as the phone's reports, its health and SIM cards onto the
// device. An event Pigeon does not act on is answered 204 like the others (the app retries
// anything else) and logged.
import type { Storage } from "../../db/storage";
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../clock";
import type { MmsMeta } from "../../modules/threads/schema";
import { AppError } from "../../core/errors";
import { toE164 } from "../../lib/phone";
import type { DeviceStore } from "../../modules/devices/ports";
import type { DeviceRow } from "../../modules/devices/model";
import type { EventService } from "../../modules/events/service";
import type { LogFn } from "../../lib/log";
import { recordInbound, type Inbound, type InboundHook } from "../../modules/threads/inbound";
import { attachmentPath } from "../../modules/threads/attachments";
import type { ThreadStore } from "../../modules/threads/ports";
import { readPing, unhealthyReasons } from "./health";
import { decodeBase64, encodeBase64 } from "../../lib/data-sms";
import { APP_DATA_PORT, PHONE_WEBHOOK_EVENTS, PHONE_WEBHOOK_PATH, unauthorized, type PatchItem } from "./protocol";
import type { PhoneRepository } from "./repository";

/** How far a webhook's X-Timestamp may be from our clock. */
const WEBHOOK_SKEW_S = 300;

/** How far apart an MMS's notification and its downloaded content may be dated and still match. */
const MMS_MATCH_MS = 60 * 60 * 1000;

/** What an MMS shows as its text when it has no body or subject. */
const MMS_PLACEHOLDER = "[MMS]";

export interface PhoneWebhookDeps {
  storage: Storage;
  repo: PhoneRepository;
  clock: Clock;
  devices: DeviceStore;
  threads: ThreadStore;
  events: EventService;
  /** What an inbound message goes through before it is announced (the opt-out keywords). */
  onInbound?: InboundHook;
  /** Records contact with the phone. */
  markAlive(device: DeviceRow, headers: Headers): Promise<void>;
  /** Applies one phone report to its notification (shared with PATCH /message). */
  applyState(device: DeviceRow, phoneId: string, rawState: string, item: PatchItem, via: string): Promise<void>;
  /** Where an event Pigeon does not act on is noted. */
  log?: LogFn;
}

/**
 * A SIM card as the app reports it at registration: GatewayService.toDTO redacts the number, the
 * carrier and the ICCID to their last four characters (shorter ones to "****"), and Gson leaves
 * nulls out. app:started carries them unredacted (OrchestratorService), so they are redacted here
 * the same way before they are kept: what is stored matches what registration stores, and a
 * returning phone is still recognised by it.
 */
export function redactedSimCards(raw: unknown): Record<string, string | number>[] | null {
  if (!Array.isArray(raw)) return null;
  const redact = (v: unknown) => (typeof v !== "string" ? null : v.length > 4 ? "*".repeat(v.length - 4) + v.slice(-4) : "****");
  const int = (v: unknown) => (typeof v === "number" && Number.isInteger(v) ? v : null);
  const cards: Record<string, string | number>[] = [];
  for (const item of raw) {
    if (!item || typeof item !== "object") continue;
    const c = item as Record<string, unknown>;
    const card: Record<string, string | number | null> = {
      slotIndex: int(c.slotIndex),
      simNumber: int(c.simNumber),
      phoneNumber: redact(c.phoneNumber),
      carrierName: redact(c.carrierName),
      iccid: redact(c.iccid),
    };
    if (card.simNumber === null) continue;
    cards.push(Object.fromEntries(Object.entries(card).filter(([, v]) => v !== null)) as Record<string, string | number>);
  }
  return cards;
}

/** An MMS in Pigeon's message.received event. */
function mmsEventData(meta: MmsMeta) {
  return {
    transaction_id: meta.transactionId,
    subject: meta.subject,
    size: meta.size,
    attachments: (meta.attachments ?? []).map((a) => ({ content_type: a.contentType, name: a.name, size: a.size })),
    ...(meta.dropped?.length
      ? {
          attachments_dropped: meta.dropped.map((d) => ({
            part_id: d.partId,
            content_type: d.contentType,
            name: d.name,
            reason: d.reason,
          })),
        }
      : {}),
  };
}

export function createPhoneWebhooks(deps: PhoneWebhookDeps) {
  const { storage, repo, clock, devices, threads, events, markAlive, applyState } = deps;

  /** The webhooks the phone should call; remembers the address served, to notice when it changes. */
  async function webhooks(device: DeviceRow, baseUrl: string) {
    if ((device.config as { webhookBase?: string } | null)?.webhookBase !== baseUrl) {
      // Read again inside the unit: the config also holds the app settings a user may have just set.
      await storage.transaction(async () => {
        const fresh = (await devices.byId(device.id)) ?? device;
        await devices.update(device.id, { config: { ...(fresh.config ?? {}), webhookBase: baseUrl } });
      });
    }
    return PHONE_WEBHOOK_EVENTS.map((event) => ({
      id: `pigeon-${event.replace(":", "-")}`,
      deviceId: null,
      url: baseUrl + PHONE_WEBHOOK_PATH,
      event,
    }));
  }

  /**
   * A webhook the phone posted: X-Signature must be hex HMAC-SHA256 of the raw body followed by
   * X-Timestamp, keyed with the device's provisioned key; the timestamp must be recent; an event id
   * seen before changes nothing.
   */
  async function receiveWebhook(raw: string, headers: Headers): Promise<{ duplicate: boolean }> {
    let body: { id?: unknown; event?: unknown; deviceId?: unknown; payload?: Record<string, unknown> };
    try {
      body = JSON.parse(raw);
    } catch {
      throw new AppError("invalid_json", "Webhook body is not JSON");
    }
    const deviceId = typeof body.deviceId === "string" ? await repo.deviceIdByAppId(body.deviceId) : null;
    const device = deviceId !== null ? await devices.byId(deviceId) : null;
    if (!device?.webhookKey) throw unauthorized("Unknown device or no signing key provisioned");
    const timestamp = headers.get("x-timestamp") ?? "";
    const signature = headers.get("x-signature") ?? "";
    const expected = createHmac("sha256", device.webhookKey)
      .update(raw + timestamp)
      .digest("hex");
    if (signature.length !== expected.length || !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))) {
      throw unauthorized("Bad X-Signature");
    }
    const seconds = Number(timestamp);
    if (!/^\d+$/.test(timestamp) || Math.abs(clock.now() / 1000 - seconds) > WEBHOOK_SKEW_S) {
      throw new AppError("validation_error", "X-Timestamp is missing or too far from the server's clock (replay refused)", {
        field: "X-Timestamp",
        location: "headers",
      });
    }
    if (typeof body.id !== "string" || typeof body.event !== "string" || !body.payload || typeof body.payload !== "object") {
      throw new AppError("validation_error", "Webhook needs id, event and payload", { field: "body", location: "body" });
    }
    const now = clock.now();
    await markAlive(device, headers);
    const payload = body.payload;
    return storage.transaction(async () => {
      if (!(await repo.firstDelivery(body.id as string, device.id, body.event as string, now))) return { duplicate: true };
      await handleEvent(device, body.event as string, payload);
      return { duplicate: false };
    });
  }

  async function handleEvent(device: DeviceRow, event: string, p: Record<string, unknown>): Promise<void> {
    const messageId = text(p, "messageId");
    switch (event) {
      case "sms:received": {
        const from = senderOf(p);
        const body = text(p, "message");
        if (!from || body === null) return;
        await received(device, {
          from,
          body,
          externalId: messageId,
          at: receivedAt(p),
          simNumber: typeof p.simNumber === "number" && Number.isInteger(p.simNumber) ? p.simNumber : null,
          sameContentIsDuplicate: true,
        });
        return;
      }
      case "sms:data-received":
        return dataReceived(device, p);
      case "mms:received":
        return mmsReceived(device, p);
      case "mms:downloaded":
        return mmsDownloaded(device, p);
      case "system:ping":
        return ping(device, p);
      case "app:started":
        return appStarted(device, p);
      case "sms:sent":
      case "sms:delivered":
      case "sms:failed":
      case "sms:cancelled": {
        if (!messageId) return;
        const name = { "sms:sent": "Sent", "sms:delivered": "Delivered", "sms:failed": "Failed", "sms:cancelled": "Cancelled" }[event];
        const at = text(p, "sentAt") ?? text(p, "deliveredAt") ?? text(p, "failedAt") ?? text(p, "cancelledAt");
        const item: PatchItem = {
          id: messageId,
          state: name,
          recipients: [{ state: name, error: text(p, "reason") }],
          states: at ? { [name]: at } : {},
        };
        await applyState(device, messageId, name, item, `phone webhook ${event}`);
        return;
      }
      default:
        // Accepted (the app would retry anything else) and noted: events of newer apps that Pigeon
        // does not act on.
        deps.log?.(`phone webhook ${event} from device ${device.id} accepted but not acted on`, undefined, {
          device_id: device.id,
          event,
        });
    }
  }

  /**
   * app:started (app 1.66.0 and later): the app started, with the SIM cards it has now. They
   * replace the device's SIM list, as registration and PATCH /device do; a payload without a list
   * changes nothing.
   */
  async function appStarted(device: DeviceRow, p: Record<string, unknown>): Promise<void> {
    const cards = redactedSimCards(p.simCards);
    if (cards === null) return;
    await repo.setSimCards(device.id, JSON.stringify(cards), clock.now());
  }

  const text = (p: Record<string, unknown>, k: string) => (typeof p[k] === "string" ? (p[k] as string) : null);
  const count = (p: Record<string, unknown>, k: string) =>
    typeof p[k] === "number" && Number.isFinite(p[k]) ? Math.round(p[k] as number) : null;
  const senderOf = (p: Record<string, unknown>) => {
    const sender = text(p, "sender") ?? text(p, "phoneNumber");
    return sender ? (toE164(sender) ?? sender) : null;
  };
  /** When the phone says the message came, else now. */
  const receivedAt = (p: Record<string, unknown>) => Date.parse(text(p, "receivedAt") ?? "") || clock.now();
  /** A message the phone received, into the sender's SMS thread and announced. */
  const received = (device: DeviceRow, m: Omit<Inbound, "workspaceId" | "channel" | "deviceId">) =>
    recordInbound(threads, events, { workspaceId: device.workspaceId, channel: "sms", deviceId: device.id, ...m }, deps.onInbound);

  /**
   * sms:data-received: a data SMS to the app's port (SmsEventPayload.SmsDataReceived: the sender,
   * `data` in base64, when it came). It lands in the sender's thread with an empty body and the
   * bytes and port kept beside it; it is announced as message.received with `data_message`, and
   * no keyword or text rule reads it. The phone's message id makes a re-post change nothing.
   */
  async function dataReceived(device: DeviceRow, p: Record<string, unknown>): Promise<void> {
    const from = senderOf(p);
    const raw = text(p, "data");
    const bytes = raw === null ? null : decodeBase64(raw);
    if (!from || bytes === null) return;
    const dataMessage = { data: encodeBase64(bytes), port: APP_DATA_PORT };
    const messageId = text(p, "messageId");
    await received(device, {
      from,
      body: "",
      externalId: messageId === null ? null : `data:${messageId}`,
      meta: { type: "data", ...dataMessage },
      dataMessage,
      at: receivedAt(p),
      simNumber: count(p, "simNumber"),
      extra: { data_message: dataMessage },
    });
  }

  /**
   * mms:received: the MMS notification's headers (transaction id, subject, size); its content is
   * still on the carrier's server. It lands in the sender's thread with the subject (or "[MMS]")
   * as its text; the phone's message id (the MMS message id, else the transaction id) makes a
   * re-post change nothing.
   */
  async function mmsReceived(device: DeviceRow, p: Record<string, unknown>): Promise<void> {
    const from = senderOf(p);
    const transactionId = text(p, "transactionId");
    const externalId = text(p, "messageId") ?? transactionId;
    if (!from || !externalId) return;
    const subject = text(p, "subject");
    const meta: MmsMeta = {
      type: "mms",
      transactionId,
      subject,
      size: count(p, "size"),
      contentClass: text(p, "contentClass"),
      downloadId: null,
      attachments: null,
    };
    await received(device, {
      from,
      body: subject || MMS_PLACEHOLDER,
      externalId: `mms:${externalId}`,
      meta,
      at: receivedAt(p),
      extra: { mms: mmsEventData(meta) },
    });
  }

  /**
   * mms:downloaded: the MMS's content (text and attachments; the app's payload carries no
   * transaction id). It completes the header-only MMS from the same sender nearest in time
   * (within an hour), or, when none came (an export, or headers lost), lands as a new message.
   * Each part's bytes (base64) are checked alone and kept with the message within the caps; a part
   * refused or over a cap is named with its reason, and the text is kept whatever its parts were.
   */
  async function mmsDownloaded(device: DeviceRow, p: Record<string, unknown>): Promise<void> {
    const from = senderOf(p);
    const downloadId = text(p, "messageId");
    if (!from || !downloadId) return;
    const at = receivedAt(p);
    const parts = (Array.isArray(p.attachments) ? p.attachments : []).flatMap((a) => {
      if (!a || typeof a !== "object") return [];
      const part = a as Record<string, unknown>;
      const contentType = text(part, "contentType");
      return contentType
        ? [{ partId: count(part, "partId"), contentType, name: text(part, "name"), size: count(part, "size"), data: text(part, "data") }]
        : [];
    });
    const attachments = parts.map(({ data: _, ...meta }) => meta);
    const subject = text(p, "subject");
    const body = text(p, "body") || subject || MMS_PLACEHOLDER;
    const thread = await threads.find(device.workspaceId, "sms", 0, from);
    const match = thread ? await threads.mmsToComplete(thread.id, downloadId, at, MMS_MATCH_MS) : null;
    if (match?.done) return;
    const checked = await threads.checkAttachments(device.workspaceId, parts);
    const dropped = checked.dropped;
    let stored: { threadId: number; messageId: number } | null;
    if (match) {
      await threads.completeMms(match.id, body, {
        ...match.meta,
        subject: match.meta.subject ?? subject,
        downloadId,
        attachments,
        dropped,
      });
      stored = { threadId: thread!.id, messageId: match.id };
    } else {
      const meta: MmsMeta = { type: "mms", transactionId: null, subject, size: null, contentClass: null, downloadId, attachments, dropped };
      stored = await received(device, {
        from,
        body,
        externalId: `mms-content:${downloadId}`,
        meta,
        at,
        extra: { mms: mmsEventData(meta) },
      });
      if (!stored) return;
    }
    const kept = await threads.keepAttachments(stored.messageId, checked);
    // Announced once per download (a re-post of a completed one stops above), for the
    // subscribers of the app's own event, whichever way the content landed.
    await events.emitIfWanted(device.workspaceId, "message.mms_downloaded", {
      device_id: device.id,
      from,
      message_id: downloadId,
      thread_id: stored.threadId,
      thread_message_id: stored.messageId,
      body: text(p, "body"),
      subject,
      attachments: kept.map((a) => ({
        attachment_id: a.id,
        part_id: a.partId,
        content_type: a.contentType,
        name: a.name,
        size: a.size,
        url: attachmentPath(stored.threadId, stored.messageId, a.id),
      })),
      attachments_dropped: dropped.map((d) => ({
        part_id: d.partId,
        content_type: d.contentType,
        name: d.name,
        size: d.size,
        reason: d.reason,
      })),
      received_at: new Date(at).toISOString(),
      sim_number: count(p, "simNumber"),
    });
  }

  /**
   * system:ping: the app's health checks, kept on the device. Falling unhealthy (battery under
   * 15 % off the charger, or no connection) is announced once as device.unhealthy; the episode
   * ends, announced as device.healthy, at the first ping with neither. Every ping is also
   * device.ping, when someone subscribed to it.
   */
  async function ping(device: DeviceRow, p: Record<string, unknown>): Promise<void> {
    const health = readPing(p, clock.now());
    if (!health) return;
    // Every report, as the app sent it, for those who subscribed to the app's system:ping.
    await events.emitIfWanted(device.workspaceId, "device.ping", {
      device_id: device.id,
      name: device.name,
      kind: device.kind,
      health: p.health,
    });
    const reasons = unhealthyReasons(health);
    const was = device.unhealthyReasons;
    const data = {
      device_id: device.id,
      name: device.name,
      kind: device.kind,
      battery_level: health.batteryLevel,
      charging: health.charging,
      connected: health.connected,
    };
    if (reasons.length > 0 && !was) {
      await events.emit(device.workspaceId, "device.unhealthy", { ...data, reasons });
    } else if (reasons.length === 0 && was) {
      await events.emit(device.workspaceId, "device.healthy", { ...data, previous_reasons: was });
    }
    // While the episode lasts its reasons follow the latest ping, without a new event.
    await devices.update(device.id, { health, unhealthyReasons: reasons.length > 0 ? reasons : null });
  }

  return { webhooks, receiveWebhook };
}
