// Verify as Twilio's Verify v2 API, under /v2/Services: form bodies in, Twilio's JSON and error
// body out, HTTP Basic with the account SID and auth token or an API key and secret. The same
// verifications as Pigeon's own /v1/api/verify (routes.ts).
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { documented } from "../../http/route-doc";
import { AppError } from "../../core/errors";
import { authOf } from "../../http/foundation";
import { VERIFY_BASE } from "../twilio/errors";
import { idOfSid, sidOf } from "../twilio/resource";
import type { SendRow, ServiceRow, VerificationRow } from "./repository";
import type { VerifyRoutesDeps } from "./routes";
import { CODE_LENGTHS, TTL_SECONDS, type ServiceInput } from "./service";

/** A Verify service's form fields, as the document shows them: Twilio's, then Pigeon's own. */
const SERVICE_FORM = {
  type: "object",
  required: ["FriendlyName"],
  properties: {
    FriendlyName: { type: "string", maxLength: 60, description: "Named in the code's message", examples: ["Acme"] },
    CodeLength: { type: "integer", minimum: 4, maximum: 10, description: "Digits (default 6)" },
    Ttl: { type: "integer", minimum: 60, maximum: 86400, description: "Pigeon's: a code's life in seconds (default 600)" },
    MessagingServiceSid: { type: "string", description: "Pigeon's: MG…, the pool codes go through" },
    PerNumberLimit: {
      type: "integer",
      minimum: 1,
      maximum: 100,
      description: "Pigeon's: codes a number may get in 10 minutes (default 5)",
    },
    PrefixHourlyBudget: {
      type: "integer",
      minimum: 1,
      maximum: 100000,
      description: "Pigeon's: codes one country calling code may get in an hour (default 100)",
    },
    ChatappTemplateId: { type: "integer", description: "Pigeon's: the approved authentication template for the whatsapp channel" },
  },
};

const VERIFICATION_FORM = {
  type: "object",
  required: ["To"],
  properties: {
    To: { type: "string", description: "The number, E.164", examples: ["+14155552671"] },
    Channel: { type: "string", enum: ["sms", "whatsapp"], description: "sms (default), or whatsapp: the chat-app channel" },
  },
};

const STATUS_FORM = {
  type: "object",
  required: ["Status"],
  properties: { Status: { type: "string", enum: ["canceled", "approved"] } },
};

const CHECK_FORM = {
  type: "object",
  required: ["Code"],
  properties: {
    Code: { type: "string", description: "The code the person typed", examples: ["123456"] },
    To: { type: "string", description: "The number whose pending verification is checked" },
    VerificationSid: { type: "string", description: "VE…: instead of To" },
  },
};

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** Twilio's names of a service's fields, and Pigeon's. */
function twilioService(accountSid: string | null, s: ServiceRow) {
  const sid = sidOf("VA", s.id);
  const url = `${VERIFY_BASE}/${sid}`;
  return {
    sid,
    account_sid: accountSid,
    friendly_name: s.name,
    code_length: s.codeLength,
    lookup_enabled: false,
    psd2_enabled: false,
    skip_sms_to_landlines: false,
    dtmf_input_required: false,
    tts_name: null,
    do_not_share_warning_enabled: false,
    custom_code_enabled: false,
    push: {},
    totp: {},
    default_template_sid: null,
    verify_event_subscription_enabled: false,
    // Pigeon's own: the code's life, the pool it goes through, the fraud limits.
    ttl: s.ttlSeconds,
    messaging_service_sid: s.poolId === null ? null : sidOf("MG", s.poolId),
    per_number_limit: s.perNumberLimit,
    prefix_hourly_budget: s.prefixHourlyBudget,
    chatapp_template_id: s.chatappTemplateId,
    date_created: iso(s.createdAt),
    date_updated: iso(s.updatedAt),
    url,
    links: { verifications: `${url}/Verifications`, verification_checks: `${url}/VerificationCheck` },
  };
}

