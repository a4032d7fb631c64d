// One person's data through the API: GET /v1/api/privacy/export?phone= (GDPR article 15, access)
// and POST /v1/api/privacy/erase (article 17, erasure), in the workspace of the key.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { refuseUnknownFields } from "../../http/validation";
import type { Services } from "../../services-type";
import { Phone } from "../contacts/model";

const Rows = t.Array(t.Record(t.String(), t.Unknown()));

const Export = t.Object({
  phone: t.String({ description: "The number, in E.164" }),
  exported_at: t.String({ format: "date-time" }),
  contacts: Rows,
  notifications: t.Array(t.Record(t.String(), t.Unknown()), {
    description: "Every message to the number, as GET /v1/api/notification/{id} shows it, with its log",
  }),
  threads: t.Array(t.Record(t.String(), t.Unknown()), {
    description:
      "Its conversations (SMS and chat-app), every message in and out; a received MMS's message lists its kept `attachments` (id, partId, contentType, name, size) with their bytes in `data_base64`",
  }),
  opt_out: t.Record(t.String(), t.Unknown(), { description: "Whether the number is opted out now, since when and how" }),
  opt_out_history: Rows,
  webhook_events: t.Array(t.Record(t.String(), t.Unknown()), { description: "Webhook events whose data carried the number" }),
  webhook_deliveries: t.Array(t.Record(t.String(), t.Unknown()), {
    description: "Those events' deliveries: to which URL, when, with what outcome",
  }),
});

const Counts = t.Object({
  contacts: t.Integer(),
  notifications: t.Integer(),
  notification_logs: t.Integer(),
  thread_messages: t.Integer(),
  threads: t.Integer(),
  attachments: t.Integer({ description: "Received MMS attachments, their bytes with them" }),
  smsgate_messages: t.Integer({ description: "SMSGate-API messages left with no recipient" }),
  opt_out_events: t.Integer({
    description: "Opt-out history entries removed (the one keeping an opt-out in force stays, under the digest)",
  }),
  events: t.Integer(),
  webhook_deliveries: t.Integer(),
  webhook_attempts: t.Integer(),
  idempotency_keys: t.Integer({ description: "Stored replies of sends to the number" }),
  platform_statuses: t.Integer({ description: "Chat-app statuses still waiting for their message" }),
  verifications: t.Integer({ description: "One-time-code verifications of the number (their sends too)" }),
  email_forwards: t.Integer({ description: "Forwards by email (sent or waiting) whose subject or text names the number" }),
  routing_traces: t.Integer({
    description:
      "Sender-pool and inbound-rule traces: the member the number was kept on and the rules' replies to it, removed; its place in a member's count of distinct recipients this month, kept under a digest so the cap still counts it",
  }),
});

const EraseBody = t.Object({ phone: Phone }, { additionalProperties: false, examples: [{ phone: "+14155552671" }] });

/** What these routes use of the services. */
export type PrivacyRoutesDeps = Pick<Services, "privacy">;

export function privacyRoutes(s: PrivacyRoutesDeps) {
  const { privacy } = s;
  return new Elysia({ tags: ["Privacy"] })
    .use(declaredAuth())
    .use(models)
    .get("/v1/api/privacy/export", async ({ auth, query }) => ok(await privacy.export(auth.workspaceId, query.phone), "Data exported"), {
      query: t.Object({ phone: Phone }),
      response: { 200: Envelope(Export), ...errorResponses() },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "exportPersonData",
        summary: "Export one person's data",
        description:
          "Everything the workspace holds about a phone number, as JSON (GDPR article 15): its contact, every message to it with its log, " +
          "its conversations in and out, its opt-out state and history, and the webhook events that carried the number with their deliveries. " +
          "The number is matched as stored, with or without the leading + (chat-app platforms give it without). Read a page at a time: a large " +
          "workspace takes a while, and other requests are answered meanwhile.",
      },
    })
    .post(
      "/v1/api/privacy/erase",
      async ({ auth, body }) => {
        const result = await privacy.erase(auth.workspaceId, body.phone, `key:${auth.keyId}`);
        return ok(
          result,
          result.in_flight > 0
            ? `Data erased, but for ${result.in_flight} message(s) being sent right now: erase again once they are done`
            : "Data erased",
        );
      },
      {
        parse: "json",
        body: EraseBody,
        transform: refuseUnknownFields(EraseBody),
        response: {
          200: Envelope(
            t.Object({
              phone: t.String(),
              erased: Counts,
              in_flight: t.Integer({
                description: "Messages whose channel call was under way and were left; erase again once they are done",
              }),
            }),
          ),
          ...errorResponses(),
        },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "erasePersonData",
          summary: "Erase one person's data",
          description:
            "Removes everything the workspace holds about a phone number (GDPR article 17) and answers with how many rows of each kind went: " +
            "its contact, its messages (a message still waiting is cancelled and refunded first) with their logs, its conversations, its opt-out " +
            "history, the webhook events and deliveries that carried it, stored replies and platform statuses that name it. Statistics keep their " +
            "counts, without the number. An opt-out stays in force: it is kept under a keyed digest of the number (HMAC-SHA256 with the server's " +
            "key), not the number, so a send to it is still refused with 403 `recipient_opted_out` and the opt-out list shows the digest. " +
            "The erasure is audited (time, key, counts; never the number). Erasing again is harmless.",
        },
      },
    );
}
