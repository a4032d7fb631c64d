// Meta's OpenAPI description of the platform, loaded and compiled once per process: the fake
// checks every send body against it, and its webhook examples feed the tests.
import { createHash } from "node:crypto";
import { readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ErrorObject, ValidateFunction } from "ajv";
import Ajv2019 from "ajv/dist/2019";
import addFormats from "ajv-formats";
import { parse as parseYaml } from "yaml";

/** Meta's file, kept with its MIT licence among the tests' fixtures: a clone alone runs the fake. */
const OPENAPI_FILE = resolve(import.meta.dir, "../../fixtures/whatsapp-openapi/business-messaging-api_v23.0.yaml");
const SEND_PATH = "/{Version}/{Phone-Number-ID}/messages";

/** The fixture, or another version of the file named by CHATAPP_OPENAPI_PATH. */
export function defaultOpenApiPath(): string {
  return process.env.CHATAPP_OPENAPI_PATH || OPENAPI_FILE;
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

export interface OpenApi {
  ajv: Ajv2019;
  validateMessage: ValidateFunction;
  validateBase: ValidateFunction;
  validateByType: Map<string, ValidateFunction>;
  validateMarkRead: ValidateFunction;
  webhookExamples: NamedWebhookExample[];
  /** What we changed in Meta's schemas before compiling, and why (see patchSchemas). */
  patches: string[];
}

export type Json = Record<string, unknown>;
export const isRecord = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x);

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
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
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
    if (Array.isArray(node)) {
      for (const [i, item] of node.entries()) walk(item, [...path, String(i)]);
      return;
    }
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
export const passes = (validate: ValidateFunction, value: unknown): boolean => validate(value) === true;

export function describeErrors(errors: ErrorObject[] | null | undefined, ajv: Ajv2019): string {
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
