// The OpenAPI document's hand-written parts: what Pigeon is, how to authenticate, the envelope,
// the error codes, and the decisions we took where the spec says "not shown".
import { openapi } from "@elysiajs/openapi";
import { errorCodeTable, ErrorEnvelope } from "../http/envelope";
import { VERSION } from "../version";

const description = `
Pigeon sends text messages by SMS (through a paired Android phone, or a cloud number) and through the
chat-app channel, with scheduling, templates, contacts, threads, webhooks and credits.

## Authentication
Every \`/v1\` request carries an API key and its secret, either as
\`Authorization: Bearer <API_KEY>\` with \`X-API-SECRET: <API_SECRET>\`, or as \`x-api-key\` with \`x-api-secret\`.
Missing or wrong key or secret: **401** \`unauthorized\`. Disabled key: **403** \`key_disabled\`.
Suspended account: **403** \`account_suspended\`. The first start prints one key and secret;
\`pigeon keys create --name NAME --json\` makes more. A key sees only its own workspace (project):
another workspace's ids answer 404.

## The envelope
Every response is \`{status_id, message, data}\`; \`status_id\` equals the HTTP status. \`message\` is for
people and may change; branch on \`data.error_code\`, which every error carries. Validation failures
answer **400** \`validation_error\` with \`data.field\`, \`data.location\` and \`data.reason\`.

## Limits
Per key: 60 requests a minute and 10,000 a day by default (set per plan). Every authenticated response
carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` (unix seconds, end of the
current minute); over a limit: **429** \`rate_limited\` with \`Retry-After\` in seconds. Page \`limit\` is at
most 100; batch register takes at most 10 devices, batch delete at most 50 ids. Bodies over 1 MiB: **413**.

## Error codes
| error_code | HTTP |
|---|---|
${errorCodeTable}

Chat-app failures mirrored from the platform carry the platform's numeric code as \`error_code\`.

## Decisions where the spec is silent
- Reads are \`GET\`; everything that takes a body is \`POST\` (batch operations, contact search/create/update/delete, notification cancel, bulk send). A wrong method answers **405** \`method_not_allowed\` with an \`Allow\` header.
- Device kinds: \`sms\` (a paired phone), \`cloud\` (a cloud number; costs credits), \`chatapp\` (a business number).
- Batch delete and batch status updates are all-or-nothing: one unknown id and nothing changes.
- Deleting a device hides it from every endpoint; its notification history stays.
- Device usage: \`limit\` and \`remaining\` are -1 on an unlimited plan.
- Timestamps are ISO 8601 UTC with milliseconds, except template timestamps, which use \`YYYY-MM-DD HH:MM:SS\` (UTC).
`;

export function openapiPlugin() {
  return openapi({
    path: "/openapi",
    specPath: "/openapi.json",
    provider: null,
    documentation: {
      info: { title: "Pigeon API", version: VERSION, description },
      tags: [
        { name: "Devices", description: "Phones, cloud numbers and business numbers that carry messages" },
        { name: "Projects", description: "Workspaces" },
        { name: "Contacts", description: "The workspace's address book" },
        { name: "Templates", description: "Reusable message bodies with {{variables}}" },
        { name: "System", description: "Health and server information" },
      ],
      components: {
        securitySchemes: {
          ApiKeyBearer: { type: "http", scheme: "bearer", description: "The API key as a Bearer token" },
          ApiKeyHeader: { type: "apiKey", in: "header", name: "x-api-key", description: "The API key (alternative to Bearer)" },
          ApiSecret: { type: "apiKey", in: "header", name: "X-API-SECRET", description: "The API secret; always required with the key" },
        },
        schemas: { Error: ErrorEnvelope as never },
      },
      security: [
        { ApiKeyBearer: [], ApiSecret: [] },
        { ApiKeyHeader: [], ApiSecret: [] },
      ],
    },
    exclude: { paths: ["/openapi"] },
  });
}
