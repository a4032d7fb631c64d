// The spec's response envelope `{status_id, message, data}` and the schemas that document it.
import { Elysia, t, type TSchema } from "elysia";
import { ERROR_STATUS } from "../core/errors";

export interface Envelope<T> {
  status_id: number;
  message: string;
  data: T;
}

export function ok<T>(data: T, message = "OK"): Envelope<T> {
  return { status_id: 200, message, data };
}

export function envelopeOf(status: number, message: string, data: unknown): Envelope<unknown> {
  return { status_id: status, message, data };
}

/** The envelope around a success payload, for route response schemas. */
export function Envelope<T extends TSchema>(data: T, example?: { message?: string; data?: unknown }) {
  return t.Object(
    {
      status_id: t.Integer({ description: "Mirrors the HTTP status", examples: [200] }),
      message: t.String({ description: "Human-readable summary; wording may change", examples: [example?.message ?? "OK"] }),
      data,
    },
    example?.data !== undefined ? { examples: [{ status_id: 200, message: example.message ?? "OK", data: example.data }] } : {},
  );
}

export const ErrorData = t.Object(
  {
    error_code: t.Union([t.String(), t.Number()], {
      description: "Stable machine-readable code; the chat-app platform's numeric code for mirrored platform errors",
    }),
  },
  { additionalProperties: true, description: "error_code plus context fields for this error" },
);

export const ErrorEnvelope = t.Object(
  {
    status_id: t.Integer({ examples: [400] }),
    message: t.String({ examples: ["Invalid body field 'recipient_contact': must be a string"] }),
    data: ErrorData,
  },
  { title: "Error" },
);

const describeStatus: Record<number, string> = {
  400: "Invalid parameters (validation_error, invalid_json and the route's own codes)",
  401: "Missing or invalid API key or secret (unauthorized)",
  402: "Insufficient credits or free tier exhausted",
  403: "Key disabled, account suspended, or forbidden by a rule",
  404: "Not found in this workspace (not_found)",
  409: "Conflict with the current state",
  413: "Body larger than the server accepts (payload_too_large)",
  429: "Rate limit exceeded (rate_limited); see Retry-After",
  431: "Request line and headers larger than the server accepts (headers_too_large)",
  500: "Internal error, retry later (internal_error); data.request_id matches the server's log line and the X-Request-Id header",
  507: "The server's disk is full; nothing was stored (storage_full)",
};

/** Named schemas every module registers, so responses can refer to them as `$ref`s. */
export const models = new Elysia({ name: "pigeon-models" }).model({ Error: ErrorEnvelope });

/** The error responses a route can produce, spread into its `response` map for OpenAPI. */
export function errorResponses(...extra: number[]): Record<number, "Error"> {
  const statuses = [...new Set([400, 401, 403, 429, 500, ...extra])].sort();
  return Object.fromEntries(statuses.map((s) => [s, "Error"]));
}

export const errorStatusDescriptions = describeStatus;

export const errorCodeTable = Object.entries(ERROR_STATUS)
  .map(([code, status]) => `| \`${code}\` | ${status} |`)
  .join("\n");

export const Pagination = t.Object({
  page: t.Integer(),
  limit: t.Integer(),
  total: t.Integer(),
});
