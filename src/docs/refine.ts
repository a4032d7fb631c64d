// What Elysia's generator cannot know, added to its document: named models, the headers and
// error answers the foundation adds to every route, the phone app's and the platforms'
// credentials, and an example for each error. What is one route's own (its operation id, its
// auth, its error statuses) is declared beside the route, in its options.
import type { RouteNotes } from "../http/route-doc";
import { isSmsGatePath } from "../modules/smsgate/auth";
import { isTwilioPath, isVerifyPath, twilioError } from "../modules/twilio/errors";
import { ERROR_STATUS } from "../core/errors";
import { EXAMPLE_MESSAGES } from "./error-examples";

// biome-ignore lint/suspicious/noExplicitAny: the framework's OpenAPI document, walked and rewritten key by key
type Json = Record<string, any>;

/**
 * Shared schemas, each named after the operation whose 200 response shows it and the walk to it
 * from that response's `data` (property names; "items" steps into an array). Every identical copy
 * elsewhere in the document becomes a `$ref` to it.
 */
const MODELS: [name: string, from: string, walk: string[]][] = [
  ["NotificationDetail", "get /v1/api/notification/{notification_id}", []],
  ["Notification", "get /v1/api/notification/list", ["notifications", "items"]],
  ["Device", "get /v1/api/device/list", ["devices", "items"]],
  ["Contact", "get /v1/api/contact/list", ["contacts", "items"]],
  ["ContactType", "get /v1/api/contact/types", ["types", "items"]],
  ["Template", "get /v1/api/template/list", ["templates", "items"]],
  ["Webhook", "get /v1/api/webhook/list", ["webhooks", "items"]],
  ["WebhookDelivery", "get /v1/api/webhook/{webhook_id}/deliveries", ["deliveries", "items"]],
  ["Thread", "get /v1/api/thread/list", ["threads", "items"]],
  ["Message", "get /v1/api/thread/{thread_id}/messages", ["messages", "items"]],
  ["SendResult", "post /v1/notification/sms/api/send", []],
  ["RegisteredDevice", "post /v1/api/device/batch/register", ["devices", "items"]],
  ["Pagination", "get /v1/api/device/list", ["pagination"]],
];

export const SECURITY_SCHEMES = {
  ApiKeyBearer: { type: "http", scheme: "bearer", description: "The API key as a Bearer token; send X-API-SECRET with it" },
  ApiKeyHeader: {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "The API key (alternative to Bearer); send X-API-SECRET with it",
  },
  ApiSecret: { type: "apiKey", in: "header", name: "X-API-SECRET", description: "The API secret; always required with the key" },
  PhoneDeviceToken: {
    type: "http",
    scheme: "bearer",
    description: "Companion app only: the device token a phone received when it registered (POST /mobile/v1/device)",
  },
  PhonePairingToken: {
    type: "http",
    scheme: "bearer",
    description:
      "Companion app only: the workspace's pairing token (GET /v1/api/device/pairing), to register a phone. `Code <one-time code>` works too.",
  },
  PhoneLogin: { type: "http", scheme: "basic", description: "Companion app only: the app login and password handed out at registration" },
  SmsGateBasic: {
    type: "http",
    scheme: "basic",
    description: "SMSGate-compatible API: an API key as the user name and its secret as the password (every scope)",
  },
  TwilioBasic: {
    type: "http",
    scheme: "basic",
    description:
      "Twilio-compatible API: the workspace's account SID and auth token (`pigeon twilio credentials`), or an API key and its secret, as Twilio's libraries send them",
  },
  SmsGateBearer: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "SMSGate-compatible API: an access token from POST /3rdparty/v1/auth/token, limited to its scopes (or, for /auth/token/refresh, the refresh token)",
  },
};

const STATUS_TEXT: Record<number, string> = {
  400: "Invalid parameters (validation_error, invalid_json and the route's own codes)",
  401: "Missing or invalid credentials (unauthorized)",
  402: "Insufficient credits or free tier exhausted",
  403: "Key disabled, account suspended, or forbidden by a rule",
  404: "Not found in this workspace (not_found)",
  405: "Wrong method for this path (method_not_allowed); `Allow` lists the right ones",
  409: "Conflict with the current state",
  413: "Body larger than the server accepts (payload_too_large)",
  429: "Rate limit exceeded (rate_limited); see Retry-After",
  500: "Internal error, retry later (internal_error)",
  503: "A platform or dependency is unavailable (service_unavailable)",
};

/** Every code in the error table with the status it answers, as named examples. */
function errorExamples(status: number, phone: boolean): Json | undefined {
  const codes = Object.entries(ERROR_STATUS)
    .filter(([, s]) => s === status)
    .map(([code]) => code);
  if (codes.length === 0) return undefined;
  return Object.fromEntries(
    codes.map((code) => {
      const [message, extra = {}] = EXAMPLE_MESSAGES[code] ?? [code.replace(/_/g, " ")];
      const data = { error_code: code, ...extra };
      return [code, { summary: code, value: phone ? { message, code: status, data } : { status_id: status, message, data } }];
    }),
  );
}

