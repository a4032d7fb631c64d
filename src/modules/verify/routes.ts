// Verify in Pigeon's own API and envelope, under /v1/api/verify. Twilio's Verify v2 API serves the
// same verifications under /v2/Services (twilio-routes.ts).
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, ok } from "../../http/envelope";
import { AppError } from "../../core/errors";
import { refuseUnknownFields } from "../../http/validation";
import type { Services } from "../../services-type";
import { sidOf } from "../twilio/resource";
import type { ServiceRow, VerificationRow } from "./repository";
import { CODE_LENGTHS, MAX_CHECKS, TTL_SECONDS } from "./service";

export type VerifyRoutesDeps = Pick<Services, "verify" | "twilio">;
const ServiceBody = {
  name: t.String({ minLength: 1, maxLength: 60, description: "Named in the code's message: “Your NAME verification code is: …”" }),
  code_length: t.Optional(
    t.Integer({ minimum: CODE_LENGTHS.min, maximum: CODE_LENGTHS.max, description: `Digits (default ${CODE_LENGTHS.default})` }),
  ),
  ttl_seconds: t.Optional(
    t.Integer({ minimum: TTL_SECONDS.min, maximum: TTL_SECONDS.max, description: `A code's life (default ${TTL_SECONDS.default})` }),
  ),
  pool_id: t.Optional(
    t.Nullable(t.Integer({ minimum: 1, description: "The sender pool codes go through (SMS); else the workspace's routing" })),
  ),
  chatapp_template_id: t.Optional(
    t.Nullable(
      t.Integer({
        minimum: 1,
        description: "The approved chat-app authentication template for the whatsapp channel (else the first such)",
      }),
    ),
  ),
  per_number_limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, description: "Codes a number may get in 10 minutes (default 5)" })),
  prefix_hourly_budget: t.Optional(
    t.Integer({
      minimum: 1,
      maximum: 100_000,
      description: "Codes the numbers of one country calling code may get in an hour (default 100)",
    }),
  ),
};
const CreateServiceBody = t.Object(ServiceBody, { additionalProperties: false, examples: [{ name: "Acme", code_length: 6 }] });
const UpdateServiceBody = t.Object(
  { service_id: t.Integer({ minimum: 1 }), ...ServiceBody, name: t.Optional(ServiceBody.name) },
  { additionalProperties: false, examples: [{ service_id: 1, ttl_seconds: 300 }] },
);
const ServiceIdBody = t.Object({ service_id: t.Integer({ minimum: 1 }) }, { additionalProperties: false });
const StartBody = t.Object(
  {
    service_id: t.Integer({ minimum: 1 }),
    to: t.String({ description: "E.164" }),
    channel: t.Optional(
      t.Union([t.Literal("sms"), t.Literal("whatsapp")], { description: "sms (default) or whatsapp (the chat-app channel)" }),
    ),
  },
  { additionalProperties: false, examples: [{ service_id: 1, to: "+14155552671" }] },
);
const CheckBody = t.Object(
  {
    service_id: t.Integer({ minimum: 1 }),
    to: t.Optional(t.String({ description: "E.164: the number's pending verification" })),
    verification_id: t.Optional(t.Integer({ minimum: 1 })),
    code: t.String({ minLength: 1, maxLength: 10 }),
  },
  { additionalProperties: false, examples: [{ service_id: 1, to: "+14155552671", code: "123456" }] },
);
const UpdateBody = t.Object(
  { verification_id: t.Integer({ minimum: 1 }), status: t.Union([t.Literal("canceled"), t.Literal("approved")]) },
  { additionalProperties: false, examples: [{ verification_id: 1, status: "canceled" }] },
);

