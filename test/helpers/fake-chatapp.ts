// A local stand-in for the chat-app platform (the WhatsApp Business Cloud API on Meta's Graph API),
// run in-process by tests. It speaks the wire format written down in
// /work/shared/reference/chatapp-cloud-api.md: send bodies are checked against Meta's own OpenAPI
// description, refusals come in Graph's error shapes with the platform's codes and HTTP statuses, and
// webhooks are signed the way Meta signs them. The adapter under test therefore meets the same bytes
// here that it will meet in production, including the awkward ones (async failures, out-of-order
// statuses, paging by absolute URL, pacing limits).
import { createHash, createHmac, randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ErrorObject, ValidateFunction } from "ajv";
import Ajv2019 from "ajv/dist/2019";
import addFormats from "ajv-formats";
import { parse as parseYaml } from "yaml";

// ---------------------------------------------------------------------------------------------
// Meta's OpenAPI description, loaded once per process
// ---------------------------------------------------------------------------------------------

const OPENAPI_FILE = "shared/reference/whatsapp-openapi/business-messaging-api_v23.0.yaml";
const SEND_PATH = "/{Version}/{Phone-Number-ID}/messages";

/** The yaml next to this repo, or the shared copy when the repo is checked out elsewhere. */
export function defaultOpenApiPath(): string {
  if (process.env.CHATAPP_OPENAPI_PATH) return process.env.CHATAPP_OPENAPI_PATH;
  const beside = resolve(import.meta.dir, "../../..", OPENAPI_FILE);
  return existsSync(beside) ? beside : `/work/${OPENAPI_FILE}`;
}

export interface WebhookEnvelope {
  object: "whatsapp_business_account" | string;
  entry: Array<{ id: string; time?: number; changes: Array<{ field: string; value: Record<string, unknown> }> }>;
}

export interface NamedWebhookExample {
  /** The example's key in the yaml, e.g. "Text Message", or its JSON path when it has no key. */
  name: string;
  payload: WebhookEnvelope;
}

interface OpenApi {
  ajv: Ajv2019;
  validateMessage: ValidateFunction;
  validateBase: ValidateFunction;
  validateByType: Map<string, ValidateFunction>;
  validateMarkRead: ValidateFunction;
  webhookExamples: NamedWebhookExample[];
  /** What we changed in Meta's schemas before compiling, and why (see patchSchemas). */
  patches: string[];
}

type Json = Record<string, unknown>;
const isRecord = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x);

/** Follows a slash-separated path through plain objects and arrays; undefined when it breaks off. */
function at(root: unknown, path: string): Json | undefined {
  let node: unknown = root;
  for (const key of path.split("/")) {
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isRecord(node)) node = node[key];
    else return undefined;
  }
  return isRecord(node) ? node : undefined;
}

/**
 * Meta's schemas, taken literally, refuse every send in Meta's own examples (0 of 50 pass). These
 * patches bring the schema back to what the platform accepts while keeping everything else strict; the
 * strings returned say what was changed so a reader of a failing test knows what is ours.
 */
function patchSchemas(schemas: Json): string[] {
  const notes: string[] = [];

  // `allOf: [BaseMessageProperties, {additionalProperties: false, ...}]`: in JSON Schema the second
  // branch cannot see the first one's properties, so messaging_product/to/... count as "additional"
  // and every text/media/contacts message fails. unevaluatedProperties (2019-09) means what Meta meant.
  let rewired = 0;
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!isRecord(node)) return;
    const allOf = node.allOf;
    if (Array.isArray(allOf) && allOf.some((b) => isRecord(b) && b.additionalProperties === false)) {
      for (const b of allOf) if (isRecord(b) && b.additionalProperties === false) delete b.additionalProperties;
      node.unevaluatedProperties = false;
      rewired++;
    }
    for (const value of Object.values(node)) walk(value);
  };
  walk(schemas);
  notes.push(`allOf + additionalProperties:false rewritten to unevaluatedProperties:false (${rewired} schemas)`);

  const base = at(schemas, "BaseMessageProperties");
  if (base && Array.isArray(base.required) && isRecord(base.properties)) {
    // Docs: recipient_type defaults to "individual"; Meta's own contacts/template examples omit it.
    base.required = base.required.filter((name) => name !== "recipient_type");
    // The schema types messaging_product as any string; the platform only knows "whatsapp".
    base.properties.messaging_product = { type: "string", enum: ["whatsapp"] };
    // A documented top-level send field (echoed back in status webhooks) that the schema forgot.
    base.properties.biz_opaque_callback_data = { type: "string", maxLength: 512 };
    notes.push("BaseMessageProperties: recipient_type optional; messaging_product must be 'whatsapp'; biz_opaque_callback_data allowed");
  }

  const language = at(schemas, "LanguageObject");
  if (language) {
    // `policy` is a legacy field; Meta's template examples send only {code}.
    language.required = ["code"];
    notes.push("LanguageObject: policy optional");
  }

  const component = at(schemas, "TemplateComponent/properties");
  if (component) {
    // The pattern ^[2-6, 11-14]$ is a character class that refuses "0" and "1", the indexes Meta's own
    // examples use (one of them as a number); the description says 0-9.
    component.index = { type: ["string", "integer"], pattern: "^[0-9]$", minimum: 0, maximum: 9 };
    // The enum lists quick_reply/url/catalog in lower case; Meta's examples also send "CATALOG" and "flow".
    component.sub_type = { type: "string" };
    notes.push("TemplateComponent: index 0-9 as string or integer; sub_type any string");
  }

  for (const axis of ["latitude", "longitude"]) {
    const coordinate = at(schemas, `LocationMessage/allOf/1/properties/location/properties/${axis}`);
    if (coordinate) coordinate.type = ["string", "number"];
  }
  notes.push("LocationMessage: latitude/longitude may be numbers (as in Meta's examples)");
  return notes;
}

/** Every object in the document shaped like a webhook delivery: {object: "whatsapp_business_account", entry: [...]}. */
function findWebhookExamples(doc: unknown): NamedWebhookExample[] {
  const found: NamedWebhookExample[] = [];
  const walk = (node: unknown, path: string[]): void => {
    if (Array.isArray(node)) return node.forEach((item, i) => walk(item, [...path, String(i)]));
    if (!isRecord(node)) return;
    if (node.object === "whatsapp_business_account" && Array.isArray(node.entry)) {
      const name = path.at(-1) === "value" && path.length >= 2 ? path[path.length - 2] : path.join(".");
      found.push({ name, payload: structuredClone(node) as unknown as WebhookEnvelope });
      return;
    }
    for (const [key, value] of Object.entries(node)) walk(value, [...path, key]);
  };
  walk(doc, []);
  return found;
}

/**
 * The yaml package needs 0.6-2 s for this 1 MB file, paid by every `bun test` run; its output is kept as
 * JSON in the temp directory, keyed by the file's path, size and mtime, so only the first run pays.
 */
function readOpenApiDocument(path: string): unknown {
  const stat = statSync(path);
  const key = createHash("sha256").update(`${path}|${stat.size}|${stat.mtimeMs}`).digest("hex").slice(0, 16);
  const cacheFile = join(tmpdir(), `pigeon-chatapp-openapi-${key}.json`);
  try {
    return JSON.parse(readFileSync(cacheFile, "utf8"));
  } catch {
    // no cache yet, or a torn one: parse the yaml
  }
  // uniqueKeys:false skips a quadratic duplicate-key check: 0.6 s instead of 1.6 s for this file.
  const doc: unknown = parseYaml(readFileSync(path, "utf8"), { uniqueKeys: false });
  try {
    // Written aside and renamed, so a concurrent test process never reads half a file.
    const partial = `${cacheFile}.${process.pid}`;
    writeFileSync(partial, JSON.stringify(doc));
    renameSync(partial, cacheFile);
  } catch {
    // a read-only temp directory only costs speed
  }
  return doc;
}