const HEADERS = {
  "X-RateLimit-Limit": { description: "Requests allowed per minute for this key", schema: { type: "integer" } },
  "X-RateLimit-Remaining": { description: "Requests left in the current minute", schema: { type: "integer" } },
  "X-RateLimit-Reset": { description: "When the current minute ends, in unix seconds", schema: { type: "integer" } },
  "Retry-After": { description: "Seconds to wait before trying again", schema: { type: "integer" } },
  "Idempotent-Replayed": {
    description: "`true` when this is the stored first reply to an earlier request with the same Idempotency-Key",
    schema: { type: "string", enum: ["true"] },
  },
  Allow: { description: "The methods this path accepts", schema: { type: "string" }, example: "POST" },
};
const headerRef = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });

const PHONE_ERROR = {
  type: "object",
  description: "The companion app's own error shape; `code` mirrors the HTTP status",
  required: ["message", "code", "data"],
  properties: {
    message: { type: "string" },
    code: { type: "integer" },
    data: { type: "object", required: ["error_code"], properties: { error_code: { type: "string" } }, additionalProperties: true },
  },
};

const SMSGATE_ERROR = {
  ...PHONE_ERROR,
  description:
    "SMSGate's error shape, so its clients read it unchanged; `code` mirrors the HTTP status and `data.error_code` is Pigeon's code",
};

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Json)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function forEachOperation(doc: Json, fn: (key: string, op: Json, path: string, method: string) => void) {
  for (const [path, methods] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(methods as Json)) fn(`${method} ${path}`, op, path, method);
  }
}

function successData(doc: Json, key: string): Json | undefined {
  const [method, path] = key.split(" ");
  return doc.paths[path]?.[method]?.responses?.["200"]?.content?.["application/json"]?.schema?.properties?.data;
}

/** Registers the named models and replaces every identical inline copy with a $ref. */
function nameModels(doc: Json) {
  const schemas = doc.components.schemas as Json;
  const found: [string, string][] = [];
  for (const [name, from, walk] of MODELS) {
    let node = successData(doc, from);
    for (const step of walk) node = step === "items" ? node?.items : node?.properties?.[step];
    if (!node || node.$ref) throw new Error(`OpenAPI model ${name}: nothing at ${from} → data.${walk.join(".")}`);
    const schema = structuredClone(node);
    schema.title ??= name;
    schemas[name] = schema;
    found.push([canonical(node), name]);
  }
  const byShape = new Map(found);
  const replace = (node: unknown, self?: string): unknown => {
    if (Array.isArray(node)) return node.map((n) => replace(n));
    if (!node || typeof node !== "object") return node;
    const name = byShape.get(canonical(node));
    if (name && name !== self) return { $ref: `#/components/schemas/${name}` };
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, replace(v)]));
  };
  doc.paths = replace(doc.paths);
  for (const [name, schema] of Object.entries(schemas)) {
    const { title, ...rest } = schema as Json;
    // Compare without the title we added, so a model nested in another is found too.
    schemas[name] = { ...(replace(rest, name) as Json), ...(title ? { title } : {}) };
  }
}

/** `nullable` is OpenAPI 3.0; in 3.1 the type list (or anyOf) already carries null. */
function dropNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(dropNullable);
  if (!node || typeof node !== "object") return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "nullable") continue;
    out[k] = dropNullable(v);
  }
  if ((node as Json).nullable === true) {
    const hasNull =
      (Array.isArray(out.type) && out.type.includes("null")) ||
      out.type === "null" ||
      (Array.isArray(out.anyOf) && out.anyOf.some((b: Json) => b.type === "null"));
    if (!hasNull) {
      if (typeof out.type === "string") out.type = [out.type, "null"];
      else if (Array.isArray(out.anyOf)) out.anyOf.push({ type: "null" });
      else return { anyOf: [out, { type: "null" }] };
    }
  }
  return out;
}

