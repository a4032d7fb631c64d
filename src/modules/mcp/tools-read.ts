// The tools that read (messages, threads, contacts, templates, devices, statistics) and the one
// that adds a contact. Each answers the API's own fields, so what an agent sees is what the API
// documents at /docs.
import { Type as t } from "@sinclair/typebox";
import { DELIVERY_TYPES } from "../../core/kinds";
import { dataOr, defined, isRefusal, READ_ONLY, type ToolDef } from "./kit";

const page = {
  page: t.Optional(t.Integer({ minimum: 1, description: "Page number, from 1" })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, description: "Page size, default 20, at most 100" })),
};
const Pagination = t.Object({ page: t.Integer(), limit: t.Integer(), total: t.Integer() });
const Loose = (properties: Parameters<typeof t.Object>[0]) => t.Object(properties, { additionalProperties: true });

const Message = Loose({
  notification_id: t.Integer(),
  status: t.String(),
  recipient: t.String(),
  message: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
});

export const listMessages: ToolDef = {
  name: "list_messages",
  title: "List sent messages",
  description:
    "List the messages this workspace sent or scheduled, newest first, optionally only those with a status " +
    "(pending, scheduled, sent, delivered, failed, cancelled, awaiting_approval) or to one recipient.",
  input: t.Object({
    status: t.Optional(t.String({ description: "Only messages in this status" })),
    recipient: t.Optional(t.String({ description: "Only messages to this E.164 number" })),
    ...page,
  }),
  output: t.Object({ messages: t.Array(Message), pagination: Pagination }),
  hints: READ_ONLY,
  async run(args, api) {
    const data = await dataOr(api("GET", "/v1/api/notification/list", { query: defined(args) as Record<string, string> }));
    if (isRefusal(data)) return data;
    const out = { messages: data.notifications ?? [], pagination: data.pagination };
    return { data: out, summary: `${(out.messages as unknown[]).length} message(s) of ${(data.pagination as { total: number }).total}.` };
  },
};

export const getMessage: ToolDef = {
  name: "get_message",
  title: "Get a message's status",
  description:
    "One sent message: its status (and whether it awaits approval), its text, its recipient, and the log of what happened to it.",
  input: t.Object({ notification_id: t.Integer({ minimum: 1, description: "The message's id" }) }),
  output: Message,
  hints: READ_ONLY,
  async run(args, api) {
    const data = await dataOr(api("GET", `/v1/api/notification/${Number(args.notification_id)}`));
    if (isRefusal(data)) return data;
    return { data, summary: `Message ${data.notification_id} is ${data.status}.` };
  },
};

const Thread = Loose({ thread_id: t.Integer(), channel: t.String(), peer: t.String(), unread_count: t.Integer() });

export const listThreads: ToolDef = {
  name: "list_threads",
  title: "List conversations",
  description:
    "List the conversations (threads) with people, the most recent first, each with its last message and unread count. " +
    "Use read_thread (or the resource pigeon://threads/{thread_id}) to read one.",
  input: t.Object({
    unread: t.Optional(t.Boolean({ description: "Only threads with unread inbound messages" })),
    channel: t.Optional(
      t.Union(
        DELIVERY_TYPES.map((d) => t.Literal(d)),
        { description: "Only this channel" },
      ),
    ),
    contact_id: t.Optional(t.Integer({ minimum: 1, description: "Only the thread with this contact" })),
    ...page,
  }),
  output: t.Object({ threads: t.Array(Thread), pagination: Pagination }),
  hints: READ_ONLY,
  async run(args, api) {
    const data = await dataOr(api("GET", "/v1/api/thread/list", { query: defined(args) as Record<string, string> }));
    if (isRefusal(data)) return data;
    return { data, summary: `${(data.threads as unknown[]).length} thread(s).` };
  },
};

export const readThread: ToolDef = {
  name: "read_thread",
  title: "Read a conversation",
  description:
    "The messages of one conversation, newest first, in both directions (inbound messages have status received). " +
    "Subscribe to pigeon://threads/{thread_id} to hear when a new message arrives.",
  input: t.Object({ thread_id: t.Integer({ minimum: 1, description: "The thread's id (from list_threads)" }), ...page }),
  output: t.Object({
    thread: Thread,
    messages: t.Array(Loose({ message_id: t.Integer(), direction: t.String(), body: t.String(), at: t.String() })),
    pagination: Pagination,
  }),
  hints: READ_ONLY,
  async run(args, api) {
    const { thread_id, ...rest } = args;
    const data = await dataOr(
      api("GET", `/v1/api/thread/${Number(thread_id)}/messages`, { query: defined(rest) as Record<string, string> }),
    );
    if (isRefusal(data)) return data;
    return { data, summary: `${(data.messages as unknown[]).length} message(s) with ${(data.thread as { peer: string }).peer}.` };
  },
};

const Contact = Loose({ contact_id: t.Integer(), name: t.String(), phone: t.String(), opted_out: t.Boolean() });

