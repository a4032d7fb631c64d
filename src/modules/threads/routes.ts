import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok, Pagination } from "../../http/envelope";
import { DELIVERY_TYPES } from "../../core/kinds";
import { choiceOf, fieldError, IdParam, literalUnion, pageQuery } from "../../http/validation";
import type { Services } from "../../services-type";
import { documented } from "../../http/route-doc";
import { attachmentHeaders, DROP_REASONS } from "./attachments";

const Thread = t.Object({
  thread_id: t.Integer(),
  channel: literalUnion(DELIVERY_TYPES),
  peer: t.String({ description: "The other party: an E.164 number" }),
  peer_name: t.Nullable(t.String()),
  contact: t.Nullable(t.Object({ contact_id: t.Integer(), name: t.Nullable(t.String()) })),
  device_id: t.Nullable(
    t.Integer({ description: "Chat-app threads: the business number's device; SMS threads span the workspace's phones" }),
  ),
  last_message: t.Object({
    body: t.String({
      description:
        "A preview: the first 120 characters of the text, or for a data SMS its port and size, `[data SMS to port 53739, 4 bytes]`",
    }),
    direction: t.String(),
    at: t.String({ format: "date-time" }),
  }),
  last_message_at: t.String({ format: "date-time" }),
  unread_count: t.Integer({ description: "Inbound messages since the thread was last marked read" }),
  window: t.Nullable(
    t.Object(
      { open: t.Boolean(), expires_at: t.Nullable(t.String({ format: "date-time" })) },
      { description: "Chat-app threads: the 24-hour customer-service window (freeform replies allowed while open)" },
    ),
  ),
  created_at: t.String({ format: "date-time" }),
});

