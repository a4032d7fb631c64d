// SMSGate's webhooks, delivered by Pigeon's own outbox: a webhook registered through the SMSGate
// API is a webhook subscription in the "smsgate" format, subscribed to the Pigeon event behind its
// SMSGate event. Each delivery goes out as the app sends its own: the body
// `{id, webhookId, event, deviceId, payload}`, `X-Timestamp` (unix seconds) and `X-Signature`, the
// hex HMAC-SHA256 of the body followed by the timestamp, keyed with the workspace's signing key.
import { createHmac } from "node:crypto";
import type { Clock } from "../../clock";
import { AppError } from "../../core/errors";
import type { SecretBox } from "../../lib/secrets";
import { randomBase62, nanoid } from "../../lib/tokens";
import type { DueDelivery } from "../webhooks/model";
import type { WebhookService } from "../webhooks/service";
import type { DeviceService } from "../devices/service";
import type { SmsGateRepository } from "./repository";

/** The SMSGate events Pigeon delivers, and the Pigeon event each comes from. */
export const SMSGATE_WEBHOOK_EVENTS = {
  "sms:received": "message.received",
  "sms:data-received": "message.received",
  "mms:received": "message.received",
  "sms:sent": "notification.sent",
  "sms:delivered": "notification.delivered",
  "sms:failed": "notification.failed",
  "sms:cancelled": "notification.cancelled",
  "mms:downloaded": "message.mms_downloaded",
  "system:ping": "device.ping",
} as const;
export type SmsGateWebhookEvent = keyof typeof SMSGATE_WEBHOOK_EVENTS;

/** The app's signature: hex HMAC-SHA256 of the raw body followed by the X-Timestamp value. */
export function signLikeTheApp(key: string, body: string, timestamp: number): string {
  return createHmac("sha256", key)
    .update(body + String(timestamp))
    .digest("hex");
}

// biome-ignore lint/suspicious/noExplicitAny: an event's data as the catalogue built it, read field by field
type Data = Record<string, any>;

/** The payload the app would post for this event, or null when the event is not of this kind. */
/** `messageId`: the SMSGate id of the message the event's notification carries, if it has one. */
function payloadOf(event: SmsGateWebhookEvent, data: Data, messageId: string | null): Data | null {
  if (event === "sms:received" || event === "sms:data-received" || event === "mms:received") {
    // One received message is one of the three: an MMS, a data SMS, or a text SMS.
    const kind = data.mms ? "mms:received" : data.data_message ? "sms:data-received" : "sms:received";
    if (data.channel !== "sms" || kind !== event) return null;
    const common = {
      messageId: String(data.phone_message_id ?? data.message_id),
      sender: data.from,
      recipient: null,
      simNumber: data.sim_number ?? null,
      phoneNumber: data.from,
    };
    if (event === "sms:received") return { ...common, message: data.body, receivedAt: data.received_at };
    // The app's SmsEventPayload.SmsDataReceived: the bytes in base64, no port (it receives on one).
    if (event === "sms:data-received") return { ...common, data: data.data_message.data, receivedAt: data.received_at };
    return {
      ...common,
      transactionId: data.mms.transaction_id,
      subject: data.mms.subject ?? null,
      size: data.mms.size ?? 0,
      contentClass: null,
      attachments: data.mms.attachments ?? [],
      receivedAt: data.received_at,
    };
  }
  if (event === "system:ping") return { health: data.health ?? null };
  if (event === "mms:downloaded") {
    return {
      messageId: String(data.message_id),
      sender: data.from,
      recipient: null,
      simNumber: data.sim_number ?? null,
      phoneNumber: data.from,
      body: data.body ?? null,
      subject: data.subject ?? null,
      // Every part the phone sent, kept or not, as the app lists them; the bytes (the app's `data`)
      // are not carried in a webhook: data is null, and Pigeon's API serves the kept ones.
      attachments: [...(data.attachments ?? []), ...(data.attachments_dropped ?? [])].map((a: Data) => ({
        partId: a.part_id ?? 0,
        contentType: a.content_type,
        name: a.name ?? null,
        size: a.size ?? null,
        data: null,
      })),
      receivedAt: data.received_at,
    };
  }
  if (data.delivery_type !== "sms") return null;
  const common = {
    messageId: messageId ?? String(data.notification_id),
    sender: null,
    recipient: data.recipient,
    simNumber: data.sim_number ?? null,
    phoneNumber: data.recipient,
  };
  switch (event) {
    case "sms:sent":
      return { ...common, partsCount: data.segments ?? 1, sentAt: data.sent_at };
    case "sms:delivered":
      return { ...common, deliveredAt: data.delivered_at };
    case "sms:failed":
      return { ...common, failedAt: data.failed_at, reason: data.error_reason ?? data.error_code ?? "failed" };
    case "sms:cancelled":
      return { ...common, cancelledAt: data.cancelled_at };
  }
}

