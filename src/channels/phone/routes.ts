// The companion app's API under /mobile/v1, field for field as the app sends and reads it.
// Errors here use the app's own shape {message, code, data} (the foundation formats them).
import { Elysia, t, type TSchema } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { rawBodyOf } from "../../http/foundation";
import { clientAddress } from "../../http/rate-limit";
import { requestOrigin } from "../../lib/trusted-proxies";
import type { DeviceRow } from "../../modules/devices/model";
import { LIMIT_PERIODS } from "../../modules/devices/app-settings";
import type { ChannelRouteContext } from "../types";
import type { PhoneService, PatchItem } from "./service";

const SimCard = t.Object(
  {
    slotIndex: t.Optional(t.Integer()),
    simNumber: t.Optional(t.Integer()),
    phoneNumber: t.Optional(t.Nullable(t.String())),
    carrierName: t.Optional(t.Nullable(t.String())),
    iccid: t.Optional(t.Nullable(t.String())),
  },
  { additionalProperties: true },
);

const RegisterBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 128, description: "MANUFACTURER/PRODUCT" }),
    pushToken: t.Optional(t.Nullable(t.String({ maxLength: 256 }))),
    simCards: t.Optional(t.Array(SimCard)),
  },
  { additionalProperties: true },
);

const PatchDeviceBody = t.Object(
  { id: t.Optional(t.String()), pushToken: t.Optional(t.Nullable(t.String({ maxLength: 256 }))), simCards: t.Optional(t.Array(SimCard)) },
  { additionalProperties: true },
);

const PatchMessageBody = t.Array(
  t.Object(
    {
      id: t.String({ minLength: 1, maxLength: 36 }),
      state: t.String(),
      recipients: t.Optional(
        t.Array(
          t.Object(
            { phoneNumber: t.Optional(t.String()), state: t.Optional(t.String()), error: t.Optional(t.Nullable(t.String())) },
            { additionalProperties: true },
          ),
        ),
      ),
      states: t.Optional(t.Record(t.String(), t.String())),
    },
    { additionalProperties: true },
  ),
);

const OrderQuery = t.Object({ order: t.Optional(t.String()) });

const PasswordBody = t.Object({ currentPassword: t.String(), newPassword: t.String() });

const PhoneErrorSchema = t.Object({
  message: t.String(),
  code: t.Integer(),
  data: t.Object({ error_code: t.String() }, { additionalProperties: true }),
});
const PhoneMessageSchema = t.Object({
  id: t.String(),
  message: t.String(),
  textMessage: t.Object({ text: t.String() }),
  phoneNumbers: t.Array(t.String()),
  isEncrypted: t.Optional(t.Boolean()),
  simNumber: t.Optional(t.Integer({ minimum: 1, maximum: 3, description: "The SIM to send from; absent: the phone's own choice" })),
  withDeliveryReport: t.Optional(t.Boolean({ description: "Whether to ask the carrier for a delivery report" })),
  priority: t.Optional(
    t.Integer({ minimum: -128, maximum: 127, description: "Higher first; 100 and above skips the app's limits and delays" }),
  ),
  validUntil: t.Optional(
    t.String({ format: "date-time", description: 'The app fails the message with "TTL expired" if it has not sent it by then' }),
  ),
  state: t.Union([t.Literal("Pending"), t.Literal("Cancelling")]),
  createdAt: t.String({ description: "Always three fraction digits" }),
});

const nullable = <T extends TSchema>(schema: T) => t.Union([schema, t.Null()]);
const PhoneSettings = t.Object(
  {
    messages: t.Optional(
      t.Object({
        send_interval_min: t.Optional(
          nullable(t.Integer({ description: "Seconds; given with send_interval_max once the user set either" })),
        ),
        send_interval_max: t.Optional(nullable(t.Integer())),
        limit_period: t.Optional(
          nullable(
            t.Union(
              LIMIT_PERIODS.map((p) => t.Literal(p)),
              {
                description:
                  "Given with limit_value once the user chose a limit; Per30Minutes never to an app older than 1.67.0 (both keys are left out)",
              },
            ),
          ),
        ),
        limit_value: t.Optional(nullable(t.Integer())),
        sim_selection_mode: t.Optional(nullable(t.String())),
        processing_order: t.Optional(nullable(t.String())),
        log_lifetime_days: t.Optional(nullable(t.Integer())),
      }),
    ),
    webhooks: t.Object({
      signing_key: t.String({ description: "HMAC key of the phone's webhooks" }),
      internet_required: t.Optional(nullable(t.Boolean())),
      retry_count: t.Optional(nullable(t.Integer())),
    }),
    ping: t.Optional(t.Object({ interval_seconds: t.Optional(nullable(t.Integer())) })),
    logs: t.Optional(t.Object({ lifetime_days: t.Optional(nullable(t.Integer())) })),
    gateway: t.Object({ notification_channel: t.Literal("SSE_ONLY") }),
  },
  { description: "Only the keys the user set (null: cleared, the app's default); a key left out keeps the phone's own value" },
);

