// Chat-app routes: connecting business numbers, sending, the test send, and the platform's webhook.
import { Elysia, t } from "elysia";
import type { TObject } from "@sinclair/typebox";
import { declaredAuth } from "../../http/declared-auth";
import { documented } from "../../http/route-doc";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { rawBodyOf } from "../../http/foundation";
import { Device } from "../../modules/devices/model";
import type { FastRoute } from "../../http/fast-route";
import type { Reply, ReplySet } from "../../http/idempotency";
import { refuseUnknownFields } from "../../http/validation";
import { expiryFields, OverviewSendResponse, safeSendFields, SendResponse } from "../../modules/sending/model";
import { overviewReply, singleReply } from "../../modules/sending/present";
import { presentSend } from "../../modules/sending/routes";
import type { ItemResult, SendInput } from "../../modules/sending/types";
import type { ChannelRouteContext } from "../types";
import type { ChatappService } from "./service";
import type { HeaderMedia } from "./adapter";
import { MEDIA_LIMITS } from "./service";

const Media = t.Object(
  {
    type: t.Union([t.Literal("image"), t.Literal("video"), t.Literal("document")]),
    link: t.String({ description: "A public http(s) URL the platform fetches" }),
    filename: t.Optional(t.String({ maxLength: 240 })),
  },
  {
    description:
      `A template's media header. Limits: image ${MEDIA_LIMITS.image / 1048576} MB, video ${MEDIA_LIMITS.video / 1048576} MB, document ${MEDIA_LIMITS.document / 1048576} MB ` +
      "(over: 400 media_too_large). A link that is not http(s) or cannot be fetched is dropped before sending.",
  },
);

// Like the SMS sends, a field outside the set is refused rather than quietly ignored.
const chatFields = {
  recipient_contact: t.String({ description: "The user's number, E.164", examples: ["+14155552671"] }),
  message: t.Optional(t.Nullable(t.String({ maxLength: 4096, description: "Freeform text: only while the 24-hour window is open" }))),
  template_id: t.Optional(t.Nullable(t.Union([t.String(), t.Number()], { description: "An approved template's id or code" }))),
  variables: t.Optional(
    t.Nullable(
      t.Union([t.Record(t.String(), t.Any()), t.Array(t.Any())], { description: "The {{1}}..{{n}} values, as an array or an object" }),
    ),
  ),
  device_id: t.Optional(t.Nullable(t.Union([t.String(), t.Number()]))),
  media: t.Optional(Media),
  schedule_time: t.Optional(t.Nullable(t.String({ description: "YYYY-MM-DD HH:MM:SS in `timezone`; omit to send now" }))),
  timezone: t.Optional(t.Nullable(t.String({ description: "IANA zone for schedule_time; default UTC" }))),
  recipient_name: t.Optional(t.Nullable(t.String({ maxLength: 200, description: "Used for logging and the thread" }))),
  // A chat-app message can expire like an SMS; SIM, priority and delivery report mean nothing here
  // and stay outside the set (400 naming the field).
  ...expiryFields,
  ...safeSendFields,
};

const ChatSendBody = t.Object(chatFields, { additionalProperties: false });

const { recipient_contact: _recipient, template_id: _template, ...chatOverviewFields } = chatFields;

const ChatOverviewBody = t.Object(
  {
    to: t.String({ examples: ["+14155552671"] }),
    template: t.Optional(t.String({ description: "Template name (e.g. order_confirmation), code or id" })),
    ...chatOverviewFields,
  },
  { additionalProperties: false },
);

const CHAT_ERRORS =
  "Errors: 403 with `error_code` 131047 when freeform text is sent while the 24-hour window is closed (with `can_send_freeform: false`, `can_send_template` and `available_templates`); " +
  "403 `device_blocked` (the number is blocked: `blocked_code` and `blocked_reason`); 409 `template_account_unlinked`; 409 `device_account_mismatch`; " +
  "403 `urls_not_allowed`; 400 `invalid_template_variables` (count must match; values not empty nor multi-line); 400 with 132015/132016 for a paused or disabled template; 400 `media_too_large`. " +
  "Failures the platform reports later land on the notification with the platform's numeric code. Chat-app messages cost no credits. " +
  "`ttl` or `valid_until` bound how long the message may wait: not sent by then it fails with `expired` (`invalid_valid_until`, `ttl_with_valid_until` when wrong). " +
  "sim_number, priority and with_delivery_report are SMS options and are refused here. " +
  "The reply's `scheduled_for` is the schedule_time instant in UTC, or null when the message goes out now. A field outside those listed is 400 `validation_error` naming it.";

function chatInput(body: typeof ChatSendBody.static, channelPayload: Record<string, unknown> | null): SendInput {
  return {
    channelPayload,
    channel: "chatapp",
    recipient: body.recipient_contact,
    message: body.message,
    templateId: body.template_id,
    variables: body.variables,
    deviceId: body.device_id,
    scheduleTime: body.schedule_time,
    timezone: body.timezone,
    recipientName: body.recipient_name,
    ttl: body.ttl,
    validUntil: body.valid_until,
    routes: body.routes,
    transactional: body.transactional,
    reason: body.reason,
  };
}