export function createSmsGateWebhooks(deps: {
  clock: Clock;
  secrets: SecretBox;
  webhooks: WebhookService;
  repo: SmsGateRepository;
  devices: Pick<DeviceService, "find">;
}) {
  const { clock, secrets, webhooks, repo } = deps;

  /** The workspace's signing key, made on first need (the owner reads it on the CLI or sets it). */
  async function signingKey(workspaceId: number): Promise<string> {
    const sealed = await repo.signingKey(workspaceId);
    if (sealed) return secrets.open(sealed);
    const key = randomBase62(32);
    await repo.setSigningKey(workspaceId, secrets.seal(key), clock.now());
    return key;
  }

  const present = (w: { externalId: string; url: string; event: string; deviceId: number | null }) => ({
    id: w.externalId,
    url: w.url,
    event: w.event,
    deviceId: w.deviceId === null ? null : String(w.deviceId),
  });

  /** Shapes and signs one delivery of an SMSGate webhook (registered with the webhook service). */
  async function format(d: DueDelivery, timestamp: number) {
    const event = d.smsgateEvent as SmsGateWebhookEvent;
    const data = d.data as Data;
    if (d.smsgateDeviceId !== null && data.device_id !== d.smsgateDeviceId) return null;
    const messageId = typeof data.notification_id === "number" ? await repo.messageIdOf(data.notification_id) : null;
    const payload = payloadOf(event, data, messageId);
    if (!payload) return null;
    const body = JSON.stringify({
      id: d.eventId,
      webhookId: d.externalId,
      event,
      deviceId: data.device_id == null ? "" : String(data.device_id),
      payload,
    });
    return {
      body,
      headers: { "x-timestamp": String(timestamp), "x-signature": signLikeTheApp(await signingKey(d.workspaceId), body, timestamp) },
    };
  }
  webhooks.addFormat("smsgate", format);

  return {
    signingKey,
    async setSigningKey(workspaceId: number, key: string): Promise<void> {
      await repo.setSigningKey(workspaceId, secrets.seal(key), clock.now());
    },

    list: async (workspaceId: number) => (await repo.webhooks(workspaceId)).map(present),

    /** POST /webhooks: a new webhook, or the one with the same id replaced (as SMSGate does). */
    async register(workspaceId: number, body: { id?: string | null; url: string; event: string; deviceId?: string | null }) {
      if (!(body.event in SMSGATE_WEBHOOK_EVENTS)) {
        throw new AppError(
          "option_not_supported",
          `The event ${body.event} is not delivered by Pigeon; it delivers ${Object.keys(SMSGATE_WEBHOOK_EVENTS).join(", ")}`,
          { field: "event" },
        );
      }
      let deviceId: number | null = null;
      if (body.deviceId) {
        const device = /^\d+$/.test(body.deviceId) ? await deps.devices.find(workspaceId, Number(body.deviceId)) : null;
        if (!device) throw new AppError("not_found", `device ${body.deviceId} not found`, { field: "deviceId" });
        deviceId = device.id;
      }
      const id = body.id?.trim() || nanoid(21);
      const existing = await repo.webhook(workspaceId, id);
      const created = await webhooks.create(workspaceId, {
        url: body.url,
        events: [SMSGATE_WEBHOOK_EVENTS[body.event as SmsGateWebhookEvent]],
        description: `SMSGate ${body.event}`,
        format: "smsgate",
        // A replacement takes the id once the old one is gone (the id is unique among live webhooks).
        externalId: existing ? null : id,
        smsgateEvent: body.event,
        smsgateDeviceId: deviceId,
      });
      if (existing) {
        await webhooks.remove(workspaceId, existing.subscriptionId);
        await repo.renameWebhook(created.webhook_id, id);
      }
      return present({ externalId: id, url: body.url, event: body.event, deviceId });
    },

    async remove(workspaceId: number, id: string) {
      const row = await repo.webhook(workspaceId, id);
      if (!row) throw new AppError("not_found", `webhook ${id} not found`);
      await webhooks.remove(workspaceId, row.subscriptionId);
    },
  };
}

export type SmsGateWebhooks = ReturnType<typeof createSmsGateWebhooks>;