type Responses = Record<string, { description: string; content?: Record<string, { schema: object }> }>;

/** OpenAPI responses of a phone route: its success, and errors in the app's own shape. */
function responses(status: number, description: string, schema?: object, errors: number[] = [400, 401]): Responses {
  const out: Responses = { [status]: { description, ...(schema ? { content: { "application/json": { schema } } } : {}) } };
  for (const e of errors)
    out[e] = {
      description: e === 401 ? "Unknown or missing credentials (the app re-registers on 401 from PATCH /device)" : `Error ${e}`,
      content: { "application/json": { schema: PhoneErrorSchema } },
    };
  return out;
}

type Peer = { requestIP(request: Request): { address: string } | null } | null | undefined;

/**
 * Where the phone reaches us: the configured public URL, else the origin it called, as a trusted
 * proxy's X-Forwarded-Proto/-Host tell it when the phone came through one (a TLS proxy in front of
 * plain-http Pigeon: release builds of the app refuse the http:// URL Pigeon itself sees).
 */
export function publicBase(s: Pick<ChannelRouteContext, "config">, request: Request, server: Peer): string {
  return s.config.publicUrl ?? requestOrigin(request, server?.requestIP(request)?.address, s.config.trustedProxies);
}

export function phoneApiRoutes(phone: PhoneService, s: ChannelRouteContext) {
  const pull = ({ device, request, query }: { device: DeviceRow; request: Request; query: { order?: string } }) =>
    phone.messagesFor(device, query.order === "fifo" ? "fifo" : "lifo", request.headers.get("user-agent"));
  const detail = (operationId: string, summary: string, description: string, res: Responses) => ({
    operationId,
    summary,
    description,
    tags: ["Phone (companion app)"],
    responses: res,
  });
  return (
    new Elysia({ prefix: "/mobile/v1" })
      .use(declaredAuth(phone.authenticateDevice))
      .post(
        "/device",
        async ({ request, body, set, server }) => {
          // Codes are six digits and passwords can be guessed: failures are throttled per address.
          const registered = await s.rateLimiter.guardAuth(clientAddress(request, server), () => phone.register(request.headers, body));
          set.status = 201;
          return registered;
        },
        {
          parse: "json",
          body: RegisterBody,
          auth: "phoneSignUp",
          detail: detail(
            "phoneRegister",
            "Register a phone",
            "Authorization: `Bearer <pairing token>` (the app's private token), `Basic login:password`, or `Code <one-time code>`. 201 `{id, token, login, password?}`.",
            responses(
              201,
              "Registered",
              t.Object({ id: t.String(), token: t.String(), login: t.String(), password: t.Optional(t.String()) }),
            ),
          ),
        },
      )
      .get(
        "/device",
        async ({ request, server }) => {
          let device = null;
          try {
            device = await phone.authenticateDevice(request.headers);
          } catch {
            // The bearer is optional here; the app only reads externalIp.
          }
          const forwarded = request.headers.get("x-forwarded-for")?.split(",")[0]?.trim();
          const externalIp = forwarded || server?.requestIP(request)?.address || "127.0.0.1";
          return { externalIp, ...(device ? { device: phone.presentDevice(device) } : {}) };
        },
        {
          auth: "phoneOptional",
          detail: detail(
            "phoneGetDevice",
            "The phone's view of itself",
            "`{externalIp, device?}`; the Bearer device token is optional.",
            responses(
              200,
              "The caller's address",
              t.Object({ externalIp: t.String(), device: t.Optional(t.Object({}, { additionalProperties: true })) }),
              [],
            ),
          ),
        },
      )
      .patch(
        "/device",
        async ({ device, body, set }) => {
          await phone.updateOwnDevice(device, body);
          set.status = 204;
        },
        {
          parse: "json",
          body: PatchDeviceBody,
          auth: "phone",
          detail: detail(
            "phoneUpdateDevice",
            "Update the phone's push token and SIM cards",
            "A body without `pushToken` (the app leaves a null out) clears it: the phone uses its event stream. 403 when `id` is another device's; 401 makes the app register again.",
            responses(204, "Updated", undefined, [400, 401, 403]),
          ),
        },
      )
      .get("/message", pull, {
        query: OrderQuery,
        auth: "phone",
        detail: detail(
          "phonePullMessages",
          "Messages for the phone",
          "Due pending messages (at most 100, within the phone's per-minute pacing), and `Cancelling` items for app versions ≥ 1.67.0. Reading changes no state.",
          responses(200, "The phone's work", t.Array(PhoneMessageSchema)),
        ),
      })
      // The official server also answers on /messages; some app builds call it.
      .get("/messages", pull, { query: OrderQuery, auth: "phone", detail: { hide: true } })
      .patch(
        "/message",
        async ({ device, body, set }) => {
          await phone.patchMessages(device, body as PatchItem[]);
          set.status = 204;
        },
        {
          parse: "json",
          body: PatchMessageBody,
          auth: "phone",
          detail: detail(
            "phoneReportMessages",
            "Report message states",
            "`[{id, state, recipients, states}]`; Processed keeps it pending, Sent/Delivered/Failed/Cancelled move it. Idempotent; 204 even for unknown ids.",
            responses(204, "Recorded"),
          ),
        },
      )
      .get("/webhooks", ({ device, request, server }) => phone.webhooks(device, publicBase(s, request, server)), {
        auth: "phone",
        detail: detail(
          "phoneListWebhooks",
          "Webhooks the phone should call",
          "Pigeon's own receiver for sms:received, sms:sent, sms:delivered, sms:failed, mms:received, mms:downloaded, system:ping, sms:cancelled and app:started, at PIGEON_PUBLIC_URL, else at the origin this request used (X-Forwarded-Proto/-Host count only from a peer in PIGEON_TRUSTED_PROXIES).",
          responses(200, "Webhooks", t.Array(t.Object({ id: t.String(), deviceId: t.Null(), url: t.String(), event: t.String() }))),
        ),
      })
      .get("/settings", ({ device, request }) => phone.settings(device, request.headers.get("user-agent")), {
        auth: "phone",
        detail: detail(
          "phoneGetSettings",
          "Settings for the phone",
          "Only what the user set, in Pigeon's device API (`POST /v1/api/device/update`: the pause and the per-minute limit) or SMSGate's `PATCH /3rdparty/v1/settings` (every key the app reads: `messages.*`, `webhooks.internet_required`/`retry_count`, `ping.interval_seconds`, `logs.lifetime_days`); a key the user cleared is given as null, which the app resets to its default. The app keeps its own value for every key left out. A `Per30Minutes` limit is left out for an app older than 1.67.0, whose import would fail on it. Always: `webhooks.signing_key` (the key the phone signs its webhooks with) and `gateway.notification_channel: SSE_ONLY` (Pigeon cannot push through Firebase; the app applies it at its next restart).",
          responses(200, "Settings sections, snake_case", PhoneSettings),
        ),
      })
      .get(
        "/events",
        async ({ device, request, server }) => {
          return new Response(await phone.openEvents(device, publicBase(s, request, server)), {
            headers: { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" },
          });
        },
        {
          auth: "phone",
          detail: detail(
            "phoneEvents",
            "Server-Sent Events",
            "MessageEnqueued, MessageCancelled, WebhooksUpdated, SettingsUpdated; a `:keepalive` comment every 15 s.",
            {
              ...responses(200, "text/event-stream"),
              200: { description: "An event stream", content: { "text/event-stream": { schema: { type: "string" } } } },
            },
          ),
        },
      )
      .get(
        "/user/code",
        ({ request, server }) => s.rateLimiter.guardAuth(clientAddress(request, server), () => phone.oneTimeCode(request.headers)),
        {
          auth: "phoneLogin",
          detail: detail(
            "phoneOneTimeCode",
            "A one-time sign-in code",
            "Basic login:password; the code lets another phone register with `Authorization: Code <code>` within 60 s.",
            responses(200, "The code", t.Object({ code: t.String(), validUntil: t.String() })),
          ),
        },
      )
      .patch(
        "/user/password",
        async ({ device, body, set }) => {
          await phone.changePassword(device, body);
          set.status = 204;
        },
        {
          parse: "json",
          body: PasswordBody,
          auth: "phone",
          detail: detail(
            "phoneChangePassword",
            "Change the app login's password",
            "`{currentPassword, newPassword}` (at least 14 characters); 401 when the current one is wrong.",
            responses(204, "Changed"),
          ),
        },
      )
      .post(
        "/webhook",
        async ({ request, set }) => {
          await phone.receiveWebhook(rawBodyOf(request), request.headers);
          set.status = 204;
        },
        {
          auth: "phoneSigned",
          detail: detail(
            "phoneReceiveWebhook",
            "Events the phone posts",
            "One event per request, as the app posts them: sms:received, sms:sent, sms:delivered, sms:failed, sms:cancelled, mms:received, mms:downloaded, system:ping and app:started, signed with `X-Signature` (hex HMAC-SHA256 of the raw body followed by `X-Timestamp`, keyed with the provisioned key). " +
              "Stale timestamps and bad signatures are refused; a repeated event id changes nothing. A received SMS or MMS the thread already has (same phone id; for SMS also same sender, time and text) is not stored again. " +
              "system:ping's `health` checks are kept as the device's reported health (GET /v1/api/device/{device_id}/health); app:started's `simCards` replace the device's SIM list (redacted to their last four characters, as registration sends them). " +
              "Any other event is answered 204 too (the app retries anything else) and logged, not acted on.",
            responses(204, "Received"),
          ),
          parse: "json",
          body: t.Object(
            {
              id: t.String(),
              webhookId: t.Optional(t.String()),
              event: t.String(),
              deviceId: t.String(),
              payload: t.Object({}, { additionalProperties: true }),
            },
            { additionalProperties: true },
          ),
        },
      )
  );
}