function errorResponse(status: number, phone: boolean, smsgate = false): Json {
  const examples = errorExamples(status, phone || smsgate);
  const schema = smsgate ? "SmsGateError" : phone ? "PhoneError" : "Error";
  return {
    description: STATUS_TEXT[status] ?? `Error ${status}`,
    content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` }, ...(examples ? { examples } : {}) } },
  };
}

/** Twilio's error body, as its libraries read it. */
const TWILIO_ERROR = {
  type: "object",
  description: "Twilio's error shape, so its libraries read it unchanged: Twilio's numeric `code` and the HTTP `status`",
  required: ["code", "message", "more_info", "status"],
  properties: {
    code: { type: "integer", examples: [21211] },
    message: { type: "string" },
    more_info: { type: "string" },
    status: { type: "integer" },
  },
};

/** The errors a Twilio-compatible operation answers, each with examples as Twilio writes them. */
const TWILIO_EXAMPLES: Record<number, [string | number, string][]> = {
  400: [
    ["invalid_phone_number", "The 'To' number 12 is not a valid phone number."],
    ["message_required", "Message body is required."],
    ["recipient_opted_out", "Recipient +14155552671 has opted out of this workspace's messages"],
    [21606, "The From phone number +19995550000 is not a valid, SMS-capable number of this account."],
    [21609, "The StatusCallback URL must use http or https."],
  ],
  401: [["unauthorized", "Authenticate with the account SID and its auth token"]],
  404: [["not_found", "The requested resource /2010-04-01/Accounts/AC…/Messages/SM….json was not found"]],
  405: [["method_not_allowed", "Method PUT is not allowed here"]],
  413: [["payload_too_large", "Request body is larger than the limit"]],
  429: [["rate_limited", "Too many requests: the key's limit is 60 a minute"]],
};

/** Verify's own errors, beside those above, on its paths. */
const VERIFY_EXAMPLES: Record<number, [string | number, string][]> = {
  400: [["validation_error", "Channel voice is not supported: sms or whatsapp"]],
  403: [
    ["prefix_blocked", "Verifications to +44 numbers are blocked for now: this service's budget of 100 an hour for the prefix is spent"],
  ],
  429: [
    ["too_many_verifications", "Max send attempts reached: at most 5 codes go to a number in 10 minutes"],
    ["too_many_checks", "Max check attempts reached: 5 wrong codes end a verification"],
  ],
};

function refineTwilioOperation(key: string, op: Json, notes: RouteNotes | undefined) {
  if (op.requestBody)
    op.requestBody = {
      required: true,
      description: "Form fields, as Twilio's libraries send them",
      content: { "application/x-www-form-urlencoded": { schema: notes?.form ?? { type: "object" } } },
    };
  op.responses ??= {};
  const path = key.slice(key.indexOf(" ") + 1);
  const verify = isVerifyPath(path);
  const statuses = [400, 401, 404, 405, 429, ...(op.requestBody ? [413] : []), ...(verify ? [403] : [])];
  for (const status of statuses) {
    const examples = Object.fromEntries(
      [...(TWILIO_EXAMPLES[status] ?? []), ...(verify ? (VERIFY_EXAMPLES[status] ?? []) : [])].map(([code, message]) => {
        const { body } = twilioError(status, code, message, path);
        return [String(body.code), { summary: String(code), value: body }];
      }),
    );
    op.responses[status] = {
      description: STATUS_TEXT[status] ?? `Error ${status}`,
      content: { "application/json": { schema: { $ref: "#/components/schemas/TwilioError" }, examples } },
      ...(status === 405 ? { headers: { Allow: headerRef("Allow") } } : {}),
    };
  }
}

function refineOperation(key: string, op: Json, path: string, notes: RouteNotes | undefined) {
  if (isTwilioPath(path)) return refineTwilioOperation(key, op, notes);
  const phone = path.startsWith("/mobile/");
  const smsgate = isSmsGatePath(path);
  // The route's declared auth left no security of its own on API-key operations (they inherit the document's).
  const apiKey = op.security === undefined;
  // SMSGate's API checks its credentials and counts requests as /v1 does, where its routes declare credentials.
  const keyed = apiKey || (smsgate && op.security.length > 0);
  // A phone route that also takes callers without credentials answers none of them 401.
  const anyone = (op.security ?? []).some((requirement: Json) => Object.keys(requirement).length === 0);
  op.responses ??= {};
  const responses = op.responses as Json;

  // What the foundation answers on any route: a wrong method, a body over the limit, and for
  // API-key routes the auth and rate-limit errors.
  const statuses = new Set([405]);
  if (op.requestBody) statuses.add(413);
  if (keyed) for (const s of [400, 401, 403, 429]) statuses.add(s);
  if (phone && !anyone) statuses.add(401);
  for (const s of statuses) responses[s] ??= {};

  for (const [status, response] of Object.entries(responses) as [string, Json][]) {
    const code = Number(status);
    if (code < 400) continue;
    const schema = response.content?.["application/json"]?.schema;
    const ours = !response.content || schema?.$ref === "#/components/schemas/Error" || (phone && schema?.required?.includes("code"));
    if (ours)
      responses[status] = {
        ...errorResponse(code, phone, smsgate),
        description: phone && response.description ? response.description : errorResponse(code, phone).description,
      };
  }
  if (responses["405"]) responses["405"].headers = { Allow: headerRef("Allow") };

  if (keyed) {
    for (const [status, response] of Object.entries(responses) as [string, Json][]) {
      // 401 and 403 are decided before the limiter counts the request; 413 before both.
      if (["401", "403", "413"].includes(status)) continue;
      response.headers = {
        ...response.headers,
        "X-RateLimit-Limit": headerRef("X-RateLimit-Limit"),
        "X-RateLimit-Remaining": headerRef("X-RateLimit-Remaining"),
        "X-RateLimit-Reset": headerRef("X-RateLimit-Reset"),
      };
    }
    responses["429"].headers = { ...responses["429"].headers, "Retry-After": headerRef("Retry-After") };
  }

  if (notes?.idempotent) {
    op.parameters = [
      ...(op.parameters ?? []),
      {
        name: "Idempotency-Key",
        in: "header",
        required: false,
        description:
          "Makes a retry safe: the same key and body within 24 hours return the first reply and create nothing; the same key with another body is 409.",
        schema: { type: "string", minLength: 1, maxLength: 255 },
        example: "order-1234-reminder",
      },
    ];
    for (const status of ["200"])
      if (responses[status])
        responses[status].headers = { ...responses[status].headers, "Idempotent-Replayed": headerRef("Idempotent-Replayed") };
  }

  const signed = notes?.signedBy;
  if (signed)
    op.parameters = [
      ...(op.parameters ?? []),
      { name: signed.name, in: "header", required: true, description: signed.description, schema: { type: "string" } },
    ];
}

/**
 * Routes the framework serves under another shape than Twilio documents them: a message instance
 * is one route matching `SM….json` (a parameter cannot end in a literal there), which Twilio's
 * libraries and a generated client call as `/Messages/{Sid}.json`.
 */
const DOCUMENTED_PATHS: Record<string, { path: string; param: [from: string, to: string] }> = {
  "/2010-04-01/Accounts/{AccountSid}/Messages/{file}": {
    path: "/2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json",
    param: ["file", "Sid"],
  },
};

/** A served route's path (`:name` parameters) as /openapi.json documents it. */
export function documentedPathOf(routePath: string): string {
  const path = routePath.replace(/:([^/]+)/g, "{$1}");
  return DOCUMENTED_PATHS[path]?.path ?? path;
}

const sidPattern = (prefix: string) => ({ type: "string", pattern: `^${prefix}[0-9a-f]{32}$` });
/** Twilio's path parameters: which SID each is, by name (a `Sid` by the resource it names). */
function twilioParameter(path: string, name: string): { schema: Json; description: string } | null {
  if (name === "AccountSid") return { schema: sidPattern("AC"), description: "The account SID (`pigeon twilio credentials`)" };
  if (name === "ServiceSid") return { schema: sidPattern("VA"), description: "The Verify service's SID" };
  if (name === "Sid" && path.includes("/Messages/")) return { schema: sidPattern("SM"), description: "The message's SID" };
  if (name === "Sid" && path.includes("/Verifications/")) return { schema: sidPattern("VE"), description: "The verification's SID" };
  return null;
}

/** Renames DOCUMENTED_PATHS and gives Twilio's path parameters their SIDs' patterns. */
function documentTwilioPaths(doc: Json) {
  for (const [served, { path, param }] of Object.entries(DOCUMENTED_PATHS)) {
    if (!doc.paths[served]) continue;
    doc.paths[path] = doc.paths[served];
    delete doc.paths[served];
    for (const op of Object.values(doc.paths[path] as Json))
      for (const p of (op as Json).parameters ?? []) if (p.in === "path" && p.name === param[0]) p.name = param[1];
  }
  forEachOperation(doc, (_key, op, path) => {
    if (!isTwilioPath(path)) return;
    for (const p of op.parameters ?? []) {
      const known = p.in === "path" ? twilioParameter(path, p.name) : null;
      if (!known) continue;
      p.schema = known.schema;
      p.description = known.description;
    }
  });
}

/** The finishing pass over the generated document. */
export function refineDocument(doc: Json, publicUrl: string | null | undefined, notes = new Map<string, RouteNotes>()): Json {
  const out = dropNullable(doc) as Json;
  documentTwilioPaths(out);
  out.servers = [
    ...(publicUrl ? [{ url: publicUrl.replace(/\/+$/, ""), description: "This server's public URL (PIGEON_PUBLIC_URL)" }] : []),
    { url: "/", description: "The server this document was loaded from" },
  ];
  nameModels(out);
  out.components.schemas.PhoneError = PHONE_ERROR;
  out.components.schemas.SmsGateError = SMSGATE_ERROR;
  out.components.schemas.TwilioError = TWILIO_ERROR;
  out.components.headers = HEADERS;
  out.components.securitySchemes = SECURITY_SCHEMES;
  forEachOperation(out, (key, op, path) => refineOperation(key, op, path, notes.get(key)));
  return out;
}