const openApiCache = new Map<string, OpenApi>();

/** Parses and compiles Meta's OpenAPI once per path per process. */
export function loadOpenApi(path: string = defaultOpenApiPath()): OpenApi {
  const cached = openApiCache.get(path);
  if (cached) return cached;

  const doc = readOpenApiDocument(path);
  const components = structuredClone(at(doc, "components"));
  const schemas = at(components, "schemas");
  if (!components || !schemas) throw new Error(`${path}: no components.schemas`);
  const patches = patchSchemas(schemas);

  const ajv = new Ajv2019({ strict: false, allErrors: true, logger: false });
  addFormats(ajv);
  // ajv-formats' "url" refuses loopback and private addresses (and "localhost"), so a link to this
  // fake's own /media/ would be "invalid". Any absolute http(s) URL is what the docs ask for.
  ajv.addFormat("url", (value: string) => {
    try {
      const url = new URL(value);
      return url.protocol === "http:" || url.protocol === "https:";
    } catch {
      return false;
    }
  });
  // $refs in the schemas are document-local (#/components/schemas/X), so the components are added
  // under one $id and every validator is fetched by pointer into it; ajv resolves the refs itself.
  const id = "meta-openapi.json";
  ajv.addSchema({ $id: id, components }, id);
  const compile = (pointer: string): ValidateFunction => {
    const validate = ajv.getSchema(`${id}${pointer}`);
    if (!validate) throw new Error(`${path}: cannot compile ${pointer}`);
    return validate;
  };

  // Path keys contain slashes, so they are looked up directly rather than through at().
  const sendOperation = at(at(doc, "paths")?.[SEND_PATH], "post/requestBody/content");
  const bodySchema = isRecord(sendOperation?.["application/json"]) ? at(sendOperation["application/json"], "schema") : undefined;
  const messageRef = typeof bodySchema?.$ref === "string" ? bodySchema.$ref : "#/components/schemas/Message";
  const validateByType = new Map<string, ValidateFunction>();
  const mapping = at(schemas, `${messageRef.split("/").pop()}/discriminator/mapping`) ?? {};
  for (const [type, ref] of Object.entries(mapping)) if (typeof ref === "string") validateByType.set(type, compile(ref));

  const spec: OpenApi = {
    ajv,
    validateMessage: compile(messageRef),
    validateBase: compile("#/components/schemas/BaseMessageProperties"),
    validateByType,
    validateMarkRead: compile("#/components/schemas/MarkMessageRequestPayload"),
    webhookExamples: findWebhookExamples(doc),
    patches,
  };
  openApiCache.set(path, spec);
  return spec;
}

/** ajv's validators are type guards for `unknown`, which would narrow the failing branch to never. */
const passes = (validate: ValidateFunction, value: unknown): boolean => validate(value) === true;

function describeErrors(errors: ErrorObject[] | null | undefined, ajv: Ajv2019): string {
  // oneOf/anyOf summaries repeat what the branch errors already say.
  const useful = (errors ?? []).filter((e) => e.keyword !== "oneOf" && e.keyword !== "anyOf");
  return ajv.errorsText(useful.slice(0, 12), { dataVar: "body", separator: "; " });
}

/** Checks a send body against Meta's Message schema; null when valid, else ajv's complaints. */
export function validateSendBody(body: unknown, spec: OpenApi = loadOpenApi()): string | null {
  if (passes(spec.validateMessage, body)) return null;
  const type = isRecord(body) && typeof body.type === "string" ? body.type : undefined;
  const branch = type === undefined ? undefined : spec.validateByType.get(type);
  // The schema's discriminator names one branch per type; its errors read far better than oneOf's
  // eleven failed alternatives.
  if (branch && !passes(branch, body)) return describeErrors(branch.errors, spec.ajv);
  const baseErrors = passes(spec.validateBase, body) ? "" : describeErrors(spec.validateBase.errors, spec.ajv);
  if (type !== undefined && !branch) {
    const known = [...spec.validateByType.keys()].join(", ");
    return [baseErrors, `body/type must be one of ${known} (got "${type}")`].filter(Boolean).join("; ");
  }
  return baseErrors || describeErrors(spec.validateMessage.errors, spec.ajv);
}

/** Validates any value against one of Meta's component schemas by name; null when valid. */
export function validateAgainstOpenApi(schemaName: string, value: unknown, spec: OpenApi = loadOpenApi()): string | null {
  const validate = spec.ajv.getSchema(`meta-openapi.json#/components/schemas/${schemaName}`);
  if (!validate) throw new Error(`no schema ${schemaName} in the OpenAPI description`);
  return passes(validate, value) ? null : describeErrors(validate.errors, spec.ajv);
}

/** Every webhook payload example in Meta's OpenAPI yaml, with its name. */
export function openApiWebhookExamples(path?: string): NamedWebhookExample[] {
  return loadOpenApi(path).webhookExamples.map((x) => ({ name: x.name, payload: structuredClone(x.payload) }));
}

// ---------------------------------------------------------------------------------------------
// Platform error codes (reference section 2)
// ---------------------------------------------------------------------------------------------

interface CodeInfo {
  status: number;
  title: string;
  details: string;
}