export const searchContacts: ToolDef = {
  name: "search_contacts",
  title: "Search contacts",
  description: "Find saved contacts whose name, phone number or email contains the query (case-insensitive). Shows whether each opted out.",
  input: t.Object({ query: t.String({ minLength: 1, description: "Part of a name, number or email" }), ...page }),
  output: t.Object({ contacts: t.Array(Contact), pagination: Pagination }),
  hints: READ_ONLY,
  async run(args, api) {
    const data = await dataOr(api("POST", "/v1/api/contact/search", { body: defined(args) }));
    if (isRefusal(data)) return data;
    return { data, summary: `${(data.contacts as unknown[]).length} contact(s) match.` };
  },
};

export const createContact: ToolDef = {
  name: "create_contact",
  title: "Create a contact",
  description:
    "Save a new contact (a name and an E.164 phone number, optionally an email and tags). Refused when the number is already a contact.",
  input: t.Object({
    name: t.String({ minLength: 1 }),
    phone: t.String({ description: "E.164, e.g. +14155552671" }),
    email: t.Optional(t.String()),
    tags: t.Optional(t.Array(t.String(), { maxItems: 20 })),
  }),
  output: Contact,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(args, api) {
    const data = await dataOr(api("POST", "/v1/api/contact/create", { body: defined(args) }));
    if (isRefusal(data)) return data;
    return { data, summary: `Contact ${data.contact_id} (${data.name}) saved.` };
  },
};

export const listTemplates: ToolDef = {
  name: "list_templates",
  title: "List message templates",
  description:
    "The message templates send_sms and send_chat_message can use (template_id and the variables each needs). " +
    "Read pigeon://templates/{template_id} for one template's text.",
  input: t.Object({
    channel: t.Optional(
      t.Union(
        DELIVERY_TYPES.map((d) => t.Literal(d)),
        { description: "Only this channel's" },
      ),
    ),
    ...page,
  }),
  output: t.Object({
    templates: t.Array(
      Loose({ template_id: t.Integer(), name: t.String(), body: t.String(), channel: t.String(), variables: t.Array(t.String()) }),
    ),
    pagination: Pagination,
  }),
  hints: READ_ONLY,
  async run(args, api) {
    const data = await dataOr(api("GET", "/v1/api/template/list", { query: defined(args) as Record<string, string> }));
    if (isRefusal(data)) return data;
    return { data, summary: `${(data.templates as unknown[]).length} template(s).` };
  },
};

/** Devices whose health is read one by one beside the list (each is one more request). */
const HEALTH_OF_AT_MOST = 20;

export const listDevices: ToolDef = {
  name: "list_devices",
  title: "List devices with their health",
  description:
    "The devices messages go out from (paired phones, cloud numbers, chat-app business numbers): whether each is online, " +
    "blocked, and its health score (0–100, from recent failures and how lately it was seen).",
  input: t.Object({ ...page }),
  output: t.Object({
    devices: t.Array(
      Loose({
        device_id: t.Integer(),
        name: t.String(),
        kind: t.String(),
        status: t.String(),
        online: t.Boolean(),
        health: t.Union([Loose({ health_score: t.Number() }), t.Null()]),
      }),
    ),
    pagination: Pagination,
  }),
  hints: READ_ONLY,
  async run(args, api) {
    const data = await dataOr(api("GET", "/v1/api/device/list", { query: defined(args) as Record<string, string> }));
    if (isRefusal(data)) return data;
    const devices = (data.devices ?? []) as { device_id: number }[];
    const withHealth = [];
    for (const [i, device] of devices.entries()) {
      const health = i < HEALTH_OF_AT_MOST ? await dataOr(api("GET", `/v1/api/device/${device.device_id}/health`)) : null;
      withHealth.push({ ...device, health: health && !isRefusal(health) ? health : null });
    }
    return { data: { devices: withHealth, pagination: data.pagination }, summary: `${devices.length} device(s).` };
  },
};

export const getStatistics: ToolDef = {
  name: "get_statistics",
  title: "Sending statistics and balance",
  description:
    "How many messages were sent, delivered, failed, pending and cancelled over the last day, week or month, and the credit balance.",
  input: t.Object({
    period: t.Optional(t.Union([t.Literal("day"), t.Literal("week"), t.Literal("month")], { description: "default day" })),
  }),
  output: t.Object({
    period: t.String(),
    from: t.String(),
    to: t.String(),
    sent: t.Integer(),
    delivered: t.Integer(),
    failed: t.Integer(),
    pending: t.Integer(),
    cancelled: t.Integer(),
    balance: t.Union([t.Number(), t.Null()]),
  }),
  hints: READ_ONLY,
  async run(args, api) {
    const stats = await dataOr(api("GET", "/v1/api/stats/notifications", { query: defined(args) as Record<string, string> }));
    if (isRefusal(stats)) return stats;
    const credits = await dataOr(api("GET", "/v1/api/stats/credits"));
    const data: Record<string, unknown> = { ...stats, balance: isRefusal(credits) ? null : (credits.balance as number) };
    return { data, summary: `Over the last ${data.period}: ${data.sent} sent, ${data.delivered} delivered, ${data.failed} failed.` };
  },
};
