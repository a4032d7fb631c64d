// What the API document says of one route beyond its schemas, its declared auth and its error
// statuses, written beside its operation id in the route's detail:
//   detail: { operationId: "sendSms", summary: "…", ...documented({ idempotent: true }) }
// src/docs takes these notes off each generated operation and writes them out as OpenAPI (a header
// parameter, a form body, another media type); they never reach /openapi.json as they are.

export interface RouteNotes {
  /** Honours Idempotency-Key: its replies go through src/http/idempotency's reply. */
  idempotent?: true;
  /** The header a provider or platform signs its calls with, checked by the handler over the raw body. */
  signedBy?: { name: string; description: string };
  /** A Twilio-compatible operation's form fields, as a JSON Schema object. */
  form?: Record<string, unknown>;
  /** The success answer's other media types beside JSON, by media type. */
  alsoAs?: Record<string, unknown>;
  /** The success answer is not the envelope but bytes: its description and its media types, in JSON's place. */
  binary?: { description: string; content: Record<string, unknown> };
}

/** The key the notes travel under, from a route's detail to its generated operation. */
export const ROUTE_NOTES = "x-pigeon-notes";

/** A route's notes, to spread into its detail. */
export function documented(notes: RouteNotes): { [ROUTE_NOTES]: RouteNotes } {
  return { [ROUTE_NOTES]: notes };
}