/** HTTP status, title and a default details string per platform code, as in Meta's table. */
export const PLATFORM_ERRORS: Record<number, CodeInfo> = {
  0: { status: 401, title: "AuthException", details: "We were unable to authenticate the app user." },
  1: { status: 400, title: "API Unknown", details: "Invalid request or possible server error." },
  2: { status: 503, title: "API Service", details: "Temporary due to downtime or due to being overloaded." },
  3: { status: 500, title: "API Method", details: "Capability or permissions issue." },
  4: { status: 400, title: "API Too Many Calls", details: "The app has reached its API call rate limit." },
  10: { status: 403, title: "Permission Denied", details: "Permission is either not granted or has been removed." },
  33: { status: 400, title: "Parameter value is not valid", details: "The business phone number has been deleted." },
  100: { status: 400, title: "Invalid parameter", details: "The request included one or more unsupported or misspelled parameters." },
  190: { status: 401, title: "Access token has expired", details: "Your access token has expired." },
  200: { status: 403, title: "API Permission", details: "Permission is either not granted or has been removed." },
  368: { status: 403, title: "Temporarily blocked for policies violations", details: "The WhatsApp Business Account associated with the app has been restricted or disabled for violating a platform policy." },
  80007: { status: 400, title: "Rate limit issues", details: "The WhatsApp Business Account has reached its rate limit." },
  130429: { status: 400, title: "Rate limit hit", details: "Cloud API message throughput has been reached." },
  130472: { status: 400, title: "User's number is part of an experiment", details: "Failed to send message because this user's phone number is part of an experiment." },
  130497: { status: 403, title: "Business account is restricted from messaging users in this country", details: "The WhatsApp Business Account is restricted from messaging users in this country." },
  131000: { status: 500, title: "Something went wrong", details: "Message failed to send due to an unknown error." },
  131005: { status: 403, title: "Access denied", details: "Permission is either not granted or has been removed." },
  131008: { status: 400, title: "Required parameter is missing", details: "The request is missing a required parameter." },
  131009: { status: 400, title: "Parameter value is not valid", details: "One or more parameter values are invalid." },
  131016: { status: 500, title: "Service unavailable", details: "A service is temporarily unavailable." },
  131021: { status: 400, title: "Recipient cannot be sender", details: "Sender and recipient phone number is the same." },
  131026: { status: 400, title: "Message undeliverable", details: "Unable to deliver message." },
  131030: { status: 400, title: "Recipient phone number not in allowed list", details: "Recipient phone number not in allowed list." },
  131031: { status: 403, title: "Account has been locked", details: "The WhatsApp Business Account associated with the app has been restricted or disabled." },
  131042: { status: 400, title: "Business eligibility payment issue", details: "There was an error related to your payment method." },
  131045: { status: 500, title: "Incorrect certificate", details: "Message failed to send due to a phone number registration error." },
  131047: { status: 400, title: "Re-engagement message", details: "More than 24 hours have passed since the recipient last replied to the sender number." },
  131048: { status: 400, title: "Spam rate limit hit", details: "Message failed to send because there are restrictions on how many messages can be sent from this phone number." },
  131049: { status: 400, title: "Meta chose not to deliver.", details: "This message was not delivered to maintain healthy ecosystem engagement." },
  131050: { status: 400, title: "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business.", details: "The recipient has stopped marketing messages." },
  131051: { status: 400, title: "Unsupported message type", details: "Unsupported message type." },
  131052: { status: 400, title: "Media download error", details: "Unable to download the media sent by the user." },
  131053: { status: 400, title: "Media upload error", details: "Unable to upload the media used in the message." },
  131056: { status: 400, title: "(Business Account, Consumer Account) pair rate limit hit", details: "Too many messages sent from the sender phone number to the same recipient phone number in a short period of time." },
  131057: { status: 500, title: "Account in maintenance mode", details: "Business Account is in maintenance mode." },
  132000: { status: 400, title: "Number of parameters does not match the expected number of params", details: "The number of variable parameter values does not match the number of variables defined in the template." },
  132001: { status: 404, title: "Template name does not exist in the translation", details: "The template does not exist in the specified language or has not been approved." },
  132005: { status: 400, title: "Translated text too long", details: "Translated text is too long." },
  132007: { status: 400, title: "Template Format Character Policy Violated", details: "Template content violates a WhatsApp policy." },
  132012: { status: 400, title: "Parameter format does not match format in the created template", details: "Variable parameter values formatted incorrectly." },
  132015: { status: 400, title: "Template is Paused", details: "Template is paused due to low quality so it cannot be sent in a template message." },
  132016: { status: 400, title: "Template is Disabled", details: "Template has been paused too many times due to low quality and is now permanently disabled." },
  132068: { status: 400, title: "Flow is in blocked state", details: "Flow is in blocked state." },
  132069: { status: 400, title: "Flow is in throttled state", details: "Flow is in throttled state and 10 messages using this flow were already sent in the last hour." },
  133004: { status: 503, title: "Server Temporarily Unavailable", details: "Server is temporarily unavailable." },
  133010: { status: 400, title: "Phone number Not Registered", details: "The phone number is not registered on the WhatsApp Business Platform." },
  133016: { status: 400, title: "Account register or deregister rate limit exceeded", details: "Registration or deregistration failed because there were too many attempts for this phone number in a short period of time." },
  135000: { status: 400, title: "Generic user error", details: "Message failed to send because of an unknown error with your request parameters." },
};

/** Meta's table; codes 200-299 share one row, and unknown codes are treated as a bad request. */
export function platformErrorInfo(code: number): CodeInfo {
  const known = PLATFORM_ERRORS[code];
  if (known) return known;
  if (code >= 200 && code <= 299) return PLATFORM_ERRORS[200];
  return { status: 400, title: "Error", details: `Platform error ${code}.` };
}

/** Deprecated per Meta, yet present in its own examples and in captured responses; adapters must tolerate it. */
const SUBCODES: Record<number, number> = { 130429: 2494055, 131056: 2494071 };
const ERROR_HREF = "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/";

export interface GraphErrorBody {
  error: {
    message: string;
    type: string;
    code: number;
    error_subcode?: number;
    error_data?: { messaging_product: "whatsapp"; details: string };
    fbtrace_id: string;
  };
}

export interface WebhookError {
  code: number;
  title: string;
  message: string;
  error_data: { details: string };
  href: string;
}

const fbtraceId = () => randomBytes(17).toString("base64url").slice(0, 23);
const newWamid = () => `wamid.${randomBytes(32).toString("base64")}`;
const digits = (s: string) => s.replace(/\D/g, "");
const unixSeconds = (ms: number) => String(Math.floor(ms / 1000));
const json = (status: number, body: unknown) => Response.json(body, { status });

function platformErrorBody(code: number, details?: string, title?: string): GraphErrorBody {
  const info = platformErrorInfo(code);
  const error: GraphErrorBody["error"] = {
    message: `(#${code}) ${title ?? info.title}`,
    type: "OAuthException",
    code,
    error_data: { messaging_product: "whatsapp", details: details ?? info.details },
    fbtrace_id: fbtraceId(),
  };
  if (SUBCODES[code]) error.error_subcode = SUBCODES[code];
  return { error };
}

function webhookError(code: number, details?: string, title?: string): WebhookError {
  const info = platformErrorInfo(code);
  const text = title ?? info.title;
  return { code, title: text, message: text, error_data: { details: details ?? info.details }, href: ERROR_HREF };
}

const authError = (message: string, subcode?: number) =>
  json(401, { error: { message, type: "OAuthException", code: 190, ...(subcode ? { error_subcode: subcode } : {}), fbtrace_id: fbtraceId() } });

/** Graph's answer for an id that is unknown or hidden from this token: the two are indistinguishable on purpose. */
const unsupportedObject = (method: string, id: string) =>
  json(400, {
    error: {
      message: `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api`,
      type: "GraphMethodException",
      code: 100,
      error_subcode: 33,
      fbtrace_id: fbtraceId(),
    },
  });

const graphParamError = (message: string) =>
  json(400, { error: { message: `(#100) ${message}`, type: "OAuthException", code: 100, fbtrace_id: fbtraceId() } });

// ---------------------------------------------------------------------------------------------
// State the tests set up
// ---------------------------------------------------------------------------------------------

export interface FakePhoneNumber {
  id: string;
  display_phone_number: string;
  verified_name: string;
  quality_rating: string;
  [field: string]: unknown;
}

export interface FakeTemplateComponent {
  type: string;
  format?: string;
  text?: string;
  [field: string]: unknown;
}

export type TemplateStatus =
  | "APPROVED" | "PENDING" | "REJECTED" | "PAUSED" | "DISABLED" | "IN_APPEAL"
  | "PENDING_DELETION" | "DELETED" | "LIMIT_EXCEEDED" | "ARCHIVED" | "LOCKED";

export interface FakeTemplate {
  id: string;
  name: string;
  language: string;
  status: TemplateStatus | string;
  category: string;
  parameter_format: "POSITIONAL" | "NAMED";
  components: FakeTemplateComponent[];
  [field: string]: unknown;
}

/** A template as tests declare it; id, status (APPROVED), category (UTILITY) and parameter_format (POSITIONAL) have defaults. */
export interface TemplateSetup {
  id?: string;
  name: string;
  language: string;
  status?: TemplateStatus | string;
  category?: string;
  parameter_format?: "POSITIONAL" | "NAMED";
  components: FakeTemplateComponent[];
  [field: string]: unknown;
}

export interface WabaSetup {
  id: string;
  name: string;
  currency?: string;
  timezone_id?: string;
  phoneNumbers?: FakePhoneNumber[];
  templates?: TemplateSetup[];
}

export interface FakeWaba {
  id: string;
  name: string;
  currency: string;
  timezone_id: string;
  message_template_namespace: string;
  phoneNumbers: FakePhoneNumber[];
  templates: FakeTemplate[];
}

export interface SentMessage {
  wamid: string;
  phoneNumberId: string;
  wabaId: string;
  to: string;
  waId: string;
  type: string;
  body: Json;
  /** The fake's clock when the send was accepted. */
  at: number;
  template?: FakeTemplate;
  /** Set when the send was accepted but a failed status webhook with this code follows. */
  failure?: number;
}

export interface InvalidRequest {
  at: number;
  path: string;
  body: unknown;
  details: string;
}

export interface RecordedRequest {
  at: number;
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
}

