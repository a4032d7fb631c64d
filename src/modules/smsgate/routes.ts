// SMSGate's third-party API (android-sms-gateway/server, handlers/3rdparty.go), served under both
// /3rdparty/v1 and /api/3rdparty/v1 so a client given either base works unchanged. Credentials are
// checked by the foundation's early gate (auth.ts); each route names the scope it needs, as SMSGate's
// permissions.RequireScope does. Errors come out in SMSGate's `{message, code, data}` shape.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { errorResponses, models } from "../../http/envelope";
import type { Services } from "../../services-type";
import { VERSION } from "../../version";
import { requireScope, routeScopeOf, smsGateCallerOf, SMSGATE_BASES, type SmsGateAuth } from "./auth";
import {
  Device,
  Health,
  IncomingMessage,
  InboxQuery,
  InboxRefreshBody,
  Settings,
  Webhook,
  WebhookBody,
  ListQuery,
  MessageState,
  SendMessageBody,
  SendQuery,
  TokenRequest,
  TokenResponse,
} from "./model";
import type { SmsGateService } from "./service";
import type { FastRoute } from "../../http/fast-route";
import type { ReplySet } from "../../http/idempotency";
import type { TObject } from "@sinclair/typebox";

export const SMSGATE_TAG = "SMSGate compatible";

/** The release number SMSGate's health reports, from Pigeon's version (1.2.3 → 10203). */
const releaseId = () => {
  const [major = 0, minor = 0, patch = 0] = VERSION.split(/[.-]/).map((n) => Number.parseInt(n, 10) || 0);
  return major * 10000 + minor * 100 + patch;
};