function twilioVerification(accountSid: string | null, v: VerificationRow, sends: SendRow[], valid = v.status === "approved") {
  const sid = sidOf("VE", v.id);
  return {
    sid,
    service_sid: sidOf("VA", v.serviceId),
    account_sid: accountSid,
    to: v.recipient,
    channel: v.channel,
    status: v.status,
    valid,
    lookup: {},
    amount: null,
    payee: null,
    send_code_attempts: sends.map((a, i) => ({
      attempt_sid: `VL${(v.id * 100 + i).toString(16).padStart(32, "0")}`,
      channel: a.channel,
      time: iso(a.at),
    })),
    date_created: iso(v.createdAt),
    date_updated: iso(v.updatedAt),
    sna: null,
    url: `${VERIFY_BASE}/${sidOf("VA", v.serviceId)}/Verifications/${sid}`,
  };
}

/** A form field as one string (the first of a repeated one). */
function param(body: unknown, name: string): string | undefined {
  const v = (body as Record<string, unknown> | null)?.[name];
  if (v === undefined || v === null) return undefined;
  return Array.isArray(v) ? String(v[0]) : String(v);
}
function integerParam(body: unknown, name: string, field: string): number | undefined {
  const v = param(body, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d{1,9}$/.test(v.trim()) || !Number.isSafeInteger(n))
    throw new AppError("validation_error", `${name} must be a whole number`, { field });
  return n;
}
/** The service input of a Twilio form: its own fields and Pigeon's additions. */
function serviceForm(body: unknown): ServiceInput {
  const input: ServiceInput = {};
  const name = param(body, "FriendlyName");
  if (name !== undefined) input.name = name;
  const length = integerParam(body, "CodeLength", "code_length");
  if (length !== undefined) input.code_length = length;
  const ttl = integerParam(body, "Ttl", "ttl_seconds");
  if (ttl !== undefined) input.ttl_seconds = ttl;
  const perNumber = integerParam(body, "PerNumberLimit", "per_number_limit");
  if (perNumber !== undefined) input.per_number_limit = perNumber;
  const budget = integerParam(body, "PrefixHourlyBudget", "prefix_hourly_budget");
  if (budget !== undefined) input.prefix_hourly_budget = budget;
  const template = integerParam(body, "ChatappTemplateId", "chatapp_template_id");
  if (template !== undefined) input.chatapp_template_id = template;
  const mg = param(body, "MessagingServiceSid");
  if (mg !== undefined) {
    const pool = idOfSid("MG", mg);
    if (pool === null) throw new AppError("not_found", `The Messaging Service ${mg} was not found.`, { field: "pool_id" });
    input.pool_id = pool;
  }
  return input;
}

const notFound = (what: string) => new AppError("not_found", `The requested resource ${what} was not found`);
const Form = t.Record(t.String(), t.Unknown(), { description: "Form fields (application/x-www-form-urlencoded)" });
const TwilioResource = (description: string) => t.Record(t.String(), t.Unknown(), { description });
const ServiceParams = t.Object({ ServiceSid: t.String({ description: "VA…" }) });

