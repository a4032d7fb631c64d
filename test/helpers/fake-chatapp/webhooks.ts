// The webhooks the platform posts: built from the store (inbound messages, statuses, template
// events), signed with the app secret as Meta signs them, and posted now, in order after an
// answer, or held for flush() in manual mode.
import { createHmac, randomBytes } from "node:crypto";
import { webhookError } from "./errors";
import type { Json, WebhookEnvelope } from "./openapi";
import type { Store } from "./store";
import type {
  DeliveryOptions,
  FakeChatAppOptions,
  FakePhoneNumber,
  InboundOptions,
  PreparedWebhook,
  StatusName,
  StatusOptions,
  TemplateStatusOptions,
} from "./types";
import { digits, newWamid, unixSeconds } from "./wire";

/** Webhook events that leave the stored status alone or map to another one. */
const STATUS_AFTER_EVENT: Record<string, string | null> = { FLAGGED: null, REINSTATED: "APPROVED", UNPAUSED: "APPROVED" };

export function createWebhookSender(store: Store, options: FakeChatAppOptions, deliverWebhook: (req: Request) => Promise<Response>) {
  const { settings, now, outbox, lastInbound, conversationIds, findTemplate, phones } = store;
  const { sent, webhooks, webhookErrors } = store.seen;
  let lastDelivery: { body: string; headers: Record<string, string>; payload: WebhookEnvelope } | undefined;
  let chain: Promise<void> = Promise.resolve();

  function prepare(payload: WebhookEnvelope, effect?: () => void): PreparedWebhook {
    return { payload, body: JSON.stringify(payload), effect };
  }

  const sign = (secret: string, body: string) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

  async function post(body: string, headers: Record<string, string>, payload: WebhookEnvelope): Promise<Response> {
    if (!settings.webhookUrl) throw new Error("fake-chatapp: webhookUrl is not set (pass it in the options or call setWebhookUrl)");
    lastDelivery = { body, headers, payload };
    const response = await deliverWebhook(new Request(settings.webhookUrl, { method: "POST", headers, body }));
    webhooks.push({ payload, body, status: response.status });
    return response;
  }

  function deliver(prepared: PreparedWebhook, delivery: DeliveryOptions = {}): Promise<Response> {
    // The platform-side change (window opened, template paused) happened whether or not the server listens.
    prepared.effect?.();
    prepared.effect = undefined;
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "facebookexternalua" };
    if (!delivery.omitSignature) headers["x-hub-signature-256"] = sign(delivery.secret ?? options.appSecret, prepared.body);
    return post(prepared.body, headers, prepared.payload);
  }

  /** The fake's own follow-up webhooks (async failures, auto statuses): posted in order, after the answer. */
  function schedule(prepared: PreparedWebhook): void {
    if (options.webhookDelivery === "manual") {
      outbox.push(prepared);
      return;
    }
    const delay = options.webhookDelayMs ?? 0;
    chain = chain
      .then(() => Bun.sleep(delay))
      .then(() => deliver(prepared))
      .then(
        () => undefined,
        (error: unknown) => {
          webhookErrors.push(error instanceof Error ? error : new Error(String(error)));
        },
      );
  }

  function envelope(wabaId: string, field: string, value: Json, time?: number): WebhookEnvelope {
    const entry: WebhookEnvelope["entry"][number] = { id: wabaId, changes: [{ value, field }] };
    if (time !== undefined) entry.time = time;
    return { object: "whatsapp_business_account", entry: [entry] };
  }

  function phoneOrThrow(phoneNumberId: string) {
    const found = phones.get(phoneNumberId);
    if (!found) throw new Error(`fake-chatapp: no phone number ${phoneNumberId}`);
    return found;
  }

  const metadata = (phone: FakePhoneNumber) => ({ display_phone_number: digits(phone.display_phone_number), phone_number_id: phone.id });

  function inboundWebhook(inbound: InboundOptions): PreparedWebhook & { wamid: string } {
    const { phone, wabaId } = phoneOrThrow(inbound.phoneNumberId);
    const waId = digits(inbound.from);
    const at = inbound.at ?? now();
    const wamid = newWamid();
    const message: Json = { from: waId, id: wamid, timestamp: unixSeconds(at), type: "text", text: { body: inbound.text } };
    if (inbound.contextWamid) message.context = { from: digits(phone.display_phone_number), id: inbound.contextWamid };
    const value = {
      messaging_product: "whatsapp",
      metadata: metadata(phone),
      contacts: [{ profile: { name: inbound.name ?? "Test User" }, wa_id: waId }],
      messages: [message],
    };
    const key = `${phone.id}|${waId}`;
    const prepared = prepare(envelope(wabaId, "messages", value), () => lastInbound.set(key, Math.max(lastInbound.get(key) ?? 0, at)));
    return { ...prepared, wamid };
  }

  function statusWebhook(wamid: string, status: StatusName, opts: StatusOptions = {}): PreparedWebhook {
    const message = sent.find((m) => m.wamid === wamid);
    const phoneNumberId = opts.phoneNumberId ?? message?.phoneNumberId;
    const recipientId = opts.recipientId ?? message?.waId;
    if (!phoneNumberId || !recipientId) throw new Error(`fake-chatapp: unknown wamid ${wamid}; pass phoneNumberId and recipientId`);
    const { phone, wabaId } = phoneOrThrow(phoneNumberId);
    const at = opts.at ?? now();
    const entry: Json = { id: wamid, status, timestamp: unixSeconds(at), recipient_id: recipientId };
    const opaque = message?.body.biz_opaque_callback_data;
    if (typeof opaque === "string") entry.biz_opaque_callback_data = opaque;
    if (status === "failed") {
      entry.errors = opts.errors ?? [webhookError(opts.errorCode ?? message?.failure ?? 131026, opts.details)];
    } else {
      const category = message?.template ? message.template.category.toLowerCase() : "service";
      if (opts.conversation !== false) {
        const conversationKey = `${phoneNumberId}|${recipientId}|${category}`;
        const id = conversationIds.get(conversationKey) ?? randomBytes(16).toString("hex");
        conversationIds.set(conversationKey, id);
        const conversation: Json = { id, origin: { type: category } };
        // Webhooks v23 and older carried the expiry on "sent" only.
        if (status === "sent") conversation.expiration_timestamp = unixSeconds(at + 24 * 3600_000);
        entry.conversation = conversation;
      }
      if (opts.pricing !== false) {
        entry.pricing = message?.template
          ? { billable: true, pricing_model: "PMP", type: "regular", category }
          : { billable: false, pricing_model: "PMP", type: "free_customer_service", category: "service" };
      }
    }
    return prepare(envelope(wabaId, "messages", { messaging_product: "whatsapp", metadata: metadata(phone), statuses: [entry] }));
  }

  function templateStatusWebhook(update: TemplateStatusOptions): PreparedWebhook {
    const template = findTemplate(update.wabaId, update.templateId);
    const name = update.name ?? template?.name;
    const language = update.language ?? template?.language;
    if (!name || !language) throw new Error(`fake-chatapp: unknown template ${update.templateId}; pass name and language`);
    const value: Json = {
      event: update.event,
      // Meta sends the id as a JSON number here, unlike everywhere else.
      message_template_id: Number(update.templateId),
      message_template_name: name,
      message_template_language: language,
      reason: update.reason === undefined ? "NONE" : update.reason,
    };
    if (template) value.message_template_category = template.category;
    if (update.otherInfo) value.other_info = update.otherInfo;
    const effect = () => {
      if (!template) return;
      const next = update.event in STATUS_AFTER_EVENT ? STATUS_AFTER_EVENT[update.event] : update.event;
      if (next) template.status = next;
    };
    return prepare(envelope(update.wabaId, "message_template_status_update", value, Math.floor(now() / 1000)), effect);
  }

  return {
    deliver,
    schedule,
    inboundWebhook,
    statusWebhook,
    templateStatusWebhook,
    /** Re-sends the last webhook byte for byte, signature included, as Meta's retries do. */
    redeliverLast(): Promise<Response> {
      if (!lastDelivery) throw new Error("fake-chatapp: nothing delivered yet");
      return post(lastDelivery.body, lastDelivery.headers, lastDelivery.payload);
    },
    /** Waits until every automatic webhook scheduled so far has been posted. */
    async settle(): Promise<void> {
      let seen: Promise<void> | undefined;
      while (seen !== chain) {
        seen = chain;
        await chain;
      }
    },
  };
}

export type WebhookSender = ReturnType<typeof createWebhookSender>;