const ThreadMessage = t.Object({
  message_id: t.Integer(),
  direction: t.Union([t.Literal("inbound"), t.Literal("outbound")]),
  body: t.String({ description: "The text; empty for a data SMS" }),
  data_message: t.Optional(
    t.Object(
      { data: t.String({ description: "The payload, base64" }), port: t.Integer() },
      {
        description:
          "Only on a data SMS, sent (data_message of a send) or received (a paired phone's sms:data-received, always port 53739): its payload and port",
      },
    ),
  ),
  at: t.String({ format: "date-time" }),
  device_id: t.Nullable(t.Integer()),
  notification_id: t.Nullable(t.Integer()),
  status: t.Nullable(t.String({ description: "Outbound: the notification's status; inbound: received" })),
  external_id: t.Nullable(t.String()),
  mms: t.Nullable(
    t.Object(
      {
        transaction_id: t.Nullable(t.String()),
        subject: t.Nullable(t.String()),
        size: t.Nullable(t.Integer({ description: "Bytes, as the MMS notification announced" })),
        content_class: t.Nullable(t.String()),
        downloaded: t.Boolean({ description: "The phone downloaded the content (mms:downloaded); attachments are known then" }),
        attachments: t.Array(
          t.Object({
            part_id: t.Nullable(t.Integer()),
            content_type: t.String(),
            name: t.Nullable(t.String()),
            size: t.Nullable(t.Integer({ description: "Bytes" })),
          }),
          { description: "Every part the phone reported, as it reported it; the bytes kept are in the message's `attachments`" },
        ),
      },
      {
        description:
          "An inbound MMS (paired phones): its headers and, once downloaded, its attachments. The body is the MMS's text, else its subject, else `[MMS]`.",
      },
    ),
  ),
  attachments: t.Array(
    t.Object({
      attachment_id: t.Integer(),
      part_id: t.Nullable(t.Integer()),
      content_type: t.String({ description: "As the phone gave it" }),
      served_as: t.String({
        description:
          "The Content-Type its URL answers with: the type itself for images, audio, video and plain text on Pigeon's list, else `application/octet-stream` (a download)",
      }),
      name: t.Nullable(t.String()),
      size: t.Integer({ description: "Bytes" }),
      url: t.String({ description: "Where its bytes are served, with the same API key: GET it" }),
    }),
    { description: "A received MMS's parts whose bytes Pigeon keeps (empty for any other message)" },
  ),
  attachments_dropped: t.Array(
    t.Object({
      part_id: t.Nullable(t.Integer()),
      content_type: t.String(),
      name: t.Nullable(t.String()),
      size: t.Nullable(t.Integer()),
      reason: t.String({
        description: `Why its bytes were not kept: ${Object.entries(DROP_REASONS)
          .map(([code, why]) => `\`${code}\` (${why})`)
          .join(", ")}`,
      }),
    }),
    { description: "A received MMS's parts whose bytes were not kept; the message's text is kept all the same" },
  ),
});

const ThreadIdParams = t.Object({ thread_id: IdParam("thread_id") });
const AttachmentParams = t.Object({
  thread_id: IdParam("thread_id"),
  message_id: IdParam("message_id"),
  attachment_id: IdParam("attachment_id"),
});

/** What these routes use of the services. */
export type ThreadRoutesDeps = Pick<Services, "threads">;

export function threadRoutes(s: ThreadRoutesDeps) {
  const { threads } = s;
  return new Elysia({ prefix: "/v1/api/thread", tags: ["Threads"] })
    .use(declaredAuth())
    .use(models)
    .get(
      "/list",
      async ({ auth, query }) =>
        ok(
          await threads.list(
            auth.workspaceId,
            { channel: query.channel, contactId: query.contact_id, unread: query.unread },
            query.page,
            query.limit,
          ),
          "Threads fetched",
        ),
      {
        query: t.Object({
          ...pageQuery(20, 100),
          channel: t.Optional(choiceOf(DELIVERY_TYPES, "channel")),
          contact_id: t.Optional(t.Integer({ minimum: 1, ...fieldError("contact_id", "must be a positive whole number") })),
          unread: t.Optional(t.Boolean({ ...fieldError("unread", "must be true or false") })),
        }),
        response: { 200: Envelope(t.Object({ threads: t.Array(Thread), pagination: Pagination })), ...errorResponses() },
        auth: "apiKey",
        scope: "threads:read",
        detail: {
          operationId: "listThreads",
          summary: "List threads",
          description:
            "Every conversation, most recent first: outbound sends and inbound SMS or chat-app messages. Filters: `channel`, `contact_id`, `unread`. " +
            "SMS threads are one per phone number in the workspace; chat-app threads are one per business number and user.",
        },
      },
    )
    .get(
      "/:thread_id/messages",
      async ({ auth, params, query }) =>
        ok(await threads.messages(auth.workspaceId, params.thread_id, query.page, query.limit), "Thread messages fetched"),
      {
        params: ThreadIdParams,
        query: t.Object({ ...pageQuery(20, 100) }),
        response: {
          200: Envelope(t.Object({ thread: Thread, messages: t.Array(ThreadMessage), pagination: Pagination })),
          ...errorResponses(404),
        },
        auth: "apiKey",
        scope: "threads:read",
        detail: {
          operationId: "listThreadMessages",
          summary: "Messages of a thread",
          description: "Newest first, both directions; each outbound message with its notification's status.",
        },
      },
    )
    .get(
      "/:thread_id/message/:message_id/attachment/:attachment_id",
      async ({ auth, params }) => {
        const a = await threads.attachment(auth.workspaceId, params.thread_id, params.message_id, params.attachment_id);
        return new Response(a.data, { headers: attachmentHeaders(a) });
      },
      {
        params: AttachmentParams,
        response: { 200: t.Any(), ...errorResponses(404) },
        auth: "apiKey",
        scope: "threads:read",
        detail: {
          operationId: "getThreadMessageAttachment",
          summary: "An attachment's bytes",
          description:
            "The bytes of a received MMS's part, as the phone sent them, listed in the thread message's `attachments`. " +
            "Images, audio, video and plain text on Pigeon's list are served as their type, `inline`; every other type (SVG, HTML, XML, scripts, anything unknown) " +
            "as `application/octet-stream` with `Content-Disposition: attachment`, never rendered. Every answer carries `X-Content-Type-Options: nosniff` and " +
            "`Content-Security-Policy: default-src 'none'; sandbox`. 404 unless the thread, the message and the attachment belong together and to the key's workspace.",
          ...documented({
            binary: {
              description: "The attachment's bytes",
              content: Object.fromEntries(
                ["application/octet-stream", "image/*", "audio/*", "video/*", "text/plain"].map((type) => [
                  type,
                  { schema: { type: "string", format: "binary" } },
                ]),
              ),
            },
          }),
        },
      },
    )
    .post(
      "/:thread_id/read",
      async ({ auth, params }) => ok(await threads.markRead(auth.workspaceId, params.thread_id), "Thread marked read"),
      {
        params: ThreadIdParams,
        response: { 200: Envelope(Thread), ...errorResponses(404) },
        auth: "apiKey",
        scope: "threads:read",
        detail: { operationId: "markThreadRead", summary: "Mark a thread read", description: "Sets its unread count to 0." },
      },
    );
}