export function twilioVerifyRoutes(s: VerifyRoutesDeps) {
  const { verify, twilio } = s;
  const account = (request: Request) => twilio.accountSidOf(request) || null;
  const serviceOf = async (request: Request, sid: string) => {
    const id = idOfSid("VA", sid);
    if (id === null) throw notFound(`${VERIFY_BASE}/${sid}`);
    try {
      return await verify.requireService(authOf(request).workspaceId, id);
    } catch (error) {
      if (error instanceof AppError && error.code === "not_found") throw notFound(`${VERIFY_BASE}/${sid}`);
      throw error;
    }
  };
  const verificationOf = async (request: Request, service: ServiceRow, sid: string) => {
    const id = idOfSid("VE", sid);
    const v = id === null ? null : await verify.requireVerification(authOf(request).workspaceId, id, service.id).catch(() => null);
    if (!v) throw notFound(`${VERIFY_BASE}/${sidOf("VA", service.id)}/Verifications/${sid}`);
    return v;
  };
  const shown = async (request: Request, v: VerificationRow, valid?: boolean) =>
    twilioVerification(account(request), v, await verify.sendsOf(v.id), valid);

  return new Elysia({ prefix: VERIFY_BASE, tags: ["Twilio compatible"] })
    .use(declaredAuth())
    .post(
      "",
      async ({ request, body, set }) => {
        const input = serviceForm(body);
        if (input.name === undefined) throw new AppError("validation_error", "FriendlyName is required", { field: "name" });
        set.status = 201;
        return twilioService(account(request), await verify.createService(authOf(request).workspaceId, input));
      },
      {
        body: Form,
        auth: "twilio",
        scope: "admin",
        response: { 201: TwilioResource("Twilio's Verify Service resource") },
        detail: {
          operationId: "twilioCreateVerifyService",
          ...documented({ form: SERVICE_FORM }),
          summary: "Create a Verify service (Twilio's Verify v2)",
          description:
            `\`FriendlyName\` (named in the code's message), \`CodeLength\` (${CODE_LENGTHS.min}–${CODE_LENGTHS.max}, default ${CODE_LENGTHS.default}); Pigeon's own: ` +
            `\`Ttl\` (a code's life in seconds, ${TTL_SECONDS.min}–${TTL_SECONDS.max}, default ${TTL_SECONDS.default}), \`MessagingServiceSid\` (MG…: the pool codes go through), ` +
            "`PerNumberLimit` (codes a number may get in 10 minutes, default 5), `PrefixHourlyBudget` (codes a country calling code may get in an hour, default 100), " +
            "`ChatappTemplateId` (the approved authentication template that carries codes on the whatsapp channel). Errors: 60200 (a bad parameter), 20404.",
        },
      },
    )
    .get(
      "",
      async ({ request }) => {
        const list = (await verify.services(authOf(request).workspaceId)).map((x) => twilioService(account(request), x));
        return {
          services: list,
          meta: {
            page: 0,
            page_size: Math.max(list.length, 1),
            first_page_url: `${VERIFY_BASE}?PageSize=50&Page=0`,
            previous_page_url: null,
            url: `${VERIFY_BASE}?PageSize=50&Page=0`,
            next_page_url: null,
            key: "services",
          },
        };
      },
      {
        auth: "twilio",
        scope: "admin",
        response: { 200: t.Object({ services: t.Array(TwilioResource("A Verify Service")), meta: t.Record(t.String(), t.Unknown()) }) },
        detail: {
          operationId: "twilioListVerifyServices",
          summary: "List Verify services (Twilio's Verify v2)",
          description: "All of the workspace's services (at most 25) on one page.",
        },
      },
    )
    .get("/:ServiceSid", async ({ request, params }) => twilioService(account(request), await serviceOf(request, params.ServiceSid)), {
      params: ServiceParams,
      auth: "twilio",
      scope: "admin",
      response: { 200: TwilioResource("Twilio's Verify Service resource") },
      detail: { operationId: "twilioFetchVerifyService", summary: "Fetch a Verify service (Twilio's Verify v2)" },
    })
    .post(
      "/:ServiceSid",
      async ({ request, params, body }) => {
        const service = await serviceOf(request, params.ServiceSid);
        return twilioService(account(request), await verify.updateService(service.workspaceId, service.id, serviceForm(body)));
      },
      {
        params: ServiceParams,
        body: Form,
        auth: "twilio",
        scope: "admin",
        response: { 200: TwilioResource("Twilio's Verify Service resource") },
        detail: {
          operationId: "twilioUpdateVerifyService",
          ...documented({ form: { ...SERVICE_FORM, required: [] } }),
          summary: "Update a Verify service (Twilio's Verify v2)",
          description: "The fields of its create; those not given stay.",
        },
      },
    )
    .delete(
      "/:ServiceSid",
      async ({ request, params, set }) => {
        const service = await serviceOf(request, params.ServiceSid);
        await verify.removeService(service.workspaceId, service.id);
        set.status = 204;
        return "";
      },
      {
        params: ServiceParams,
        auth: "twilio",
        scope: "admin",
        response: { 204: t.String({ description: "Deleted" }) },
        detail: {
          operationId: "twilioDeleteVerifyService",
          summary: "Delete a Verify service (Twilio's Verify v2)",
          description: "With its verifications.",
        },
      },
    )
    .post(
      "/:ServiceSid/Verifications",
      async ({ request, params, body, set }) => {
        const service = await serviceOf(request, params.ServiceSid);
        const to = param(body, "To");
        if (!to) throw new AppError("validation_error", "To is required", { field: "to" });
        if (param(body, "CustomCode") !== undefined)
          throw new AppError("validation_error", "CustomCode is not supported: Pigeon makes every code itself", { field: "custom_code" });
        const v = await verify.start(authOf(request), service.id, to, param(body, "Channel") ?? "sms");
        set.status = 201;
        return shown(request, v);
      },
      {
        params: ServiceParams,
        body: Form,
        auth: "twilio",
        scope: "send",
        response: { 201: TwilioResource("Twilio's Verification resource (status pending)") },
        detail: {
          operationId: "twilioCreateVerification",
          ...documented({ form: VERIFICATION_FORM }),
          summary: "Start a verification (Twilio's Verify v2)",
          description:
            "`To` (E.164) and `Channel` (`sms`, default, or `whatsapp`: the chat-app channel, through an approved authentication template). A random code is sent at once, " +
            "urgent (ahead of queues and pacing, outside quiet hours), through the service's pool or the workspace's routing; a new verification to the same number within the " +
            "code's life sends the same code again. Refused before anything is sent or charged: 60203 (429) after `PerNumberLimit` codes to the number in 10 minutes, " +
            "60410 (403) once the number's country calling code has had `PrefixHourlyBudget` codes in the hour; 60200 for a bad parameter, 21211 for a bad number.",
        },
      },
    )
    .get(
      "/:ServiceSid/Verifications/:Sid",
      async ({ request, params }) => shown(request, await verificationOf(request, await serviceOf(request, params.ServiceSid), params.Sid)),
      {
        params: t.Object({ ServiceSid: t.String(), Sid: t.String({ description: "VE…" }) }),
        auth: "twilio",
        scope: "messages:read",
        response: { 200: TwilioResource("Twilio's Verification resource") },
        detail: { operationId: "twilioFetchVerification", summary: "Fetch a verification (Twilio's Verify v2)" },
      },
    )
    .post(
      "/:ServiceSid/Verifications/:Sid",
      async ({ request, params, body }) => {
        const service = await serviceOf(request, params.ServiceSid);
        const v = await verificationOf(request, service, params.Sid);
        const status = param(body, "Status");
        if (status !== "canceled" && status !== "approved")
          throw new AppError("validation_error", "Status must be canceled or approved", { field: "status" });
        return shown(request, await verify.setStatus(service.workspaceId, v.id, status, service.id));
      },
      {
        params: t.Object({ ServiceSid: t.String(), Sid: t.String({ description: "VE…" }) }),
        body: Form,
        auth: "twilio",
        scope: "send",
        response: { 200: TwilioResource("Twilio's Verification resource") },
        detail: {
          operationId: "twilioUpdateVerification",
          ...documented({ form: STATUS_FORM }),
          summary: "Cancel or approve a verification (Twilio's Verify v2)",
          description: "`Status=canceled` or `Status=approved`, of a pending verification (else 20009).",
        },
      },
    )
    .post(
      "/:ServiceSid/VerificationCheck",
      async ({ request, params, body }) => {
        const service = await serviceOf(request, params.ServiceSid);
        const code = param(body, "Code");
        if (!code) throw new AppError("validation_error", "Code is required", { field: "code" });
        const verificationSid = param(body, "VerificationSid");
        const to = param(body, "To");
        if (!verificationSid && !to) throw new AppError("validation_error", "Give To or VerificationSid", { field: "to" });
        const verificationId = verificationSid === undefined ? undefined : (idOfSid("VE", verificationSid) ?? -1);
        const checked = await verify
          .check(authOf(request), service.id, verificationId !== undefined ? { verificationId } : { to }, code)
          .catch((error) => {
            if (error instanceof AppError && error.code === "not_found")
              throw notFound(`${VERIFY_BASE}/${params.ServiceSid}/VerificationCheck`);
            throw error;
          });
        const shownCheck = await shown(request, checked.verification, checked.valid);
        const { send_code_attempts: _, lookup: __, url: ___, ...rest } = shownCheck;
        return { ...rest, sna_attempts_error_codes: [] };
      },
      {
        params: ServiceParams,
        body: Form,
        auth: "twilio",
        scope: "send",
        response: { 200: TwilioResource("Twilio's VerificationCheck resource: status approved (valid true) or pending (valid false)") },
        detail: {
          operationId: "twilioCheckVerification",
          ...documented({ form: CHECK_FORM }),
          summary: "Check a code (Twilio's Verify v2)",
          description:
            "`Code`, and `To` or `VerificationSid`. The right code: `approved`, `valid` true. A wrong one: still `pending`, `valid` false; after 5 wrong codes, 60202 (429). " +
            "No pending verification (approved, canceled, expired or none): 20404.",
        },
      },
    );
}
