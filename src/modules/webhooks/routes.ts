import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok, Pagination } from "../../http/envelope";
import { IdParam, pageQuery } from "../../http/validation";
import type { Services } from "../../services-type";
import { EVENT_TYPES } from "../events/service";
import { MAX_DELIVERY_ATTEMPTS } from "./service";

const Events = t.Union([t.Array(t.String(), { minItems: 1, maxItems: 20 }), t.Literal("*")], {
  description: `Event types to receive, or "*" for all: ${EVENT_TYPES.join(", ")}`,
  examples: [["notification.delivered", "notification.failed", "message.received"]],
});

const Webhook = t.Object({
  webhook_id: t.Integer(),
  url: t.String(),
  events: t.Array(t.String()),
  description: t.String(),
  status: t.Union([t.Literal("active"), t.Literal("failing"), t.Literal("disabled")], {
    description: "failing: a delivery failed on every retry for about a day; deliveries wait until it is re-enabled",
  }),
  consecutive_failures: t.Integer(),
  failing_since: t.Nullable(t.String({ format: "date-time" })),
  secret: t.Optional(t.String({ description: "Shown only on create and when rotated: the key of X-Pigeon-Signature" })),
  secret_hint: t.Optional(t.String()),
  created_at: t.String({ format: "date-time" }),
  updated_at: t.String({ format: "date-time" }),
});

const Attempt = t.Object({
  at: t.String({ format: "date-time" }),
  status_code: t.Nullable(t.Integer()),
  latency_ms: t.Integer(),
  error: t.Nullable(t.String()),
});
const Delivery = t.Object({
  delivery_id: t.String(),
  event_id: t.String(),
  event_type: t.String(),
  status: t.String({ description: "pending, delivering, delivered, failed (given up)" }),
  attempts: t.Array(Attempt),
  next_attempt_at: t.Nullable(t.String({ format: "date-time" })),
  created_at: t.String({ format: "date-time" }),
  delivered_at: t.Nullable(t.String({ format: "date-time" })),
});

const WebhookIdParams = t.Object({ webhook_id: IdParam("webhook_id") });
const WebhookIdBody = t.Object({ webhook_id: t.Integer({ minimum: 1 }) });

const DELIVERY =
  'Deliveries are POSTs of `{id, type, created_at, workspace_id, data}` with `X-Pigeon-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>`, ' +
  "`X-Pigeon-Event` (the event id), `X-Pigeon-Event-Type` and `X-Pigeon-Delivery` (the delivery id). Any 2xx within 10 s counts as delivered; " +
  `otherwise it is retried after 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h and 8 h (${MAX_DELIVERY_ATTEMPTS} attempts, about a day), ` +
  "then given up and the subscription marked `failing` until re-enabled. Delivery is at least once: de-duplicate on the event id. " +
  "Redirects are not followed. URLs must be http(s) and, unless the server sets PIGEON_ALLOW_PRIVATE_WEBHOOKS=1, must not reach loopback, link-local or private addresses (checked again at each delivery).";

/** What these routes use of the services. */
export type WebhookRoutesDeps = Pick<Services, "webhooks">;

export function webhookRoutes(s: WebhookRoutesDeps) {
  const { webhooks } = s;
  return new Elysia({ prefix: "/v1/api/webhook", tags: ["Webhooks"] })
    .use(declaredAuth())
    .use(models)
    .post("/create", async ({ auth, body }) => ok(await webhooks.create(auth.workspaceId, body), "Webhook created"), {
      parse: "json",
      body: t.Object({
        url: t.String({ minLength: 1, maxLength: 2048, examples: ["https://example.com/hooks/pigeon"] }),
        events: Events,
        description: t.Optional(t.String({ maxLength: 500 })),
      }),
      response: { 200: Envelope(Webhook), ...errorResponses(409) },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "createWebhook",
        summary: "Subscribe to events",
        description: `The reply shows the signing \`secret\` once. ${DELIVERY}`,
      },
    })
    .get("/list", async ({ auth }) => ok(await webhooks.list(auth.workspaceId), "Webhooks fetched"), {
      response: { 200: Envelope(t.Object({ webhooks: t.Array(Webhook) })), ...errorResponses() },
      auth: "apiKey",
      scope: "admin",
      detail: { operationId: "listWebhooks", summary: "List webhooks" },
    })
    .post("/update", async ({ auth, body }) => ok(await webhooks.update(auth.workspaceId, body), "Webhook updated"), {
      parse: "json",
      body: t.Object({
        webhook_id: t.Integer({ minimum: 1 }),
        url: t.Optional(t.String({ minLength: 1, maxLength: 2048 })),
        events: t.Optional(Events),
        description: t.Optional(t.String({ maxLength: 500 })),
        status: t.Optional(
          t.Union([t.Literal("active"), t.Literal("disabled")], {
            description: "active re-enables a failing webhook; what waited is delivered",
          }),
        ),
        rotate_secret: t.Optional(t.Boolean({ description: "Issue a new secret (shown in the reply)" })),
      }),
      response: { 200: Envelope(Webhook), ...errorResponses(404) },
      auth: "apiKey",
      scope: "admin",
      detail: { operationId: "updateWebhook", summary: "Update, re-enable or disable a webhook" },
    })
    .post("/delete", async ({ auth, body }) => ok(await webhooks.remove(auth.workspaceId, body.webhook_id), "Webhook deleted"), {
      parse: "json",
      body: WebhookIdBody,
      response: { 200: Envelope(t.Object({ webhook_id: t.Integer(), deleted: t.Boolean() })), ...errorResponses(404) },
      auth: "apiKey",
      scope: "admin",
      detail: { operationId: "deleteWebhook", summary: "Delete a webhook", description: "Deliveries not yet made are dropped." },
    })
    .post("/test", async ({ auth, body }) => ok(await webhooks.test(auth.workspaceId, body.webhook_id), "Test event sent"), {
      parse: "json",
      body: WebhookIdBody,
      response: {
        200: Envelope(
          t.Object({
            event_id: t.String(),
            delivery_id: t.String(),
            delivered: t.Boolean(),
            status_code: t.Nullable(t.Integer()),
            latency_ms: t.Integer(),
            error: t.Nullable(t.String()),
          }),
        ),
        ...errorResponses(404),
      },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "testWebhook",
        summary: "Send a test event",
        description:
          "Sends a `webhook.test` event to this webhook now and reports what the receiver answered. A failed test is retried like any delivery.",
      },
    })
    .get("/:webhook_id", async ({ auth, params }) => ok(await webhooks.get(auth.workspaceId, params.webhook_id), "Webhook fetched"), {
      params: WebhookIdParams,
      response: { 200: Envelope(Webhook), ...errorResponses(404) },
      auth: "apiKey",
      scope: "admin",
      detail: { operationId: "getWebhook", summary: "Get a webhook" },
    })
    .get(
      "/:webhook_id/deliveries",
      async ({ auth, params, query }) =>
        ok(await webhooks.deliveries(auth.workspaceId, params.webhook_id, query.page, query.limit), "Deliveries fetched"),
      {
        params: WebhookIdParams,
        query: t.Object({ ...pageQuery(20, 100) }),
        response: { 200: Envelope(t.Object({ deliveries: t.Array(Delivery), pagination: Pagination })), ...errorResponses(404) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "listWebhookDeliveries",
          summary: "Deliveries of a webhook",
          description: "Newest first; each with every attempt: time, status code, latency, error.",
        },
      },
    );
}