const Service = t.Object({
  service_id: t.Integer(),
  sid: t.String({ description: "VA…: the service as Twilio's Verify API names it" }),
  name: t.String(),
  code_length: t.Integer(),
  ttl_seconds: t.Integer(),
  pool_id: t.Nullable(t.Integer()),
  chatapp_template_id: t.Nullable(t.Integer()),
  per_number_limit: t.Integer(),
  prefix_hourly_budget: t.Integer(),
  created_at: t.String({ format: "date-time" }),
  updated_at: t.String({ format: "date-time" }),
});
const Verification = t.Object({
  verification_id: t.Integer(),
  sid: t.String({ description: "VE…" }),
  service_id: t.Integer(),
  to: t.String(),
  channel: t.String(),
  status: t.Union([t.Literal("pending"), t.Literal("approved"), t.Literal("canceled"), t.Literal("expired")]),
  valid: t.Boolean(),
  checks_left: t.Integer({ description: "Wrong codes it still takes" }),
  expires_at: t.String({ format: "date-time" }),
  sends: t.Array(t.Object({ at: t.String({ format: "date-time" }), channel: t.String(), notification_id: t.Nullable(t.Integer()) })),
  created_at: t.String({ format: "date-time" }),
});

const presentService = (s: ServiceRow) => ({
  service_id: s.id,
  sid: sidOf("VA", s.id),
  name: s.name,
  code_length: s.codeLength,
  ttl_seconds: s.ttlSeconds,
  pool_id: s.poolId,
  chatapp_template_id: s.chatappTemplateId,
  per_number_limit: s.perNumberLimit,
  prefix_hourly_budget: s.prefixHourlyBudget,
  created_at: new Date(s.createdAt).toISOString(),
  updated_at: new Date(s.updatedAt).toISOString(),
});