/** The routes under one base path. */
function routesUnder(base: string, s: SmsGateRoutesDeps, tokens: SmsGateAuth, gate: SmsGateService) {
  // Documented once, under /3rdparty/v1; the /api/3rdparty/v1 copies are the same operations (the
  // tag's description says so). Listing both also pushed the document past what the docs UI
  // renders: Swagger UI 5.35 stopped drawing operations once the document had 115 paths.
  const hide = base === SMSGATE_BASES[0] ? {} : { hide: true };
  const secured = (operationId: string, summary: string, description: string, scope?: string) => ({
    auth: "smsgate" as const,
    scope: routeScopeOf(scope),
    detail: { operationId, summary, description: scope ? `${description}\n\nScope: \`${scope}\`.` : description, ...hide },
  });

  /** Answers without a body are described rather than given a schema (the errors are filled in from the table). */
  const withResponses = <T extends { detail: Record<string, unknown> }>(
    o: T,
    responses: Record<number, { description: string }>,
    deprecated = false,
  ) => ({
    ...o,
    detail: { ...o.detail, responses, ...(deprecated ? { deprecated } : {}) },
  });
  const noContent = <T extends { detail: Record<string, unknown> }>(o: T) =>
    withResponses(o, { 204: { description: "Done; no body" }, 404: { description: "Not found in this workspace (not_found)" } });

  async function health() {
    let ok = true;
    try {
      await s.system.ping();
    } catch {
      ok = false;
    }
    const status = ok ? ("pass" as const) : ("fail" as const);
    return {
      status,
      version: VERSION,
      releaseId: releaseId(),
      checks: { "db:ping": { status, description: "The database answers", observedValue: ok ? 0 : 1, observedUnit: "failed pings" } },
    };
  }
  const healthRoute = (path: string, operationId: string, summary: string) => (app: Elysia) =>
    app.get(
      path,
      async ({ set }) => {
        const body = await health();
        if (body.status === "fail") set.status = 503;
        return body;
      },
      {
        auth: "public",
        response: { 200: Health },
        detail: {
          operationId,
          summary,
          description:
            "SMSGate's health shape: `status` pass and one check per dependency; 503 with the same shape and `status: fail` when the database does not answer. Needs no credentials.",
          ...hide,
        },
      },
    );

  // A plugin of its own per path (it is mounted twice), so it reads the caller from the request.
  const messages = (path: "/messages" | "/message") => (app: Elysia) => {
    const alias = path === "/message" ? " (alias of /messages, which older clients call)" : "";
    const also = path === "/message" ? "Alias" : "";
    return app
      .post(path, ({ request, body, query, set }) => sendMessage(gate, base, request, body, query, set), {
        // JSON whatever the Content-Type, as SMSGate's server binds bodies; and so documented as JSON.
        parse: "json",
        body: SendMessageBody,
        query: SendQuery,
        response: { 202: MessageState, ...errorResponses(402, 404, 409) },
        ...secured(
          `smsgateSendMessage${also}`,
          `Send a message${alias}`,
          "One message to 1–100 numbers: one Pigeon notification per recipient, through the same checks and limits as `/v1` sends. 202 with `Location` and the message's state. A repeated `id` answers 409. `dataMessage` sends a data SMS (base64 `data`, 1 to 133 bytes, to `port` 1-65535) through a paired phone: 400 `invalid_data_encoding`, `data_message_empty`, `data_message_too_long`, `invalid_port`, `content_conflict` (with text) or `data_message_unsupported` (a cloud number) otherwise. `isEncrypted: true` sends the app's encrypted text and numbers as given (see the field; off until the workspace turns on `encrypted_sends`, 403 `encrypted_sends_disabled`), and with `dataMessage` its `data` as ciphertext of the payload's base64 (at most 192 bytes, else 400 `invalid_encrypted_value`).",
          "messages:send",
        ),
      })
      .get(
        path,
        async ({ request, query, set }) => {
          requireScope(request, "messages:list");
          const { items, total } = await gate.list(callerAuth(request).workspaceId, query);
          set.headers["x-total-count"] = String(total);
          return items;
        },
        {
          query: ListQuery,
          response: { 200: t.Array(MessageState), ...errorResponses() },
          ...secured(
            `smsgateListMessages${also}`,
            `List messages${alias}`,
            "Newest first unless `sort=createdAt_asc`; `X-Total-Count` has the number that match. `limit` is 1–100 (default 50).",
            "messages:list",
          ),
        },
      )
      .get(
        `${path}/:id`,
        ({ request, params }) => {
          requireScope(request, "messages:read");
          return gate.state(callerAuth(request).workspaceId, params.id);
        },
        {
          params: t.Object({ id: t.String() }),
          response: { 200: MessageState, ...errorResponses(404) },
          ...secured(
            `smsgateGetMessage${also}`,
            `Get a message's state${alias}`,
            "The message's state, each recipient's, and when each state was first reached (`states`).",
            "messages:read",
          ),
        },
      )
      .delete(
        `${path}/:id`,
        async ({ request, params, set }) => {
          requireScope(request, "messages:cancel");
          const after = await gate.cancel(callerAuth(request).workspaceId, params.id);
          if (after.state === "Cancelling") set.status = 202;
          return after;
        },
        {
          params: t.Object({ id: t.String() }),
          response: { 200: MessageState, 202: MessageState, ...errorResponses(404, 409) },
          ...secured(
            `smsgateCancelMessage${also}`,
            `Cancel a message${alias}`,
            "Cancels a message still Pending (scheduled, queued, or downloaded by the phone but not yet taken up): 200 with its state `Cancelled`. " +
              "Where the phone has downloaded it and its app is 1.67.0 or later, the phone decides: 202 with the state `Cancelling` (the phone is told " +
              "and drops it, and the state becomes `Cancelled`; or it had already taken it up, and the state follows its reports: `Processed`, `Sent`, `Delivered`, `Failed`). " +
              "Asking again while `Cancelling` answers 202 and changes nothing. 409 `not_cancellable` once the phone reported it Processed, or later.",
            "messages:cancel",
          ),
        },
      );
  };

  // The phone re-posts the SMS it received in a period; the older paths say they are deprecated, as SMSGate's do.
  const inboxRefresh =
    (path: string, operationId: string, scope: "inbox:refresh" | "messages:export", deprecated: boolean) => (app: Elysia) =>
      app.post(
        path,
        async ({ request, body, set }) => {
          requireScope(request, scope);
          await gate.refreshInbox(callerAuth(request).workspaceId, body);
          set.status = 202;
          if (deprecated) set.headers.deprecation = "true";
        },
        {
          parse: "json",
          body: InboxRefreshBody,
          ...withResponses(
            secured(
              operationId,
              deprecated ? "Re-post a phone's received SMS (older path of POST /inbox/refresh)" : "Re-post a phone's received SMS",
              "Asks the phone to post again the SMS it received between `since` and `until`; they arrive as `sms:received`, each message once. 202 at once. " +
                "404 for an unknown device; 409 `app_too_old` when the phone's app is too old to be asked (before 1.28.0), `phone_not_connected` when it has no event stream open.",
              scope,
            ),
            {
              202: { description: "Asked; the phone re-posts in the background" },
              404: { description: "No such phone in this workspace (not_found)" },
              409: { description: "The phone cannot be asked now (app_too_old, phone_not_connected)" },
            },
            deprecated,
          ),
        },
      );

  // The phones; /device is the older path SMSGate's server still serves beside /devices.
  const devices = (path: "/devices" | "/device") => (app: Elysia) => {
    const older = path === "/device";
    const alias = older ? " (older path of /devices)" : "";
    const also = older ? "Alias" : "";
    const mark = (set: { headers: Record<string, string | number> }) => {
      if (older) set.headers.deprecation = "true";
    };
    const listed = secured(`smsgateListDevices${also}`, `List devices${alias}`, "The workspace's paired phones.", "devices:list");
    const listing = { ...listed, detail: { ...listed.detail, ...(older ? { deprecated: true } : {}) } };
    return app
      .get(
        path,
        ({ request, set }) => {
          requireScope(request, "devices:list");
          mark(set);
          return gate.devices(callerAuth(request).workspaceId);
        },
        { response: { 200: t.Array(Device), ...errorResponses() }, ...listing },
      )
      .delete(
        `${path}/:id`,
        async ({ request, params, set }) => {
          requireScope(request, "devices:delete");
          await gate.removeDevice(callerAuth(request).workspaceId, params.id);
          mark(set);
          set.status = 204;
        },
        {
          params: t.Object({ id: t.String() }),
          ...withResponses(
            secured(
              `smsgateRemoveDevice${also}`,
              `Remove a device${alias}`,
              "Unpairs the phone; what was waiting for it fails with `device_deleted`.",
              "devices:delete",
            ),
            { 204: { description: "Done; no body" }, 404: { description: "Not found in this workspace (not_found)" } },
            older,
          ),
        },
      );
  };

  return new Elysia({ name: `pigeon-smsgate${base}`, prefix: base, tags: [SMSGATE_TAG] })
    .use(declaredAuth())
    .use(models)
    .use(healthRoute("/health", "smsgateHealth", "Health (SMSGate shape)"))
    .use(healthRoute("/health/live", "smsgateHealthLive", "Liveness probe"))
    .use(healthRoute("/health/ready", "smsgateHealthReady", "Readiness probe"))
    .use(healthRoute("/health/startup", "smsgateHealthStartup", "Startup probe"))
    .post(
      "/auth/token",
      ({ request, body, set }) => {
        set.status = 201;
        return tokens.createToken(request, body);
      },
      {
        parse: "json",
        body: TokenRequest,
        response: { 201: TokenResponse, ...errorResponses() },
        ...secured(
          "smsgateIssueToken",
          "Issue an access token",
          "A JWT for `Authorization: Bearer`, limited to `scopes` (a token cannot grant more than its maker holds), valid `ttl` seconds (default 3600), with a refresh token.",
          "tokens:manage",
        ),
      },
    )
    .post(
      "/auth/token/refresh",
      ({ request, set }) => {
        set.status = 201;
        return tokens.refresh(request);
      },
      {
        response: { 201: TokenResponse, ...errorResponses() },
        ...secured(
          "smsgateRefreshToken",
          "Refresh an access token",
          "Called with the refresh token as Bearer: a new pair with the same scopes and lifetime. The old access token is revoked and the refresh token cannot be used again.",
        ),
      },
    )
    .delete(
      "/auth/token/:jti",
      async ({ request, params, set }) => {
        await tokens.revoke(request, params.jti);
        set.status = 204;
      },
      {
        params: t.Object({ jti: t.String() }),
        ...noContent(
          secured(
            "smsgateRevokeToken",
            "Revoke an access token",
            "The token (by its `id`) and its refresh token stop working at once.",
            "tokens:manage",
          ),
        ),
      },
    )
    .get(
      "/inbox",
      async ({ request, query, set }) => {
        requireScope(request, "inbox:list");
        const { items, total } = await gate.inbox(callerAuth(request).workspaceId, query);
        set.headers["x-total-count"] = String(total);
        return items;
      },
      {
        query: InboxQuery,
        response: { 200: t.Array(IncomingMessage), ...errorResponses() },
        ...secured(
          "smsgateListInbox",
          "List received messages",
          "The SMS and MMS the workspace's phones received, newest first, from Pigeon's threads (each once, however often the phone posted it). `X-Total-Count` has the number that match; `limit` is 1–500 (default 50). " +
            "An MMS is one entry: `MMS` while only its headers came, `MMS_DOWNLOADED` once its content did. `DATA_SMS` lists nothing (Pigeon receives text only).",
          "inbox:list",
        ),
      },
    )
    .use(inboxRefresh("/inbox/refresh", "smsgateRefreshInbox", "inbox:refresh", false))
    .use(inboxRefresh("/inbox/export", "smsgateExportInbox", "messages:export", true))
    .use(inboxRefresh("/messages/inbox/export", "smsgateExportInboxUnderMessages", "messages:export", true))
    .use(inboxRefresh("/message/inbox/export", "smsgateExportInboxUnderMessage", "messages:export", true))
    .use(messages("/messages"))
    .use(messages("/message"))
    .get(
      "/webhooks",
      ({ auth, request }) => {
        requireScope(request, "webhooks:list");
        return s.smsgateWebhooks.list(auth.workspaceId);
      },
      {
        response: { 200: t.Array(Webhook), ...errorResponses() },
        ...secured(
          "smsgateListWebhooks",
          "List webhooks",
          "The webhooks registered through this API (Pigeon's own webhooks are under /v1).",
          "webhooks:list",
        ),
      },
    )
    .post(
      "/webhooks",
      async ({ auth, request, body, set }) => {
        requireScope(request, "webhooks:write");
        set.status = 201;
        return await s.smsgateWebhooks.register(auth.workspaceId, body);
      },
      {
        parse: "json",
        body: WebhookBody,
        response: { 201: Webhook, ...errorResponses(404, 409) },
        ...secured(
          "smsgateAddWebhook",
          "Register a webhook",
          "Pigeon delivers it from its outbox, retried as its own webhooks are, in SMSGate's body `{id, webhookId, event, deviceId, payload}` with `X-Timestamp` and `X-Signature` (hex HMAC-SHA256 of the body followed by the timestamp, keyed with the workspace's signing key: `pigeon smsgate signing-key`, or set with PATCH /settings). A repeated `id` replaces that webhook.",
          "webhooks:write",
        ),
      },
    )
    .delete(
      "/webhooks/:id",
      async ({ auth, request, params, set }) => {
        requireScope(request, "webhooks:delete");
        await s.smsgateWebhooks.remove(auth.workspaceId, params.id);
        set.status = 204;
      },
      {
        params: t.Object({ id: t.String() }),
        ...noContent(
          secured(
            "smsgateRemoveWebhook",
            "Delete a webhook",
            "Nothing more is delivered to it; what was waiting is dropped.",
            "webhooks:delete",
          ),
        ),
      },
    )
    .get(
      "/settings",
      ({ auth, request }) => {
        requireScope(request, "settings:read");
        return s.smsgateSettings.get(auth.workspaceId);
      },
      {
        response: { 200: Settings, ...errorResponses() },
        ...secured(
          "smsgateGetSettings",
          "Read settings",
          "The settings of the workspace's phones (the first phone's, as all are set alike through this API): the pause and the limit Pigeon applies, every other key set (null when cleared), and `gateway.notification_channel: SSE_ONLY`. The signing key is never returned.",
          "settings:read",
        ),
      },
    )
    .put(
      "/settings",
      ({ auth, request, body }) => {
        requireScope(request, "settings:write");
        return s.smsgateSettings.update(auth.workspaceId, body);
      },
      {
        parse: "json",
        body: Settings,
        response: { 200: Settings, ...errorResponses() },
        ...secured(
          "smsgateReplaceSettings",
          "Replace settings",
          "As PATCH: the settings given are applied to every paired phone and the others keep their values (to clear a key, give it as null).",
          "settings:write",
        ),
      },
    )
    .patch(
      "/settings",
      ({ auth, request, body }) => {
        requireScope(request, "settings:write");
        return s.smsgateSettings.update(auth.workspaceId, body);
      },
      {
        parse: "json",
        body: Settings,
        response: { 200: Settings, ...errorResponses() },
        ...secured(
          "smsgateUpdateSettings",
          "Change settings",
          "Applies the settings given to every paired phone, each told SettingsUpdated; null clears a key. A refused one changes nothing.",
          "settings:write",
        ),
      },
    )
    .use(devices("/devices"))
    .use(devices("/device"));
}

