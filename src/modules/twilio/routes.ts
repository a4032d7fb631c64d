// Twilio's Messages API (2010-04-01): form-encoded requests, JSON answers, Twilio's error body. A
// Twilio helper library pointed at Pigeon's address sends through the workspace's phones, cloud
// numbers and pools unchanged.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { documented } from "../../http/route-doc";
import { Envelope, errorResponses, ok } from "../../http/envelope";
import { refuseUnknownFields } from "../../http/validation";
import { authOf } from "../../http/foundation";
import { AppError } from "../../core/errors";
import type { Services } from "../../services-type";
import { TWILIO_BASE } from "./errors";

const Form = t.Record(t.String(), t.Unknown(), { description: "Form fields (application/x-www-form-urlencoded)" });
const Resource = t.Record(t.String(), t.Unknown(), {
  description: "Twilio's Message resource: sid (SM…), status, to, from, body, num_segments, date_created (RFC 2822), error_code, uri, …",
});

/** The form fields of a message's create, as the document shows them. */
const MESSAGE_FORM = {
  type: "object",
  required: ["To", "Body"],
  properties: {
    To: { type: "string", description: "The recipient, E.164", examples: ["+14155552671"] },
    Body: { type: "string", description: "The text", examples: ["Your order is ready"] },
    From: { type: "string", description: "A number of the workspace's devices (a cloud number, or a pool member's number)" },
    MessagingServiceSid: { type: "string", description: "MG…: a sender pool" },
    ValidityPeriod: { type: "integer", minimum: 1, maximum: 36000, description: "Seconds the message may wait" },
    SendAt: { type: "string", format: "date-time", description: "With ScheduleType=fixed: when to send (any future time)" },
    ScheduleType: { type: "string", enum: ["fixed"] },
    MediaUrl: { type: "string", description: "Refused: 21620, media is not supported" },
    StatusCallback: {
      type: "string",
      format: "uri",
      description:
        "Where each change of the message's status is posted, signed with X-Twilio-Signature (21609 when Pigeon may not call it)",
    },
  },
};

/** The form field of a message's update. */
const CANCEL_FORM = {
  type: "object",
  required: ["Status"],
  properties: { Status: { type: "string", enum: ["canceled"], description: "Cancels a message no channel has taken yet" } },
};

/** The message SID in `SM….json`, or a 404 as Twilio gives. */
function sidOfFile(file: string): string {
  if (!file.endsWith(".json")) throw new AppError("not_found", `The requested resource ${file} was not found`);
  return file.slice(0, -".json".length);
}

export type TwilioRoutesDeps = Pick<Services, "twilio">;

