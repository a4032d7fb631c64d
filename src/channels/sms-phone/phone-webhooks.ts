// The webhooks a phone posts (sms:received, sms:sent, sms:delivered, sms:failed): which ones it
// should call, and each delivery checked (signature, fresh timestamp, an event id seen once) and
// applied: inbound messages into threads, statuses as the phone's reports.
import type { Database } from "bun:sqlite";
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../clock";
import { AppError } from "../../http/errors";
import { toE164 } from "../../lib/phone";
import type { DeviceRepository, DeviceRow } from "../../modules/devices/repository";
import type { EventService } from "../../modules/events/service";
import { recordInbound } from "../../modules/threads/inbound";
import type { ThreadRepository } from "../../modules/threads/repository";
import { PHONE_WEBHOOK_EVENTS, PHONE_WEBHOOK_PATH, unauthorized, type PatchItem } from "./protocol";
import type { PhoneRepository } from "./repository";

/** How far a webhook's X-Timestamp may be from our clock. */
const WEBHOOK_SKEW_S = 300;

export interface PhoneWebhookDeps {
  sqlite: Database;
  repo: PhoneRepository;
  clock: Clock;
  devices: DeviceRepository;
  threads: ThreadRepository;
  events: EventService;
  /** Records contact with the phone. */
  markAlive(device: DeviceRow, headers: Headers): void;
  /** Applies one phone report to its notification (shared with PATCH /message). */
  applyState(device: DeviceRow, phoneId: string, rawState: string, item: PatchItem, via: string): void;
}

export function createPhoneWebhooks(deps: PhoneWebhookDeps) {
  const { sqlite, repo, clock, devices, threads, events, markAlive, applyState } = deps;

  /** The webhooks the phone should call; remembers the address served, to notice when it changes. */
  function webhooks(device: DeviceRow, baseUrl: string) {
    if ((device.config as { webhookBase?: string } | null)?.webhookBase !== baseUrl) {
      devices.update(device.id, { config: { ...(device.config ?? {}), webhookBase: baseUrl } });
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
  function receiveWebhook(raw: string, headers: Headers): { duplicate: boolean } {
    let body: { id?: unknown; event?: unknown; deviceId?: unknown; payload?: Record<string, unknown> };
    try {
      body = JSON.parse(raw);
    } catch {
      throw new AppError("invalid_json", "Webhook body is not JSON");
    }
    const deviceId = typeof body.deviceId === "string" ? repo.deviceIdByAppId(body.deviceId) : null;
    const device = deviceId !== null ? devices.byId(deviceId) : null;
    if (!device?.webhookKey) throw unauthorized("Unknown device or no signing key provisioned");
    const timestamp = headers.get("x-timestamp") ?? "";
    const signature = headers.get("x-signature") ?? "";
    const expected = createHmac("sha256", device.webhookKey).update(raw + timestamp).digest("hex");
    if (signature.length !== expected.length || !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))) {
      throw unauthorized("Bad X-Signature");
    }
    const seconds = Number(timestamp);
    if (!/^\d+$/.test(timestamp) || Math.abs(clock.now() / 1000 - seconds) > WEBHOOK_SKEW_S) {
      throw new AppError("validation_error", "X-Timestamp is missing or too far from the server's clock (replay refused)", { field: "X-Timestamp", location: "headers" });
    }
    if (typeof body.id !== "string" || typeof body.event !== "string" || !body.payload || typeof body.payload !== "object") {
      throw new AppError("validation_error", "Webhook needs id, event and payload", { field: "body", location: "body" });
    }
    const now = clock.now();
    markAlive(device, headers);
    return sqlite.transaction(() => {
      if (!repo.firstDelivery(body.id as string, device.id, body.event as string, now)) return { duplicate: true };
      handleEvent(device, body.event as string, body.payload!);
      return { duplicate: false };
    })();
  }

  function handleEvent(device: DeviceRow, event: string, p: Record<string, unknown>) {
    const text = (k: string) => (typeof p[k] === "string" ? (p[k] as string) : null);
    const messageId = text("messageId");
    switch (event) {
      case "sms:received": {
        const sender = text("sender") ?? text("phoneNumber");
        const body = text("message");
        if (!sender || body === null) return;
        const from = toE164(sender) ?? sender;
        const at = Date.parse(text("receivedAt") ?? "") || clock.now();
        recordInbound(threads, events, { workspaceId: device.workspaceId, channel: "sms", deviceId: device.id, from, body, externalId: messageId, at });
        return;
      }
      case "sms:sent":
      case "sms:delivered":
      case "sms:failed":
      case "sms:cancelled": {
        if (!messageId) return;
        const name = { "sms:sent": "Sent", "sms:delivered": "Delivered", "sms:failed": "Failed", "sms:cancelled": "Cancelled" }[event];
        const at = text("sentAt") ?? text("deliveredAt") ?? text("failedAt") ?? text("cancelledAt");
        const item: PatchItem = {
          id: messageId,
          state: name,
          recipients: [{ state: name, error: text("reason") }],
          states: at ? { [name]: at } : {},
        };
        applyState(device, messageId, name, item, `phone webhook ${event}`);
        return;
      }
    }
  }

  return { webhooks, receiveWebhook };
}