export function verifyRoutes(s: VerifyRoutesDeps) {
  const { verify } = s;
  const present = async (v: VerificationRow, valid = v.status === "approved") => ({
    verification_id: v.id,
    sid: sidOf("VE", v.id),
    service_id: v.serviceId,
    to: v.recipient,
    channel: v.channel,
    status: v.status,
    valid,
    checks_left: Math.max(0, MAX_CHECKS - v.checks),
    expires_at: new Date(v.expiresAt).toISOString(),
    sends: (await verify.sendsOf(v.id)).map((a) => ({
      at: new Date(a.at).toISOString(),
      channel: a.channel,
      notification_id: a.notificationId,
    })),
    created_at: new Date(v.createdAt).toISOString(),
  });
  const json = <T extends Parameters<typeof refuseUnknownFields>[0]>(body: T) => ({
    parse: "json" as const,
    body,
    transform: refuseUnknownFields(body),
  });

  return new Elysia({ tags: ["Verify"] })
    .use(declaredAuth())
    .post(
      "/v1/api/verify/service/create",
      async ({ auth, body }) => ok(presentService(await verify.createService(auth.workspaceId, body)), "Verify service created"),
      {
        ...json(CreateServiceBody),
        response: { 200: Envelope(Service), ...errorResponses(404, 409) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "createVerifyService",
          summary: "Create a Verify service",
          description:
            "How one-time codes are made and sent, and the fraud limits that guard them. The same service is Twilio's Verify Service `sid` under /v2/Services. " +
            "At most 25 a workspace (409 `conflict`).",
        },
      },
    )
    .get(
      "/v1/api/verify/service/list",
      async ({ auth }) => ok({ services: (await verify.services(auth.workspaceId)).map(presentService) }, "Verify services fetched"),
      {
        response: { 200: Envelope(t.Object({ services: t.Array(Service) })), ...errorResponses() },
        auth: "apiKey",
        scope: "admin",
        detail: { operationId: "listVerifyServices", summary: "List Verify services" },
      },
    )
    .get(
      "/v1/api/verify/service/:service_id",
      async ({ auth, params }) =>
        ok(presentService(await verify.requireService(auth.workspaceId, params.service_id)), "Verify service fetched"),
      {
        params: t.Object({ service_id: t.Integer({ minimum: 1 }) }),
        response: { 200: Envelope(Service), ...errorResponses(404) },
        auth: "apiKey",
        scope: "admin",
        detail: { operationId: "getVerifyService", summary: "Get a Verify service" },
      },
    )
    .post(
      "/v1/api/verify/service/update",
      async ({ auth, body }) => {
        const { service_id, ...input } = body;
        return ok(presentService(await verify.updateService(auth.workspaceId, service_id, input)), "Verify service updated");
      },
      {
        ...json(UpdateServiceBody),
        response: { 200: Envelope(Service), ...errorResponses(404) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "updateVerifyService",
          summary: "Change a Verify service",
          description: "The fields given change; the others stay.",
        },
      },
    )
    .post(
      "/v1/api/verify/service/delete",
      async ({ auth, body }) => {
        await verify.removeService(auth.workspaceId, body.service_id);
        return ok({ service_id: body.service_id }, "Verify service deleted");
      },
      {
        ...json(ServiceIdBody),
        response: { 200: Envelope(t.Object({ service_id: t.Integer() })), ...errorResponses(404) },
        auth: "apiKey",
        scope: "admin",
        detail: { operationId: "deleteVerifyService", summary: "Delete a Verify service", description: "With its verifications." },
      },
    )
    .post(
      "/v1/api/verify/start",
      async ({ auth, body }) => ok(await present(await verify.start(auth, body.service_id, body.to, body.channel ?? "sms")), "Code sent"),
      {
        ...json(StartBody),
        response: { 200: Envelope(Verification), ...errorResponses(404) },
        auth: "apiKey",
        scope: "send",
        detail: {
          operationId: "startVerification",
          summary: "Send a one-time code",
          description:
            "A random code goes to `to` at once, urgent (ahead of queues and pacing, outside quiet hours), through the service's pool or the workspace's routing; `channel` " +
            "whatsapp sends it with the approved authentication template. A second start within the code's life sends the same code again. The message keeps the code " +
            "only until its channel has taken it; after that its text, events and thread show it masked. Refused before anything is sent or charged: 429 " +
            "`too_many_verifications` after `per_number_limit` codes to the number in 10 minutes; 403 `prefix_blocked` once the number's country calling code has had " +
            "`prefix_hourly_budget` codes in the hour.",
        },
      },
    )
    .post(
      "/v1/api/verify/check",
      async ({ auth, body }) => {
        if (body.to === undefined && body.verification_id === undefined)
          throw new AppError("validation_error", "Give to or verification_id", { field: "to" });
        const by = body.verification_id !== undefined ? { verificationId: body.verification_id } : { to: body.to };
        const checked = await verify.check(auth, body.service_id, by, body.code);
        return ok(await present(checked.verification, checked.valid), checked.valid ? "Code approved" : "Wrong code");
      },
      {
        ...json(CheckBody),
        response: { 200: Envelope(Verification), ...errorResponses(404) },
        auth: "apiKey",
        scope: "send",
        detail: {
          operationId: "checkVerification",
          summary: "Check a one-time code",
          description:
            "The right code: `approved`, `valid` true. A wrong one: 200 with `valid` false, still `pending`; after 5 wrong codes, 429 `too_many_checks`. " +
            "No pending verification for the number (approved, canceled, expired, or none): 404.",
        },
      },
    )
    .get(
      "/v1/api/verify/:verification_id",
      async ({ auth, params }) =>
        ok(await present(await verify.requireVerification(auth.workspaceId, params.verification_id)), "Verification fetched"),
      {
        params: t.Object({ verification_id: t.Integer({ minimum: 1 }) }),
        response: { 200: Envelope(Verification), ...errorResponses(404) },
        auth: "apiKey",
        scope: "messages:read",
        detail: {
          operationId: "getVerification",
          summary: "Get a verification",
          description: "Its status (a pending one past its life reads expired), checks left and sends; never its code.",
        },
      },
    )
    .post(
      "/v1/api/verify/update",
      async ({ auth, body }) =>
        ok(await present(await verify.setStatus(auth.workspaceId, body.verification_id, body.status)), "Verification updated"),
      {
        ...json(UpdateBody),
        response: { 200: Envelope(Verification), ...errorResponses(404, 409) },
        auth: "apiKey",
        scope: "send",
        detail: {
          operationId: "updateVerification",
          summary: "Cancel or approve a verification",
          description: "Of a pending one; another: 409 `not_cancellable`.",
        },
      },
    );
}