export interface DeliveredWebhook {
  payload: WebhookEnvelope;
  body: string;
  status: number;
}

/** A webhook built but not yet posted; `effect` is the platform-side change it reports (runs at delivery). */
export interface PreparedWebhook {
  payload: WebhookEnvelope;
  body: string;
  effect?: () => void;
}

export interface DeliveryOptions {
  /** Sign with this secret instead of the app secret (to test that bad signatures are refused). */
  secret?: string;
  /** Send no X-Hub-Signature-256 header at all. */
  omitSignature?: boolean;
}

export type StatusName = "sent" | "delivered" | "read" | "failed";

export interface StatusOptions {
  /** For failed: the platform code (default 131026) or the full errors array. */
  errorCode?: number;
  errors?: WebhookError[];
  details?: string;
  /** Status time in ms (default: the fake's clock). */
  at?: number;
  /** Needed only for a wamid the fake never accepted. */
  phoneNumberId?: string;
  recipientId?: string;
  /** Leave out pricing / conversation (default: present on sent, delivered and read). */
  pricing?: boolean;
  conversation?: boolean;
}

export interface InboundOptions {
  phoneNumberId: string;
  from: string;
  text: string;
  name?: string;
  /** Message time in ms (default: the fake's clock). */
  at?: number;
  /** Quote one of the business's messages, as a user's reply does. */
  contextWamid?: string;
}

export interface TemplateStatusOptions {
  wabaId: string;
  templateId: string;
  name?: string;
  language?: string;
  event: string;
  reason?: string | null;
  otherInfo?: { title: string; description: string };
}

export interface FailNextOptions {
  /** Answer 200 with a wamid, then post a failed status webhook carrying the code. */
  async?: boolean;
  /** Override the HTTP status of Meta's table. */
  status?: number;
  title?: string;
  details?: string;
  /** How many consecutive sends fail this way (default 1). */
  times?: number;
}

export interface MediaSetup {
  size: number;
  contentType: string;
}

export interface FakeChatAppOptions {
  appSecret: string;
  /** A token that can see every WABA (default "good-token"). */
  accessToken?: string;
  /** How webhooks reach the server under test; default global fetch. In-process apps pass app.handle. */
  deliverWebhook?: (req: Request) => Promise<Response>;
  webhookUrl?: string;
  /** Per phone number message throughput (default 80, Meta's default). */
  throughputPerSecond?: number;
  /** Pair limit: one message per pairIntervalMs to a user, with bursts of pairBurst (defaults 6000 and 45). */
  pairIntervalMs?: number;
  pairBurst?: number;
  /** How a freeform send to a closed 24-hour window fails (default "sync": HTTP 400 with 131047). */
  windowErrors?: "sync" | "async";
  /** Statuses posted automatically after each accepted send, in order (default none). */
  autoStatuses?: Array<"sent" | "delivered" | "read">;
  /** "manual" queues the fake's own webhooks until flush() (default "auto": posted right after the answer). */
  webhookDelivery?: "auto" | "manual";
  /** Delay before each automatic webhook, in real ms (default 0). */
  webhookDelayMs?: number;
  /** Clock for windows, pacing and timestamps (default Date.now); setNow/advance pin it. */
  now?: () => number;
  wabas?: WabaSetup[];
  media?: Record<string, MediaSetup>;
  openApiPath?: string;
}

