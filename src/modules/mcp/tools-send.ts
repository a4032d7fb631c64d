// The tools that send, preview and cancel. Each send carries the agent's session
// (X-Pigeon-Agent-Session), its stated reason (the body's `reason`, shown to whoever approves it)
// and, when given, an Idempotency-Key, so an agent that retries after a lost answer sends once.
import { Type as t } from "@sinclair/typebox";
import { dataOr, defined, isRefusal, refuse, sendHeaders, type Refusal, type ToolDef, type ToolOutcome } from "./kit";
import type { ApiCall } from "./port";

const Nullable = <T extends ReturnType<typeof t.String>>(s: T) => t.Union([s, t.Null()]);

const recipient = {
  to: t.Optional(t.String({ description: "The recipient's phone number in E.164 form, e.g. +14155552671. Give this or contact_name." })),
  contact_name: t.Optional(
    t.String({
      minLength: 1,
      description:
        "Send to the saved contact with this name (see search_contacts) instead of a number. Refused when no contact or more than one matches.",
    }),
  ),
};

const content = {
  message: t.Optional(t.String({ minLength: 1, description: "The text to send. Give this or template_id." })),
  template_id: t.Optional(t.Integer({ minimum: 1, description: "A template to send instead of free text (see list_templates)." })),
  variables: t.Optional(t.Record(t.String(), t.String(), { description: "The template's variables, by name." })),
};

const routing = {
  device_id: t.Optional(t.Integer({ minimum: 1, description: "Send from this device (see list_devices); default: Pigeon chooses." })),
  pool_id: t.Optional(t.Integer({ minimum: 1, description: "Send from a sender pool instead of one device." })),
  sim_number: t.Optional(t.Integer({ minimum: 1, maximum: 9, description: "The SIM slot of a paired phone (1 or 2)." })),
  schedule_time: t.Optional(
    t.String({ description: "Send later: local time YYYY-MM-DD HH:MM:SS (24-hour) in `timezone`. Omit to send now." }),
  ),
  timezone: t.Optional(t.String({ description: "IANA time zone of schedule_time, e.g. Europe/Berlin; default UTC." })),
  urgent: t.Optional(
    t.Boolean({ description: "A message the recipient is waiting for: sent first and never held by quiet hours. Use sparingly." }),
  ),
};

const intent = {
  reason: t.Optional(
    t.String({
      maxLength: 500,
      description: "Why you are sending this, in a sentence; shown to the person who approves the send when the key needs approval.",
    }),
  ),
  idempotency_key: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 255,
      description: "A unique string for this send (e.g. a UUID). Retrying with the same key and the same arguments sends nothing twice.",
    }),
  ),
};

const SentMessage = t.Object({
  notification_id: t.Integer({ description: "The message's id: get_message, cancel_message, pigeon://messages/{id}" }),
  status: t.String({ description: "pending, scheduled, awaiting_approval, …" }),
  awaiting_approval: t.Boolean({ description: "True when a person must approve the send before it leaves" }),
  recipient: t.String(),
  message: Nullable(t.String()),
  scheduled_for: Nullable(t.String({ description: "UTC instant of a scheduled send" })),
  resource: t.String({ description: "The resource to read or subscribe to for the message's status" }),
});

/** The number of a contact named `name`: its exact match, else its only match; a refusal otherwise. */
async function contactNumber(api: ApiCall, name: string): Promise<{ phone: string; name: string } | Refusal> {
  const found = await dataOr(api("POST", "/v1/api/contact/search", { body: { query: name, limit: 20 } }));
  if (isRefusal(found)) return found;
  const contacts = (found.contacts ?? []) as { name: string; phone: string; contact_id: number }[];
  const exact = contacts.filter((c) => c.name.toLowerCase() === name.toLowerCase());
  const pick = exact.length === 1 ? exact : contacts;
  if (pick.length === 1) return { phone: pick[0].phone, name: pick[0].name };
  if (pick.length === 0)
    return refuse(404, "not_found", `No contact is named "${name}"; search_contacts lists them, or give the number as \`to\``);
  return refuse(400, "validation_error", `${pick.length} contacts match "${name}"; give the number as \`to\` or a fuller name`, {
    candidates: pick.map((c) => ({ contact_id: c.contact_id, name: c.name, phone: c.phone })),
  });
}

/** The recipient's number (and name) from `to` or `contact_name`. */
async function recipientOf(api: ApiCall, args: Record<string, unknown>): Promise<{ phone: string; name?: string } | Refusal> {
  if (typeof args.to === "string" && args.to.length > 0) return { phone: args.to };
  if (typeof args.contact_name === "string") return contactNumber(api, args.contact_name);
  return refuse(400, "validation_error", "Give the recipient as `to` (an E.164 number) or `contact_name`", { field: "to" });
}

function smsBody(args: Record<string, unknown>, to: { phone: string; name?: string }) {
  return defined({
    recipient_contact: to.phone,
    recipient_name: to.name,
    message: args.message,
    template_id: args.template_id,
    variables: args.variables,
    device_id: args.device_id,
    pool_id: args.pool_id,
    sim_number: args.sim_number,
    schedule_time: args.schedule_time,
    timezone: args.timezone,
    ...(args.urgent === true ? { priority: 100, transactional: true } : {}),
  });
}