const callerAuth = (request: Request) => smsGateCallerOf(request).auth;

/** POST /messages (and /message) under `base`: 202 with the message's state and where to read it. */
async function sendMessage(
  gate: SmsGateService,
  base: string,
  request: Request,
  body: SendMessageBody,
  query: typeof SendQuery.static,
  set: ReplySet,
) {
  requireScope(request, "messages:send");
  const state = await gate.send(callerAuth(request), body, query);
  set.status = 202;
  set.headers.location = `${base}/messages/${encodeURIComponent(state.id)}`;
  return state;
}

/**
 * The send routes under both bases as fast routes (src/http/fast-route.ts), which serve them in the
 * running server. Fields they do not know are dropped, as the framework drops them for these routes
 * (SMSGate's server ignores them). A request with a query string (skipPhoneValidation, deviceActiveWithin) goes to
 * the framework, which coerces and checks it.
 */
export function smsGateFastRoutes(s: Pick<SmsGateRoutesDeps, "smsgate">): FastRoute<TObject>[] {
  return SMSGATE_BASES.flatMap((base) =>
    ["/messages", "/message"].map(
      (path): FastRoute<typeof SendMessageBody> => ({
        path: `${base}${path}`,
        schema: SendMessageBody,
        unknownFields: "dropped",
        leaveToFramework: (request) => request.url.includes("?"),
        handle: (request, _auth, body, set) => sendMessage(s.smsgate, base, request, body, {}, set),
      }),
    ),
  ) as FastRoute<TObject>[];
}

/** What these routes use of the services. */
export type SmsGateRoutesDeps = Pick<Services, "smsgate" | "smsgateAuth" | "smsgateSettings" | "smsgateWebhooks" | "system">;

/** The SMSGate-compatible API under both of its bases. */
export function smsGateRoutes(s: SmsGateRoutesDeps) {
  const app = new Elysia({ name: "pigeon-smsgate" });
  for (const base of SMSGATE_BASES) app.use(routesUnder(base, s, s.smsgateAuth, s.smsgate));
  return app;
}