export function twilioRoutes(s: TwilioRoutesDeps) {
  const { twilio } = s;
  const sidOf = (request: Request) => twilio.accountSidOf(request);
  return new Elysia({ prefix: `${TWILIO_BASE}/:AccountSid`, tags: ["Twilio compatible"] })
    .use(declaredAuth())
    .post(
      "/Messages.json",
      async ({ request, body, set }) => {
        set.status = 201;
        return twilio.create(authOf(request), sidOf(request), (body ?? {}) as Record<string, unknown>);
      },
      {
        body: Form,
        params: t.Object({ AccountSid: t.String() }),
        auth: "twilio",
        scope: "send",
        detail: {
          operationId: "twilioCreateMessage",
          ...documented({ form: MESSAGE_FORM }),
          summary: "Send a message (Twilio's Messages API)",
          description:
            "Form fields as Twilio takes them: `To`, `Body`, `From` (the number of one of the workspace's devices: a cloud number, or a phone whose pool member gives its number), " +
            "`MessagingServiceSid` (`MG…`: a sender pool), `ValidityPeriod` (seconds, 1–36000), `SendAt` with `ScheduleType=fixed` (any future time), " +
            "`StatusCallback` (a URL: each change of the message's status is posted there as Twilio posts it, form fields `MessageSid`, `MessageStatus`, `To`, `From`, `ErrorCode`, " +
            "`AccountSid`, …, signed with `X-Twilio-Signature` under the account's auth token, retried for about a day; 21609 when Pigeon may not call it). " +
            "Answers 201 with Twilio's message resource. Errors in Twilio's body `{code, message, more_info, status}`: 21604 (no To), 21211 (invalid To), " +
            "21602 (no Body), 21606 (unknown From), 21609 (StatusCallback), 21610 (the recipient opted out), 21620 (MediaUrl: media is not supported), 20003 (credentials), 20404, 20429.",
          responses: { 201: { description: "Twilio's message resource", content: { "application/json": { schema: Resource } } } },
        },
      },
    )
    .get("/Messages.json", async ({ request, query }) => twilio.list(authOf(request), sidOf(request), query as Record<string, string>), {
      params: t.Object({ AccountSid: t.String() }),
      query: t.Record(t.String(), t.String()),
      response: {
        200: t.Object(
          {
            messages: t.Array(Resource),
            next_page_uri: t.Nullable(t.String()),
            previous_page_uri: t.Nullable(t.String()),
            first_page_uri: t.String(),
            uri: t.String(),
            page: t.Integer(),
            page_size: t.Integer(),
            start: t.Integer(),
            end: t.Integer(),
          },
          { description: "A page of messages as Twilio pages them" },
        ),
      },
      auth: "twilio",
      scope: "messages:read",
      detail: {
        operationId: "twilioListMessages",
        summary: "List messages (Twilio's Messages API)",
        description:
          "Newest first. Filters `To`, `From`, `DateSent`, `DateSent<`, `DateSent>`: each a date (`YYYY-MM-DD`, a UTC day: sent that day, " +
          "on or before it, on or after it) or an ISO 8601 date-time as Twilio's libraries send (`2026-11-30T20:29:00Z`: to the second, " +
          "at or before, at or after); another value is a 400 (20001). Pages of `PageSize` (default 50, at most 1000); " +
          "a later page through the `next_page_uri` given (its `PageToken`), as Twilio pages.",
      },
    })
    .get("/Messages/:file", async ({ request, params }) => twilio.fetch(authOf(request), sidOf(request), sidOfFile(params.file)), {
      params: t.Object({ AccountSid: t.String(), file: t.String({ description: "SM….json" }) }),
      response: { 200: Resource },
      auth: "twilio",
      scope: "messages:read",
      detail: {
        operationId: "twilioFetchMessage",
        summary: "Fetch a message (Twilio's Messages API)",
        description:
          "A sent message (`SM0…`), or a received one (`SMf…`, the `MessageSid` of an incoming-message post: `direction` inbound, `status` received).",
      },
    })
    .post(
      "/Messages/:file",
      async ({ request, params, body }) =>
        twilio.update(authOf(request), sidOf(request), sidOfFile(params.file), (body ?? {}) as Record<string, unknown>),
      {
        body: Form,
        params: t.Object({ AccountSid: t.String(), file: t.String({ description: "SM….json" }) }),
        response: { 200: Resource },
        auth: "twilio",
        scope: "send",
        detail: {
          operationId: "twilioUpdateMessage",
          ...documented({ form: CANCEL_FORM }),
          summary: "Cancel a message (Twilio's Messages API)",
          description:
            "`Status=canceled` cancels a message that no channel has taken yet (a scheduled one, or one still queued): the resource reads `canceled`. " +
            "One a paired phone has downloaded but not taken up, when its app is 1.67.0 or later, is asked of the phone: Twilio has no status for that, so the " +
            "resource answers as it stands (`queued`), then reads `canceled` once the phone dropped it, or `sending` and `sent` when it had already taken it up " +
            "(the status callback tells either). Refused with 20009 once it is sending or done.",
        },
      },
    )
    .delete(
      "/Messages/:file",
      async ({ request, params, set }) => {
        await twilio.remove(authOf(request), sidOfFile(params.file));
        set.status = 204;
        return "";
      },
      {
        params: t.Object({ AccountSid: t.String(), file: t.String({ description: "SM….json" }) }),
        response: { 204: t.String({ description: "Deleted" }) },
        auth: "twilio",
        scope: "admin",
        detail: {
          operationId: "twilioDeleteMessage",
          summary: "Delete a message (Twilio's Messages API)",
          description:
            "Removes a message that is done (sent, delivered, failed or canceled) with its log and its place in the thread; the statistics keep it. " +
            "A message still on its way is refused (20009): cancel it first.",
        },
      },
    );
}