/** Meta's media limits (reference section 6), used for links that point at this fake's /media/. */
const MEDIA_LIMITS: Record<string, { types: string[]; maxBytes: number }> = {
  image: { types: ["image/jpeg", "image/png"], maxBytes: 5 * 1024 * 1024 },
  video: { types: ["video/mp4", "video/3gpp"], maxBytes: 16 * 1024 * 1024 },
  audio: { types: ["audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"], maxBytes: 16 * 1024 * 1024 },
  document: {
    types: [
      "text/plain", "application/pdf", "application/msword", "application/vnd.ms-excel", "application/vnd.ms-powerpoint",
      "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
      "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
      "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ],
    maxBytes: 100 * 1024 * 1024,
  },
  sticker: { types: ["image/webp"], maxBytes: 500 * 1024 },
};

/** Webhook events that leave the stored status alone or map to another one. */
const STATUS_AFTER_EVENT: Record<string, string | null> = { FLAGGED: null, REINSTATED: "APPROVED", UNPAUSED: "APPROVED" };

class TokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    private readonly capacity: number,
    /** One token comes back every refillMs. */
    private readonly refillMs: number,
    now: number,
  ) {
    this.tokens = capacity;
    this.last = now;
  }
  take(now: number): boolean {
    // elapsed / refillMs rather than elapsed * rate keeps whole intervals exact in floating point.
    this.tokens = Math.min(this.capacity, this.tokens + Math.max(0, now - this.last) / this.refillMs);
    this.last = Math.max(this.last, now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** Distinct {{…}} placeholders in a template text: "{{1}} … {{2}} … {{1}}" has two. */
function placeholders(text: unknown): string[] {
  if (typeof text !== "string") return [];
  return [...new Set([...text.matchAll(/\{\{\s*([^{}\s]+)\s*\}\}/g)].map((m) => m[1]))];
}

/** Top-level names of a Graph `fields` list: "name,components{type},status" → name, components, status. */
function topLevelFields(fields: string): string[] {
  const names: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of fields) {
    if (ch === "{") depth++;
    if (ch === "}") depth--;
    if (ch === "," && depth === 0) {
      names.push(current);
      current = "";
    } else if (depth === 0 && ch !== "}") current += ch;
  }
  names.push(current);
  return names.map((n) => n.replace(/\..*$/, "").trim()).filter(Boolean);
}

function pickFields(object: Json, fields: string | null): Json {
  if (!fields) return object;
  const wanted = new Set(["id", ...topLevelFields(fields)]);
  return Object.fromEntries(Object.entries(object).filter(([key]) => wanted.has(key)));
}

const cursorOf = (id: string) => Buffer.from(`tpl:${id}`).toString("base64url");
const idOfCursor = (cursor: string) => Buffer.from(cursor, "base64url").toString().replace(/^tpl:/, "");

// ---------------------------------------------------------------------------------------------
// The fake
// ---------------------------------------------------------------------------------------------

/** Starts the fake platform on 127.0.0.1 with a free port. */
export function startFakeChatApp(options: FakeChatAppOptions) {
  const spec = loadOpenApi(options.openApiPath);
  const deliverWebhook = options.deliverWebhook ?? ((req: Request) => fetch(req));
  const throughput = options.throughputPerSecond ?? 80;
  const pairIntervalMs = options.pairIntervalMs ?? 6000;
  const pairBurst = options.pairBurst ?? 45;
  const baseNow = options.now ?? (() => Date.now());
  let pinnedNow: number | undefined;
  const now = () => pinnedNow ?? baseNow();

  let webhookUrl = options.webhookUrl;
  let windowErrors = options.windowErrors ?? "sync";

  const wabas = new Map<string, FakeWaba>();
  const phones = new Map<string, { phone: FakePhoneNumber; wabaId: string }>();
  /** Token → WABAs it can see ("all" follows WABAs added later) and whether it still works. */
  const tokens = new Map<string, { wabaIds: string[] | "all"; state: "valid" | "expired" | "revoked" }>();
  const media = new Map<string, MediaSetup>();
  /** Last inbound message time per "phoneNumberId|waId": the 24-hour customer service window. */
  const lastInbound = new Map<string, number>();
  const throughputBuckets = new Map<string, TokenBucket>();
  const pairBuckets = new Map<string, TokenBucket>();
  const script: Array<FailNextOptions & { code: number; times: number }> = [];
  const conversationIds = new Map<string, string>();
  let templateSeq = 0;

  const sent: SentMessage[] = [];
  const invalidRequests: InvalidRequest[] = [];
  const requests: RecordedRequest[] = [];
  const webhooks: DeliveredWebhook[] = [];
  const webhookErrors: Error[] = [];
  const markedRead: string[] = [];
  const outbox: PreparedWebhook[] = [];
  let lastDelivery: { body: string; headers: Record<string, string>; payload: WebhookEnvelope } | undefined;
  let chain: Promise<void> = Promise.resolve();

  tokens.set(options.accessToken ?? "good-token", { wabaIds: "all", state: "valid" });

  // --- setup -------------------------------------------------------------------------------

  function addTemplate(wabaId: string, setup: TemplateSetup): FakeTemplate {
    const waba = wabas.get(wabaId);
    if (!waba) throw new Error(`fake-chatapp: no WABA ${wabaId}`);
    const template: FakeTemplate = {
      ...setup,
      id: setup.id ?? String(1_689_556_908_000_000 + ++templateSeq),
      status: setup.status ?? "APPROVED",
      category: setup.category ?? "UTILITY",
      parameter_format: setup.parameter_format ?? "POSITIONAL",
    };
    waba.templates.push(template);
    return template;
  }

  function addPhoneNumber(wabaId: string, phone: FakePhoneNumber): FakePhoneNumber {
    const waba = wabas.get(wabaId);
    if (!waba) throw new Error(`fake-chatapp: no WABA ${wabaId}`);
    waba.phoneNumbers.push(phone);
    phones.set(phone.id, { phone, wabaId });
    return phone;
  }

  function addWaba(setup: WabaSetup): FakeWaba {
    const waba: FakeWaba = {
      id: setup.id,
      name: setup.name,
      currency: setup.currency ?? "USD",
      timezone_id: setup.timezone_id ?? "1",
      message_template_namespace: randomBytes(16).toString("hex").replace(/^(.{8})(.{4})(.{4})(.{4})/, "$1_$2_$3_$4_"),
      phoneNumbers: [],
      templates: [],
    };
    wabas.set(waba.id, waba);
    for (const phone of setup.phoneNumbers ?? []) addPhoneNumber(waba.id, phone);
    for (const template of setup.templates ?? []) addTemplate(waba.id, template);
    return waba;
  }

  for (const setup of options.wabas ?? []) addWaba(setup);
  for (const [name, item] of Object.entries(options.media ?? {})) media.set(name, item);

  function findTemplate(wabaId: string, idOrName: string, language?: string): FakeTemplate | undefined {
    return wabas.get(wabaId)?.templates.find((t) => t.id === idOrName || (t.name === idOrName && (!language || t.language === language)));
  }

  // --- auth ---------------------------------------------------------------------------------

  type Caller = { token: string; sees: (wabaId: string) => boolean; wabaIds: () => string[] };

  function authenticate(req: Request): Caller | Response {
    const match = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
    if (!match) return authError("An active access token must be used to query information about the current user.");
    const record = tokens.get(match[1]);
    if (!record) return authError("Invalid OAuth access token - Cannot parse access token");
    if (record.state === "expired") return authError("Error validating access token: Session has expired.", 463);
    if (record.state === "revoked") return authError("Error validating access token: The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.", 460);
    const wabaIds = () => (record.wabaIds === "all" ? [...wabas.keys()] : record.wabaIds.filter((id) => wabas.has(id)));
    return { token: match[1], sees: (id) => wabaIds().includes(id), wabaIds };
  }

  // --- webhooks -----------------------------------------------------------------------------

  function prepare(payload: WebhookEnvelope, effect?: () => void): PreparedWebhook {
    return { payload, body: JSON.stringify(payload), effect };
  }

  const sign = (secret: string, body: string) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

  async function post(body: string, headers: Record<string, string>, payload: WebhookEnvelope): Promise<Response> {
    if (!webhookUrl) throw new Error("fake-chatapp: webhookUrl is not set (pass it in the options or call setWebhookUrl)");
    lastDelivery = { body, headers, payload };
    const response = await deliverWebhook(new Request(webhookUrl, { method: "POST", headers, body }));
    webhooks.push({ payload, body, status: response.status });
    return response;
  }

  function deliver(prepared: PreparedWebhook, delivery: DeliveryOptions = {}): Promise<Response> {
    // The platform-side change (window opened, template paused) happened whether or not the server listens.
    prepared.effect?.();
    prepared.effect = undefined;
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "facebookexternalua" };
    if (!delivery.omitSignature) headers["x-hub-signature-256"] = sign(delivery.secret ?? options.appSecret, prepared.body);
    return post(prepared.body, headers, prepared.payload);
  }

  /** The fake's own follow-up webhooks (async failures, auto statuses): posted in order, after the answer. */
  function schedule(prepared: PreparedWebhook): void {
    if (options.webhookDelivery === "manual") {
      outbox.push(prepared);
      return;
    }
    const delay = options.webhookDelayMs ?? 0;
    chain = chain
      .then(() => Bun.sleep(delay))
      .then(() => deliver(prepared))
      .then(
        () => undefined,
        (error: unknown) => {
          webhookErrors.push(error instanceof Error ? error : new Error(String(error)));
        },
      );
  }

  function envelope(wabaId: string, field: string, value: Json, time?: number): WebhookEnvelope {
    const entry: WebhookEnvelope["entry"][number] = { id: wabaId, changes: [{ value, field }] };
    if (time !== undefined) entry.time = time;
    return { object: "whatsapp_business_account", entry: [entry] };
  }

  function phoneOrThrow(phoneNumberId: string) {
    const found = phones.get(phoneNumberId);
    if (!found) throw new Error(`fake-chatapp: no phone number ${phoneNumberId}`);
    return found;
  }

  const metadata = (phone: FakePhoneNumber) => ({ display_phone_number: digits(phone.display_phone_number), phone_number_id: phone.id });

  function inboundWebhook(inbound: InboundOptions): PreparedWebhook & { wamid: string } {
    const { phone, wabaId } = phoneOrThrow(inbound.phoneNumberId);
    const waId = digits(inbound.from);
    const at = inbound.at ?? now();
    const wamid = newWamid();
    const message: Json = { from: waId, id: wamid, timestamp: unixSeconds(at), type: "text", text: { body: inbound.text } };
    if (inbound.contextWamid) message.context = { from: digits(phone.display_phone_number), id: inbound.contextWamid };
    const value = {
      messaging_product: "whatsapp",
      metadata: metadata(phone),
      contacts: [{ profile: { name: inbound.name ?? "Test User" }, wa_id: waId }],
      messages: [message],
    };
    const key = `${phone.id}|${waId}`;
    const prepared = prepare(envelope(wabaId, "messages", value), () => lastInbound.set(key, Math.max(lastInbound.get(key) ?? 0, at)));
    return { ...prepared, wamid };
  }

  function statusWebhook(wamid: string, status: StatusName, opts: StatusOptions = {}): PreparedWebhook {
    const message = sent.find((m) => m.wamid === wamid);
    const phoneNumberId = opts.phoneNumberId ?? message?.phoneNumberId;
    const recipientId = opts.recipientId ?? message?.waId;
    if (!phoneNumberId || !recipientId) throw new Error(`fake-chatapp: unknown wamid ${wamid}; pass phoneNumberId and recipientId`);
    const { phone, wabaId } = phoneOrThrow(phoneNumberId);
    const at = opts.at ?? now();
    const entry: Json = { id: wamid, status, timestamp: unixSeconds(at), recipient_id: recipientId };
    const opaque = message?.body.biz_opaque_callback_data;
    if (typeof opaque === "string") entry.biz_opaque_callback_data = opaque;
    if (status === "failed") {
      entry.errors = opts.errors ?? [webhookError(opts.errorCode ?? message?.failure ?? 131026, opts.details)];
    } else {
      const category = message?.template ? message.template.category.toLowerCase() : "service";
      if (opts.conversation !== false) {
        const conversationKey = `${phoneNumberId}|${recipientId}|${category}`;
        const id = conversationIds.get(conversationKey) ?? randomBytes(16).toString("hex");
        conversationIds.set(conversationKey, id);
        const conversation: Json = { id, origin: { type: category } };
        // Webhooks v23 and older carried the expiry on "sent" only.
        if (status === "sent") conversation.expiration_timestamp = unixSeconds(at + 24 * 3600_000);
        entry.conversation = conversation;
      }
      if (opts.pricing !== false) {
        entry.pricing = message?.template
          ? { billable: true, pricing_model: "PMP", type: "regular", category }
          : { billable: false, pricing_model: "PMP", type: "free_customer_service", category: "service" };
      }
    }
    return prepare(envelope(wabaId, "messages", { messaging_product: "whatsapp", metadata: metadata(phone), statuses: [entry] }));
  }

  function templateStatusWebhook(update: TemplateStatusOptions): PreparedWebhook {
    const template = findTemplate(update.wabaId, update.templateId);
    const name = update.name ?? template?.name;
    const language = update.language ?? template?.language;
    if (!name || !language) throw new Error(`fake-chatapp: unknown template ${update.templateId}; pass name and language`);
    const value: Json = {
      event: update.event,
      // Meta sends the id as a JSON number here, unlike everywhere else.
      message_template_id: Number(update.templateId),
      message_template_name: name,
      message_template_language: language,
      reason: update.reason === undefined ? "NONE" : update.reason,
    };
    if (template) value.message_template_category = template.category;
    if (update.otherInfo) value.other_info = update.otherInfo;
    const effect = () => {
      if (!template) return;
      const next = update.event in STATUS_AFTER_EVENT ? STATUS_AFTER_EVENT[update.event] : update.event;
      if (next) template.status = next;
    };
    return prepare(envelope(update.wabaId, "message_template_status_update", value, Math.floor(now() / 1000)), effect);
  }

  // --- Graph routes -------------------------------------------------------------------------

  function debugToken(url: URL): Response {
    const input = url.searchParams.get("input_token");
    if (!input) return graphParamError("The parameter input_token is required");
    const record = tokens.get(input);
    if (!record || record.state !== "valid") {
      return json(200, { data: { error: { code: 190, message: "Invalid OAuth access token." }, is_valid: false, scopes: [] } });
    }
    const targetIds = record.wabaIds === "all" ? [...wabas.keys()] : record.wabaIds.filter((id) => wabas.has(id));
    return json(200, {
      data: {
        app_id: "1000000000000001",
        type: "SYSTEM_USER",
        application: "Pigeon (fake)",
        data_access_expires_at: 0,
        expires_at: 0,
        is_valid: true,
        scopes: ["whatsapp_business_management", "whatsapp_business_messaging", "public_profile"],
        granular_scopes: [
          { scope: "whatsapp_business_management", target_ids: targetIds },
          { scope: "whatsapp_business_messaging", target_ids: targetIds },
        ],
        user_id: "2000000000000002",
      },
    });
  }

  function wabaObject(waba: FakeWaba): Json {
    return {
      id: waba.id,
      name: waba.name,
      currency: waba.currency,
      timezone_id: waba.timezone_id,
      message_template_namespace: waba.message_template_namespace,
      account_review_status: "APPROVED",
    };
  }

  function phoneObject(phone: FakePhoneNumber): Json {
    return { code_verification_status: "VERIFIED", platform_type: "CLOUD_API", throughput: { level: "STANDARD" }, ...phone };
  }

  function listTemplates(url: URL, version: string, waba: FakeWaba): Response {
    const limit = Math.max(1, Math.min(1000, Number(url.searchParams.get("limit") ?? 25) || 25));
    const status = url.searchParams.get("status")?.toUpperCase();
    const name = url.searchParams.get("name");
    const all = waba.templates.filter((t) => (!status || t.status === status) && (!name || t.name.includes(name)));
    const after = url.searchParams.get("after");
    const before = url.searchParams.get("before");
    let start = 0;
    if (after) start = all.findIndex((t) => t.id === idOfCursor(after)) + 1;
    else if (before) start = Math.max(0, all.findIndex((t) => t.id === idOfCursor(before)) - limit);
    const page = all.slice(start, start + limit);
    const fields = url.searchParams.get("fields");
    const body: Json = { data: page.map((t) => pickFields({ ...t }, fields)) };
    if (page.length > 0) {
      const paging: Json = { cursors: { before: cursorOf(page[0].id), after: cursorOf(page[page.length - 1].id) } };
      const link = (key: "after" | "before", cursor: string) => {
        const query = new URLSearchParams(url.searchParams);
        query.delete("after");
        query.delete("before");
        query.set("limit", String(limit));
        query.set(key, cursor);
        return `${url.origin}/${version}/${waba.id}/message_templates?${query}`;
      };
      // Graph omits `next` on the last page; adapters must stop there rather than on an empty page.
      if (start + limit < all.length) paging.next = link("after", cursorOf(page[page.length - 1].id));
      if (start > 0) paging.previous = link("before", cursorOf(page[0].id));
      body.paging = paging;
    }
    return json(200, body);
  }

  function handleGraphGet(url: URL, version: string, segments: string[], caller: Caller): Response {
    const [id, edge, ...rest] = segments;
    if (rest.length > 0) return graphParamError("Unknown path components");
    if (id === "debug_token" && !edge) return debugToken(url);
    const waba = wabas.get(id);
    if (waba && caller.sees(waba.id)) {
      if (!edge) return json(200, pickFields(wabaObject(waba), url.searchParams.get("fields")));
      if (edge === "phone_numbers") {
        const data = waba.phoneNumbers.map((p) => pickFields(phoneObject(p), url.searchParams.get("fields")));
        const paging = data.length ? { cursors: { before: cursorOf(waba.phoneNumbers[0].id), after: cursorOf(waba.phoneNumbers[data.length - 1].id) } } : undefined;
        return json(200, paging ? { data, paging } : { data });
      }
      if (edge === "message_templates") return listTemplates(url, version, waba);
      return graphParamError(`Tried accessing nonexisting field (${edge}) on node type (WhatsAppBusinessAccount)`);
    }
    const phone = phones.get(id);
    if (phone && caller.sees(phone.wabaId) && !edge) return json(200, pickFields(phoneObject(phone.phone), url.searchParams.get("fields")));
    return unsupportedObject("GET", id);
  }

  // --- sending ------------------------------------------------------------------------------

  function accept(phoneNumberId: string, wabaId: string, body: Json, template: FakeTemplate | undefined, failure: number | undefined, failureDetails?: string) {
    const to = String(body.to);
    const message: SentMessage = {
      wamid: newWamid(),
      phoneNumberId,
      wabaId,
      to,
      waId: digits(to),
      type: String(body.type),
      body,
      at: now(),
      ...(template ? { template } : {}),
      ...(failure !== undefined ? { failure } : {}),
    };
    sent.push(message);
    if (failure !== undefined) schedule(statusWebhook(message.wamid, "failed", { errorCode: failure, details: failureDetails }));
    else for (const status of options.autoStatuses ?? []) schedule(statusWebhook(message.wamid, status));
    const result: Json = { id: message.wamid };
    if (body.type === "template") result.message_status = "accepted";
    return json(200, { messaging_product: "whatsapp", contacts: [{ input: to, wa_id: message.waId }], messages: [result] });
  }

  /** Template semantics (reference section 4): existence, status, then parameter counts. */
  function checkTemplate(wabaId: string, body: Json): { template: FakeTemplate } | { code: number; details: string } {
    const sentTemplate = isRecord(body.template) ? body.template : {};
    const name = String(sentTemplate.name);
    const language = isRecord(sentTemplate.language) ? String(sentTemplate.language.code) : "";
    const template = findTemplate(wabaId, name, language);
    if (!template || template.name !== name) return { code: 132001, details: `template name (${name}) does not exist in ${language}` };
    if (template.status === "PAUSED") return { code: 132015, details: `Template ${name} is paused` };
    if (template.status === "DISABLED") return { code: 132016, details: `Template ${name} is disabled` };
    if (template.status !== "APPROVED") return { code: 132001, details: `template name (${name}) in ${language} is not approved (status ${template.status})` };

    const sentComponents = Array.isArray(sentTemplate.components) ? sentTemplate.components.filter(isRecord) : [];
    const paramsOf = (type: string) => {
      const found = sentComponents.find((c) => String(c.type).toLowerCase() === type);
      return found && Array.isArray(found.parameters) ? found.parameters.filter(isRecord) : [];
    };
    const componentOf = (type: string) => template.components.find((c) => c.type.toUpperCase() === type);

    const header = componentOf("HEADER");
    const headerFormat = header?.format?.toUpperCase() ?? "TEXT";
    if (header && headerFormat === "TEXT") {
      const expected = placeholders(header.text).length;
      const got = paramsOf("header").length;
      if (got !== expected) return { code: 132000, details: `header: number of localizable_params (${got}) does not match the expected number of params (${expected})` };
    } else if (header && ["IMAGE", "VIDEO", "DOCUMENT"].includes(headerFormat)) {
      const params = paramsOf("header");
      const kind = headerFormat.toLowerCase();
      if (params.length !== 1 || params[0].type !== kind) {
        return { code: 132012, details: `header: Format mismatch, expected ${headerFormat}, received ${params.map((p) => String(p.type).toUpperCase()).join(",") || "UNKNOWN"}` };
      }
    }

    const bodyComponent = componentOf("BODY");
    const expected = placeholders(bodyComponent?.text);
    const got = paramsOf("body");
    if (got.length !== expected.length) {
      return { code: 132000, details: `body: number of localizable_params (${got.length}) does not match the expected number of params (${expected.length})` };
    }
    if (template.parameter_format === "NAMED") {
      const names = got.map((p) => p.parameter_name);
      if (expected.some((name) => !names.includes(name))) return { code: 132000, details: `body: parameter names ${JSON.stringify(names)} do not match ${JSON.stringify(expected)}` };
    }
    return { template };
  }

  /** Links to this fake's /media/ are checked against Meta's limits; other links are taken on trust. */
  function mediaProblem(origin: string, body: Json, template: FakeTemplate | undefined): string | undefined {
    const uses: Array<{ kind: string; object: unknown }> = [];
    if (template && isRecord(body.template) && Array.isArray(body.template.components)) {
      for (const component of body.template.components.filter(isRecord)) {
        for (const param of Array.isArray(component.parameters) ? component.parameters.filter(isRecord) : []) {
          const kind = String(param.type);
          if (kind in MEDIA_LIMITS) uses.push({ kind, object: param[kind] });
        }
      }
    } else if (String(body.type) in MEDIA_LIMITS) {
      uses.push({ kind: String(body.type), object: body[String(body.type)] });
    }
    for (const use of uses) {
      if (!isRecord(use.object) || typeof use.object.link !== "string") continue;
      const link = new URL(use.object.link);
      if (link.origin !== origin || !link.pathname.startsWith("/media/")) continue;
      const item = media.get(decodeURIComponent(link.pathname.slice("/media/".length)));
      const limits = MEDIA_LIMITS[use.kind];
      if (!item) return `Media upload error: could not download ${use.object.link} (HTTP 404)`;
      if (!limits.types.includes(item.contentType)) return `Media upload error: ${item.contentType} is not a supported ${use.kind} type`;
      if (item.size > limits.maxBytes) return `Media upload error: ${use.kind} of ${item.size} bytes exceeds the limit of ${limits.maxBytes} bytes`;
    }
    return undefined;
  }

  function invalid(path: string, body: unknown, details: string): Response {
    invalidRequests.push({ at: now(), path, body, details });
    return json(400, platformErrorBody(100, details));
  }

  function handleSend(url: URL, phoneNumberId: string, raw: string, caller: Caller): Response {
    const found = phones.get(phoneNumberId);
    if (!found || !caller.sees(found.wabaId)) return unsupportedObject("POST", phoneNumberId);
    const { wabaId } = found;

    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return invalid(url.pathname, raw, "The request body is not valid JSON");
    }

    // Read receipts and typing indicators share the endpoint but not the Message schema.
    if (isRecord(body) && body.status === "read" && body.type === undefined) {
      if (!passes(spec.validateMarkRead, body)) return invalid(url.pathname, body, describeErrors(spec.validateMarkRead.errors, spec.ajv));
      markedRead.push(String(body.message_id));
      return json(200, { success: true });
    }

    const problems = validateSendBody(body, spec);
    if (problems !== null || !isRecord(body)) return invalid(url.pathname, body, problems ?? "body must be an object");

    const injected = script[0];
    if (injected) {
      if (--injected.times <= 0) script.shift();
      if (injected.async) return accept(phoneNumberId, wabaId, body, undefined, injected.code, injected.details);
      const info = platformErrorInfo(injected.code);
      const errorBody = injected.code === 190
        ? { error: { message: "Error validating access token: Session has expired.", type: "OAuthException", code: 190, error_subcode: 463, fbtrace_id: fbtraceId() } }
        : platformErrorBody(injected.code, injected.details, injected.title);
      return json(injected.status ?? info.status, errorBody);
    }

    const clock = now();
    let bucket = throughputBuckets.get(phoneNumberId);
    if (!bucket) throughputBuckets.set(phoneNumberId, (bucket = new TokenBucket(throughput, 1000 / throughput, clock)));
    if (!bucket.take(clock)) return json(400, platformErrorBody(130429));

    let template: FakeTemplate | undefined;
    let failure: number | undefined;
    let failureDetails: string | undefined;
    const waId = digits(String(body.to));
    if (body.type === "template") {
      const checked = checkTemplate(wabaId, body);
      if ("code" in checked) return json(platformErrorInfo(checked.code).status, platformErrorBody(checked.code, checked.details));
      template = checked.template;
    } else {
      const last = lastInbound.get(`${phoneNumberId}|${waId}`);
      if (last === undefined || clock - last >= 24 * 3600_000) {
        if (windowErrors === "sync") return json(400, platformErrorBody(131047));
        failure = 131047;
      }
    }

    let pair = pairBuckets.get(`${phoneNumberId}|${waId}`);
    if (!pair) pairBuckets.set(`${phoneNumberId}|${waId}`, (pair = new TokenBucket(pairBurst, pairIntervalMs, clock)));
    if (!pair.take(clock)) return json(400, platformErrorBody(131056));

    if (failure === undefined) {
      failureDetails = mediaProblem(url.origin, body, template);
      // Meta fetches linked media after accepting the send, so a bad link surfaces as a failed status.
      if (failureDetails) failure = 131053;
    }
    return accept(phoneNumberId, wabaId, body, template, failure, failureDetails);
  }

  // --- media --------------------------------------------------------------------------------

  const zeros: Uint8Array<ArrayBuffer> = new Uint8Array(1024 * 1024);
  function serveMedia(req: Request, name: string): Response {
    const item = media.get(name);
    if (!item) return new Response("not found", { status: 404 });
    const headers = { "content-type": item.contentType, "content-length": String(item.size) };
    if (req.method === "HEAD") return new Response(null, { headers });
    // A Blob of views onto one zero buffer keeps Content-Length exact without holding 100 MB per item.
    const parts: Uint8Array<ArrayBuffer>[] = [];
    for (let left = item.size; left > 0; left -= zeros.length) parts.push(zeros.subarray(0, Math.min(left, zeros.length)));
    return new Response(new Blob(parts), { headers: { "content-type": item.contentType } });
  }

  // --- server -------------------------------------------------------------------------------

  async function route(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const raw = req.method === "POST" || req.method === "PUT" ? await req.text() : "";
    let recordedBody: unknown = raw || undefined;
    try {
      if (raw) recordedBody = JSON.parse(raw);
    } catch {
      // keep the raw text: an unparsable body is itself worth asserting on
    }
    requests.push({ at: now(), method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), body: recordedBody });

    if (url.pathname.startsWith("/media/") && (req.method === "GET" || req.method === "HEAD")) {
      return serveMedia(req, decodeURIComponent(url.pathname.slice("/media/".length)));
    }
    const match = /^\/(v\d+\.\d+)\/(.+?)\/?$/.exec(url.pathname);
    if (!match) return graphParamError("Unknown path components");
    const caller = authenticate(req);
    if (caller instanceof Response) return caller;
    const [version, path] = [match[1], match[2]];
    const segments = path.split("/").map(decodeURIComponent);
    if (req.method === "GET") return handleGraphGet(url, version, segments, caller);
    if (req.method === "POST" && segments.length === 2 && segments[1] === "messages") return handleSend(url, segments[0], raw, caller);
    return unsupportedObject(req.method, segments[0]);
  }

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      try {
        return await route(req);
      } catch (error) {
        // A bug in the fake should read as one, not as a platform answer the adapter must interpret.
        console.error("fake-chatapp internal error", error);
        return json(500, { error: { message: `fake-chatapp bug: ${String(error)}`, type: "FakeChatAppError", code: -1, fbtrace_id: fbtraceId() } });
      }
    },
  });
  const baseUrl = `http://127.0.0.1:${server.port}`;

  return {
    /** Base URL, e.g. http://127.0.0.1:PORT; Graph paths go under it (`${url}/v23.0/...`). */
    url: baseUrl,
    /** Every accepted send, in order (including ones answered 200 that fail later by webhook). */
    sent,
    /** Sends refused by schema validation; a well-behaved adapter leaves this empty. */
    invalidRequests,
    /** Every request that reached the fake, whatever the answer. */
    requests,
    /** Every webhook the fake posted, with the server's HTTP status. */
    webhooks,
    /** Errors from automatic webhook deliveries (e.g. the server was unreachable). */
    webhookErrors,
    /** wamids the server marked as read. */
    markedRead,
    /** What was patched in Meta's schemas before validating (see patchSchemas). */
    schemaPatches: spec.patches,

    // clock
    now,
    setNow(ms: number) {
      pinnedNow = ms;
    },
    advance(ms: number) {
      pinnedNow = now() + ms;
    },

    // state
    addWaba,
    addPhoneNumber,
    addTemplate,
    waba: (id: string) => wabas.get(id),
    template: (wabaId: string, idOrName: string, language?: string) => findTemplate(wabaId, idOrName, language),
    setTemplateStatus(wabaId: string, idOrName: string, status: TemplateStatus | string) {
      const template = findTemplate(wabaId, idOrName);
      if (!template) throw new Error(`fake-chatapp: no template ${idOrName} in ${wabaId}`);
      template.status = status;
    },
    /** A token that sees the listed WABAs, or every WABA when none are listed. */
    addToken(token: string, wabaIds?: string[]) {
      tokens.set(token, { wabaIds: wabaIds ?? "all", state: "valid" });
    },
    expireToken(token: string) {
      const record = tokens.get(token);
      if (record) record.state = "expired";
    },
    revokeToken(token: string) {
      const record = tokens.get(token);
      if (record) record.state = "revoked";
    },
    /** Opens (or with `at` far in the past, effectively closes) a window without posting a webhook. */
    openWindow(phoneNumberId: string, waId: string, at: number = now()) {
      lastInbound.set(`${phoneNumberId}|${digits(waId)}`, at);
    },
    closeWindow(phoneNumberId: string, waId: string) {
      lastInbound.delete(`${phoneNumberId}|${digits(waId)}`);
    },
    setWindowErrors(mode: "sync" | "async") {
      windowErrors = mode;
    },
    setWebhookUrl(url: string) {
      webhookUrl = url;
    },
    /** Serves GET/HEAD /media/<name> with this size and type; returns the absolute link. */
    addMedia(name: string, item: MediaSetup): string {
      media.set(name, item);
      return `${baseUrl}/media/${encodeURIComponent(name)}`;
    },

    // error injection
    /** The next send (or `times` sends) answers with this platform code, or accepts and fails by webhook if async. */
    failNext(code: number, opts: FailNextOptions = {}) {
      script.push({ ...opts, code, times: opts.times ?? 1 });
    },

    // webhooks
    inboundWebhook,
    statusWebhook,
    templateStatusWebhook,
    /** A user's text message; it also opens the 24-hour window for that pair. */
    async sendInbound(inbound: InboundOptions, delivery?: DeliveryOptions): Promise<{ wamid: string; response: Response }> {
      const prepared = inboundWebhook(inbound);
      return { wamid: prepared.wamid, response: await deliver(prepared, delivery) };
    },
    sendStatus(wamid: string, status: StatusName, opts?: StatusOptions, delivery?: DeliveryOptions): Promise<Response> {
      return deliver(statusWebhook(wamid, status, opts), delivery);
    },
    /** A template review/quality event; the fake's store follows it (PAUSED pauses sends, and so on). */
    sendTemplateStatus(update: TemplateStatusOptions, delivery?: DeliveryOptions): Promise<Response> {
      return deliver(templateStatusWebhook(update), delivery);
    },
    /** Posts any envelope (e.g. one of examplesFromOpenApi()) signed like the platform signs. */
    deliverPayload(payload: WebhookEnvelope | string, delivery?: DeliveryOptions): Promise<Response> {
      const body = typeof payload === "string" ? payload : JSON.stringify(payload);
      return deliver({ payload: JSON.parse(body) as WebhookEnvelope, body }, delivery);
    },
    deliver,
    /** Posts prepared webhooks one after another, e.g. delivered before sent. */
    async deliverInOrder(list: PreparedWebhook[], delivery?: DeliveryOptions): Promise<Response[]> {
      const responses: Response[] = [];
      for (const prepared of list) responses.push(await deliver(prepared, delivery));
      return responses;
    },
    /** Re-sends the last webhook byte for byte, signature included, as Meta's retries do. */
    redeliverLast(): Promise<Response> {
      if (!lastDelivery) throw new Error("fake-chatapp: nothing delivered yet");
      return post(lastDelivery.body, lastDelivery.headers, lastDelivery.payload);
    },
    /** Waits until every automatic webhook scheduled so far has been posted. */
    async settle(): Promise<void> {
      let seen: Promise<void> | undefined;
      while (seen !== chain) {
        seen = chain;
        await chain;
      }
    },
    /** In manual webhookDelivery mode: the queued follow-up webhooks, and a way to post them. */
    outbox,
    async flush(delivery?: DeliveryOptions): Promise<Response[]> {
      const responses: Response[] = [];
      while (outbox.length) responses.push(await deliver(outbox.shift()!, delivery));
      return responses;
    },
    /** The GET handshake Meta performs when a webhook URL is registered. */
    verify(url: string, verifyToken: string, challenge: string): Promise<Response> {
      const target = new URL(url);
      target.searchParams.set("hub.mode", "subscribe");
      target.searchParams.set("hub.challenge", challenge);
      target.searchParams.set("hub.verify_token", verifyToken);
      return deliverWebhook(new Request(target, { method: "GET" }));
    },
    /** Every webhook payload example in Meta's OpenAPI yaml (fresh copies). */
    examplesFromOpenApi(): WebhookEnvelope[] {
      return spec.webhookExamples.map((x) => structuredClone(x.payload));
    },
    stop() {
      server.stop(true);
    },
  };
}

export type FakeChatApp = ReturnType<typeof startFakeChatApp>;