/**
 * The chat-app send routes' work, shared by their declarations below (for the framework and the API
 * document) and their fast handlers (src/http/fast-route.ts), which serve them in the running server.
 */
export function chatappSendHandlers(chatapp: ChatappService, s: ChannelRouteContext) {
  /**
   * Checks header media (async; what it finds travels with the send as its channel payload), then
   * sends under the Idempotency-Key rules and presents the result.
   */
  async function send<B>(
    request: Request,
    set: ReplySet,
    auth: AuthContext,
    route: string,
    body: typeof ChatSendBody.static,
    present: (results: ItemResult[]) => Reply<B>,
  ): Promise<B> {
    const { media, note } = await chatapp.checkHeaderMedia(body.media as HeaderMedia | undefined);
    const payload = media || note ? { ...(media ? { media } : {}), ...(note ? { media_note: note } : {}) } : null;
    return presentSend(
      s,
      request,
      set,
      auth,
      route,
      body,
      async (auth) => [await s.sending.prepare(auth, chatInput(body, payload))],
      present,
    );
  }

  return {
    send: {
      path: "/v1/api/chatapp/send",
      schema: ChatSendBody,
      handle: (request: Request, auth: AuthContext, body: typeof ChatSendBody.static, set: ReplySet) =>
        send(request, set, auth, "chatapp.send", body, singleReply),
    },
    test: {
      path: "/v1/api/chatapp/test",
      schema: ChatSendBody,
      handle: async (request: Request, auth: AuthContext, body: typeof ChatSendBody.static, set: ReplySet) => {
        try {
          return await send(request, set, auth, "chatapp.test", body, singleReply);
        } catch (error) {
          // A freeform test while the window is closed: point at the send with a template, if there is one.
          if (error instanceof AppError && error.code === "window_closed" && error.data.can_send_template === true) {
            throw new AppError(
              "use_template",
              "The 24-hour window with this user is closed, so a freeform test cannot be delivered. Use POST /v1/api/chatapp/send with template_id.",
              { ...error.data, use: "POST /v1/api/chatapp/send with template_id" },
            );
          }
          throw error;
        }
      },
    },
    overview: {
      path: "/v1/chatapp/send",
      schema: ChatOverviewBody,
      handle: async (request: Request, auth: AuthContext, body: typeof ChatOverviewBody.static, set: ReplySet) => {
        const template = body.template !== undefined ? await chatapp.templateRefByName(auth.workspaceId, body.template) : undefined;
        const { to, template: _name, ...rest } = body;
        return send(request, set, auth, "chatapp.send.overview", { ...rest, recipient_contact: to, template_id: template }, overviewReply);
      },
    },
  } satisfies Record<string, FastRoute<TObject>>;
}