const Settings = t.Object({
  account_sid: t.Nullable(t.String({ description: "The workspace's Twilio-style account SID (AC…); null until credentials are made" })),
  incoming_url: t.Nullable(t.String({ description: "Where each received message is posted as Twilio posts it (null: nowhere)" })),
  pools: t.Array(
    t.Object({
      pool_id: t.Integer(),
      name: t.String(),
      messaging_service_sid: t.String({ description: "MG…: the pool as Twilio's MessagingServiceSid" }),
      incoming_url: t.String(),
    }),
    {
      description: "Pools with their own incoming-message URL (a Messaging Service's inbound URL): it takes the messages of their members",
    },
  ),
});
const IncomingBody = t.Object(
  {
    url: t.Nullable(t.String({ minLength: 1, maxLength: 2000, description: "http(s) URL; null clears it" })),
    pool_id: t.Optional(t.Integer({ minimum: 1, description: "Set the pool's URL instead of the workspace's" })),
  },
  { additionalProperties: false, examples: [{ url: "https://example.com/sms/incoming" }] },
);

/** The Twilio compatibility's settings in Pigeon's own API: the account SID and the incoming-message URLs. */
export function twilioSettingsRoutes(s: TwilioRoutesDeps) {
  const { twilio } = s;
  return new Elysia({ tags: ["Twilio compatible"] })
    .use(declaredAuth())
    .get("/v1/api/twilio/settings", async ({ auth }) => ok(await twilio.settings(auth.workspaceId), "Twilio settings fetched"), {
      response: { 200: Envelope(Settings), ...errorResponses() },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "getTwilioSettings",
        summary: "Twilio compatibility settings",
        description:
          "The workspace's Twilio-style account SID (its auth token is shown only by `pigeon twilio credentials` and the dashboard) and the incoming-message URLs of the workspace and its pools.",
      },
    })
    .post(
      "/v1/api/twilio/incoming",
      async ({ auth, body }) => {
        await twilio.setIncomingUrl(auth.workspaceId, body.url, body.pool_id ?? null);
        return ok(await twilio.settings(auth.workspaceId), body.url === null ? "Incoming-message URL cleared" : "Incoming-message URL set");
      },
      {
        parse: "json",
        body: IncomingBody,
        transform: refuseUnknownFields(IncomingBody),
        response: { 200: Envelope(Settings), ...errorResponses(404) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "setTwilioIncomingUrl",
          summary: "Set the incoming-message URL",
          description:
            "Each message received (SMS and chat-app, keywords too) is posted to this URL as Twilio posts an incoming message: form fields `MessageSid` (SMf…), `From`, `To`, `Body`, " +
            "`NumMedia`, `AccountSid`, `MessagingServiceSid` (when a pool's), signed with `X-Twilio-Signature` under the account's auth token. A TwiML answer's `<Message>` elements " +
            "are sent back to the sender (or to their `to`) through the device and SIM the message came in on; not to an opted-out number nor to the workspace's own numbers. " +
            "A pool's URL takes the messages of its members before the workspace's. Failed posts are tried again three times within about 15 minutes. " +
            "Makes the workspace's Twilio account if there is none. 400 `invalid_webhook_url` for an address Pigeon may not call; 404 for another workspace's pool.",
        },
      },
    );
}
