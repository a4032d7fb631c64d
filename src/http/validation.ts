// Turns Elysia/TypeBox validation failures into a 400 message that names the field and the reason,
// and offers schema helpers whose failures already read well.
import type { TLiteral, TUnion } from "@sinclair/typebox";
import { t } from "elysia";
import { AppError } from "../core/errors";

/**
 * A union of string literals from a constant list (anyOf of consts, as t.Literal writes them), typed
 * as the list's members: TypeBox types a mapped array as an unknown-length union, hence the cast.
 */
export function literalUnion<const T extends readonly string[]>(values: T, options: Parameters<typeof t.Union>[1] = {}) {
  return t.Union(
    values.map((v) => t.Literal(v)),
    options,
  ) as unknown as TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }>;
}

export interface FieldProblem {
  location: string;
  field: string;
  reason: string;
}

interface ValueErrorLike {
  type?: number;
  path?: string;
  message?: string;
  value?: unknown;
  schema?: Record<string, unknown> & { anyOf?: Record<string, unknown>[] };
}

interface ValidationErrorLike {
  type: string;
  customError?: unknown;
  valueError?: ValueErrorLike;
}

// TypeBox ValueErrorType numbers we word ourselves.
const MISSING = 45;
const ADDITIONAL = 42;

function describeExpected(schema: Record<string, unknown> | undefined): string {
  if (!schema) return "a valid value";
  if (Array.isArray(schema.anyOf)) {
    const literals = schema.anyOf.filter((s) => "const" in s).map((s) => JSON.stringify(s.const));
    if (literals.length === schema.anyOf.length) return `one of ${literals.join(", ")}`;
    const numeric = schema.anyOf.find((s) => s.type === "integer" || s.type === "number");
    if (numeric) return describeExpected({ ...numeric, ...pickBounds(schema) });
    const kinds = [...new Set(schema.anyOf.map((s) => String(s.type ?? "value")))];
    return kinds.map(article).join(" or ");
  }
  if ("const" in schema) return JSON.stringify(schema.const);
  const type = String(schema.type ?? "value");
  if (type === "integer" || type === "number") {
    const noun = type === "integer" ? "a whole number" : "a number";
    return `${noun}${range(schema.minimum, schema.maximum, "")}`;
  }
  if (type === "string") return `a string${range(schema.minLength || undefined, schema.maxLength, " characters")}`;
  if (type === "array") return `an array${range(schema.minItems || undefined, schema.maxItems, " items")}`;
  return article(type);
}

function range(min: unknown, max: unknown, unit: string): string {
  if (min !== undefined && max !== undefined) return ` of ${min} to ${max}${unit}`;
  if (min !== undefined) return ` of at least ${min}${unit}`;
  if (max !== undefined) return ` of at most ${max}${unit}`;
  return "";
}