export function chatappRoutes(chatapp: ChatappService, s: ChannelRouteContext) {
  const send = chatappSendHandlers(chatapp, s);
  // The send and the test send take the same body and answer alike.
  const sendOptions = {
    parse: "json" as const,
    body: ChatSendBody,
    transform: refuseUnknownFields(ChatSendBody),
    response: { 200: SendResponse, ...errorResponses(404, 409) },
    auth: "apiKey" as const,
    scope: "send" as const,
  };
  return new Elysia({ tags: ["Chat-app"] })

    .use(declaredAuth())
    .use(models)
    .post(
      "/v1/api/chatapp/connect",
      async ({ auth, body }) => {
        const result = await chatapp.connect(auth.workspaceId, body);
        return ok({ ...result, devices: result.devices.map((d) => s.devices.present(d)) }, "Business account connected");
      },
      {
        parse: "json",
        body: t.Object({
          access_token: t.String({ minLength: 1, description: "A system-user or business access token for the platform" }),
          business_account_id: t.Optional(t.String({ description: "The business account (WABA) id; found from the token when left out" })),
          phone_number_id: t.Optional(t.String({ description: "Connect only this phone number" })),
        }),
        response: {
          200: Envelope(
            t.Object({
              business_accounts: t.Array(t.Object({ id: t.String(), name: t.Nullable(t.String()), phone_numbers: t.Integer() })),
              devices: t.Array(Device),
              templates: t.Integer({ description: "Templates synced" }),
            }),
          ),
          ...errorResponses(503),
        },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "connectChatApp",
          summary: "Connect a business account",
          description:
            "Asks the platform which business accounts the token was granted and their phone numbers, creates (or updates) a `chatapp` device for each number, " +
            "and syncs the account's templates. No business account: 400 `no_business_account`; no phone number: 400 `no_phone_number`; a token the platform refuses: 400 with the platform's code (e.g. 190).",
        },
      },
    )
    .post(
      "/v1/api/chatapp/relink",
      async ({ auth, body }) => ok(await s.devices.present(await chatapp.relink(auth.workspaceId, body)), "Business number relinked"),
      {
        parse: "json",
        body: t.Object({ device_id: t.Integer({ minimum: 1 }), access_token: t.String({ minLength: 1 }) }),
        response: { 200: Envelope(Device), ...errorResponses(404, 503) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "relinkChatApp",
          summary: "Relink a business number",
          description:
            "A new access token for a chat-app device. A blocked number may then send again; its first successful send unblocks it (`device.unblocked`).",
        },
      },
    )
    .post(send.send.path, ({ auth, request, set, body }) => send.send.handle(request, auth, body, set), {
      ...sendOptions,
      detail: {
        operationId: "sendChatApp",
        ...documented({ idempotent: true }),
        summary: "Send a chat-app message",
        description:
          "An approved template (`template_id` with `variables`) at any time, or freeform `message` while the 24-hour window with the user is open " +
          "(they wrote to that business number in the last 24 hours). Answers like the SMS send; the worker calls the platform and its status webhooks move the notification. " +
          CHAT_ERRORS,
      },
    })
    .post(send.test.path, ({ auth, request, set, body }) => send.test.handle(request, auth, body, set), {
      ...sendOptions,
      detail: {
        operationId: "testChatApp",
        ...documented({ idempotent: true }),
        summary: "Send a test chat-app message",
        description:
          "Like POST /api/chatapp/send, for trying a number out. A freeform test while the window is closed and templates exist: 403 `use_template`, " +
          "pointing to the send with `template_id` and listing `available_templates`. " +
          CHAT_ERRORS,
      },
    })
    .post(send.overview.path, ({ auth, request, set, body }) => send.overview.handle(request, auth, body, set), {
      parse: "json",
      transform: refuseUnknownFields(send.overview.schema),
      body: send.overview.schema,
      response: { 200: OverviewSendResponse, ...errorResponses(404, 409) },
      auth: "apiKey",
      scope: "send",
      detail: {
        operationId: "sendChatAppOverview",
        ...documented({ idempotent: true }),
        summary: "Send a chat-app message (overview form)",
        description:
          "The overview's `{to, template, variables}` form: `to` and `template` (a name, code or id) in place of recipient_contact and template_id, and the other fields of " +
          "POST /api/chatapp/send (message, device_id, media, schedule_time, timezone, recipient_name), honoured the same way. Answers the envelope with " +
          `\`data: {success, messageId, scheduled_for}\`, and \`success\` and \`messageId\` repeated at the top level. ${CHAT_ERRORS}`,
      },
    })
    .get(
      "/v1/webhooks/chatapp",
      ({ query, set }) => {
        const challenge = chatapp.verifyHandshake(query as Record<string, string | undefined>);
        if (challenge === null) throw new AppError("forbidden", "Verification failed: wrong or missing hub.verify_token");
        set.headers["content-type"] = "text/plain; charset=utf-8";
        return challenge;
      },
      {
        auth: "platform",
        detail: {
          operationId: "verifyChatAppWebhook",
          summary: "Platform webhook verification",
          description:
            "The platform's handshake: `hub.mode=subscribe`, `hub.verify_token` equal to PIGEON_CHATAPP_VERIFY_TOKEN → 200 with `hub.challenge` as the body; otherwise 403.",
          responses: {
            200: { description: "The challenge, as text", content: { "text/plain": { schema: { type: "string" } } } },
            403: { description: "Wrong token" },
          },
        },
      },
    )
    .post(
      "/v1/webhooks/chatapp",
      async ({ request }) => {
        const raw = rawBodyOf(request);
        if (!chatapp.signatureValid(raw, request.headers.get("x-hub-signature-256"))) {
          throw new AppError("unauthorized", "Bad or missing X-Hub-Signature-256");
        }
        await chatapp.receive(JSON.parse(raw));
        return ok({ received: true }, "Received");
      },
      {
        parse: "json",
        body: t.Object({ object: t.Optional(t.String()), entry: t.Optional(t.Array(t.Any())) }, { additionalProperties: true }),
        response: { 200: Envelope(t.Object({ received: t.Boolean() })), 401: "Error" },
        auth: "platform",
        detail: {
          operationId: "receiveChatAppWebhook",
          ...documented({
            signedBy: {
              name: "X-Hub-Signature-256",
              description:
                "`sha256=` and the hex HMAC-SHA256 of the raw body keyed with PIGEON_CHATAPP_APP_SECRET. Missing or wrong: 401, and nothing changes.",
            },
          }),
          summary: "Platform webhook",
          description:
            "The platform posts inbound messages (they open the user's 24-hour window and land in threads), message statuses (sent, delivered, read, failed — " +
            "monotonic and de-duplicated) and template status updates (which fire `template.status`). `X-Hub-Signature-256` must be the HMAC-SHA256 of the raw body " +
            "keyed with PIGEON_CHATAPP_APP_SECRET; a bad signature is 401 and changes nothing. Needs no API key.",
        },
      },
    );
}