function sentOutcome(data: Record<string, unknown>, recipient: string): ToolOutcome {
  const id = Number(data.notification_id);
  const status = typeof data.status === "string" ? data.status : data.scheduled_for ? "scheduled" : "pending";
  const awaiting = status === "awaiting_approval";
  const out = {
    notification_id: id,
    status,
    awaiting_approval: awaiting,
    recipient,
    message: (data.message as string | null | undefined) ?? null,
    scheduled_for: (data.scheduled_for as string | null | undefined) ?? null,
    resource: `pigeon://messages/${id}`,
  };
  const summary = awaiting
    ? `Message ${id} awaits a person's approval and has NOT been sent yet. Read or subscribe to pigeon://messages/${id} to learn when it is approved or rejected.`
    : out.scheduled_for
      ? `Message ${id} is scheduled for ${out.scheduled_for} (UTC).`
      : `Message ${id} was accepted for sending (status ${status}); get_message tells its delivery.`;
  return { data: out, summary };
}

export const sendSms: ToolDef = {
  name: "send_sms",
  title: "Send an SMS",
  description:
    "Send a text message by SMS to one phone number or one saved contact, now or at a scheduled local time. " +
    "The message really reaches a person: check the number and the text first (preview_message shows cost, segments, quiet hours and opt-out). " +
    "Pass an idempotency_key and reuse it when you retry, so the message is sent once. " +
    "If the answer says awaiting_approval, a person must approve it before it is sent.",
  input: t.Object({ ...recipient, ...content, ...routing, ...intent }),
  output: SentMessage,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async run(args, api, agent) {
    const to = await recipientOf(api, args);
    if (isRefusal(to)) return to;
    const body = { ...smsBody(args, to), ...defined({ reason: args.reason }) };
    const data = await dataOr(api("POST", "/v1/api/sms/send", { body, headers: sendHeaders(agent, args.idempotency_key) }));
    return isRefusal(data) ? data : sentOutcome(data, to.phone);
  },
};

export const sendChatMessage: ToolDef = {
  name: "send_chat_message",
  title: "Send a chat-app message",
  description:
    "Send a message on the chat-app channel (WhatsApp Business). Free text is allowed only within 24 hours of the customer's last message " +
    "(read_thread shows the window); outside it send an approved template with template_id and its variables. " +
    "Pass an idempotency_key and reuse it when you retry. If the answer says awaiting_approval, a person must approve it first.",
  input: t.Object({
    to: t.String({ description: "The customer's number in E.164 form, e.g. +14155552671" }),
    message: content.message,
    template_id: t.Optional(
      t.Integer({ minimum: 1, description: "An approved chat-app template (see list_templates with channel chatapp)." }),
    ),
    variables: content.variables,
    device_id: t.Optional(t.Integer({ minimum: 1, description: "The business number to send from; default: the workspace's." })),
    schedule_time: routing.schedule_time,
    timezone: routing.timezone,
    ...intent,
  }),
  output: SentMessage,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async run(args, api, agent) {
    const body = defined({
      recipient_contact: args.to,
      message: args.message,
      template_id: args.template_id,
      variables: args.variables,
      device_id: args.device_id,
      schedule_time: args.schedule_time,
      timezone: args.timezone,
      reason: args.reason,
    });
    const data = await dataOr(api("POST", "/v1/api/chatapp/send", { body, headers: sendHeaders(agent, args.idempotency_key) }));
    return isRefusal(data) ? data : sentOutcome(data, String(args.to));
  },
};

export const previewMessage: ToolDef = {
  name: "preview_message",
  title: "Preview an SMS",
  description:
    "See what send_sms would do with the same arguments, without sending: the final text, its encoding (GSM-7 or UCS-2), " +
    "the number of segments, the cost and the balance, the device chosen, whether quiet hours would hold it and whether the recipient opted out.",
  input: t.Object({ ...recipient, ...content, ...routing }),
  output: t.Object({
    would: t.String({ description: "send, hold (quiet hours) or refuse" }),
    message: Nullable(t.String()),
    encoding: t.String(),
    segments: t.Integer(),
    characters: t.Integer(),
    cost: t.Number(),
    balance: t.Number(),
    route: Nullable(t.String()),
    device_id: t.Union([t.Integer(), t.Null()]),
    quiet_hours: t.Unknown({ description: "The quiet hours that would hold the send, or null" }),
    opted_out: t.Unknown({ description: "The recipient's opt-out, or null" }),
    error: t.Unknown({ description: "Why the send would be refused, or null" }),
  }),
  hints: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, api) {
    const to = await recipientOf(api, args);
    if (isRefusal(to)) return to;
    const data = await dataOr(api("POST", "/v1/api/sms/preview", { body: smsBody(args, to) }));
    if (isRefusal(data)) return data;
    return { data, summary: `Would ${data.would}: ${data.segments} segment(s), ${data.encoding}, cost ${data.cost}.` };
  },
};

export const cancelMessage: ToolDef = {
  name: "cancel_message",
  title: "Cancel a scheduled message",
  description:
    "Cancel a message that has not gone out yet (scheduled, pending or awaiting approval); its credits are refunded. A message already sent cannot be cancelled.",
  input: t.Object({ notification_id: t.Integer({ minimum: 1, description: "The message's id (from send_sms or list_messages)" }) }),
  output: t.Object({ notification_id: t.Integer(), status: t.String() }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, api) {
    const data = await dataOr(api("POST", "/v1/api/notification/cancel", { body: { notification_id: args.notification_id } }));
    if (isRefusal(data)) return data;
    const out = {
      ...data,
      notification_id: Number(args.notification_id),
      status: typeof data.status === "string" ? data.status : "cancelled",
    };
    return { data: out, summary: `Message ${args.notification_id} is cancelled.` };
  },
};