function pickBounds(schema: Record<string, unknown>) {
  const out: Record<string, unknown> = {};
  for (const k of ["minimum", "maximum"]) if (schema[k] !== undefined) out[k] = schema[k];
  return out;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** The field, location and reason of the first problem in an Elysia ValidationError. */
export function describeValidationError(error: ValidationErrorLike): FieldProblem {
  const location = error.type === "property" ? "query" : error.type;
  const custom = error.customError;
  if (custom && typeof custom === "object" && "field" in custom) {
    const c = custom as { field: string; reason: string };
    return { location, field: c.field, reason: c.reason };
  }
  const ve = error.valueError ?? {};
  const field = (ve.path ?? "").replace(/^\//, "").replaceAll("/", ".") || (location === "body" ? "body" : "value");
  if (typeof custom === "string") return { location, field, reason: custom };
  // TypeBox reports a missing property as the wrong type of `undefined`; a parsed body or query
  // never holds undefined, so that value means the field was left out.
  if (ve.type === MISSING || (ve.value === undefined && field !== "body" && field !== "value"))
    return { location, field, reason: "is required" };
  if (ve.type === ADDITIONAL) return { location, field, reason: "is not a known field" };
  if (field === "body" && ve.value === undefined) return { location, field, reason: "a JSON body is required" };
  return { location, field, reason: `must be ${describeExpected(ve.schema)}` };
}

/** The 400 for a value that failed its schema: its first problem, named with its field and place. */
export function validationFailure(ve: ValidationErrorLike): AppError {
  const problem = describeValidationError(ve);
  return new AppError("validation_error", validationMessage(problem), {
    field: problem.field,
    location: problem.location,
    reason: problem.reason,
  });
}

export function validationMessage(p: FieldProblem): string {
  if (p.field === "body") return `Invalid request body: ${p.reason}`;
  if (p.reason === "is required") return `${p.field} is required`;
  return `Invalid ${p.location} field '${p.field}': ${p.reason}`;
}

/**
 * Schema options that make a failure name its field. Elysia checks coerced query and path numbers
 * on their own, without the path, so those schemas must carry the name (pass at construction).
 */
export const fieldError = (field: string, reason: string) => ({ error: () => ({ field, reason }) });

/** One of a constant list of strings, as a parameter: a wrong value is named with the choices. */
export const choiceOf = <const T extends readonly string[]>(values: T, field: string) =>
  literalUnion(values, fieldError(field, `must be ${values.map((v) => `"${v}"`).join(" or ")}`));

/** A path id: a positive whole number. */
export const IdParam = (field: string) =>
  t.Integer({ minimum: 1, description: `${field} (integer)`, ...fieldError(field, "must be a positive whole number") });

/** The highest page number a list accepts: beyond it SQLite's offsets overflow (and no list is that long). */
export const PAGE_MAX = 1_000_000;

/** Page query parameters: page 1..PAGE_MAX, limit 1..max (default `def`). */
export const pageQuery = (def = 20, max = 100) => ({
  page: t.Optional(
    t.Integer({
      minimum: 1,
      maximum: PAGE_MAX,
      default: 1,
      description: `Page number, from 1 to ${PAGE_MAX}`,
      ...fieldError("page", `must be a whole number from 1 to ${PAGE_MAX}`),
    }),
  ),
  limit: t.Optional(
    t.Integer({
      minimum: 1,
      maximum: max,
      default: def,
      description: `Page size, default ${def}, at most ${max}`,
      ...fieldError("limit", `must be a whole number from 1 to ${max} (the page size limit is ${max})`),
    }),
  ),
});

/**
 * A route hook that refuses body fields its schema does not list. The schemas say
 * additionalProperties: false, but Elysia strips unknown keys before it validates, so without this
 * a misspelt field would vanish silently. It runs as `transform`, on the body as parsed.
 */
export function refuseUnknownFields(schema: { properties: Record<string, unknown> }, opts: { deep?: boolean } = {}) {
  return ({ body }: { body: unknown }) => {
    const field = unknownField(schema, body, "", opts.deep === true);
    if (field === null) return;
    const reason = "is not a known field";
    throw new AppError("validation_error", `Invalid body field '${field}': ${reason}`, { field, location: "body", reason });
  };
}

/** The object schema a value of `schema` may be (itself, or an object branch of a union such as Nullable). */
function objectSchema(schema: unknown): { properties: Record<string, unknown> } | null {
  const s = schema as { properties?: Record<string, unknown>; anyOf?: unknown[] } | null;
  if (s?.properties) return s as { properties: Record<string, unknown> };
  const branch = s?.anyOf?.find((b) => (b as { properties?: unknown }).properties !== undefined);
  return (branch as { properties: Record<string, unknown> } | undefined) ?? null;
}

/** The first field of `value` its schema does not name (dotted from the body), deep: in nested objects too. */
function unknownField(schema: { properties: Record<string, unknown> }, value: unknown, prefix: string, deep: boolean): string | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  for (const [key, inner] of Object.entries(value)) {
    const sub = schema.properties[key];
    if (sub === undefined) return `${prefix}${key}`;
    const nested = deep ? objectSchema(sub) : null;
    const found = nested ? unknownField(nested, inner, `${prefix}${key}.`, deep) : null;
    if (found !== null) return found;
  }
  return null;
}
