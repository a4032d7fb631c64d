// The OpenAPI document's hand-written parts: what Pigeon is, how to authenticate, the envelope,
// the error codes, and the decisions we took where the spec says "not shown".
import { toOpenAPISchema } from "@elysiajs/openapi/openapi";
import { Elysia, type AnyElysia } from "elysia";
import { API_KEY_SECURITY, declaredAuth } from "../http/declared-auth";
import { errorCodeTable, ErrorEnvelope, errorStatusDescriptions } from "../http/envelope";
import { eventCatalogueMarkdown } from "../modules/events/catalogue";
import { VERSION } from "../version";
import { ROUTE_NOTES, type RouteNotes } from "../http/route-doc";
import { documentedPathOf, refineDocument, SECURITY_SCHEMES } from "./refine";

// The guide below is long (error table, decisions, event catalogue); /docs shows it folded so the
// Authorize button and the operations come first. Tools that read the document get all of it.
const description = `
Pigeon sends text messages by SMS (through a paired Android phone, or a cloud number) and through the
chat-app channel, with scheduling, templates, contacts, threads, webhooks and credits.

Authorize with your API key and secret (**Authorize** below), then start with **Sending**.

<details>
<summary><strong>The guide</strong>: authentication, the envelope, limits, error codes, decisions, webhooks and events</summary>

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
- A notification starts \`pending\` and moves to \`sent\`, \`delivered\` or \`failed\`, never backwards. \`cancelled\` is our addition: a pending notification cancelled before its channel took it.
- Sends answer at once; the worker delivers. Send routes take an \`Idempotency-Key\` header (24 hours).
- A paired phone silent for more than 5 minutes refuses immediate sends (400 \`device_offline\`); scheduled sends are accepted and wait for it.
- Only SMS through a cloud number costs credits (one per segment); failures and cancels refund.
- Bulk sends answer 200 with each item's notification or error.
- Chat-app: the window is taken to close one minute before 24 hours after the user last wrote. Freeform sends to a closed window: 403 with \`error_code\` 131047; the test endpoint with templates available: 403 \`use_template\`. A paused template: 400 with 132015, a disabled one 132016. Platform failures reported later land on the notification with the platform's code (as a string). 133004 counts as permanent, per the spec.
- A chat-app number blocked by an account-level error answers 403 \`device_blocked\` until relinked and a send succeeds.

## Safe sending: opt-outs, quiet hours, failover
- **Opt-outs.** An inbound message on any channel whose whole text is an opt-out keyword (STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT by default; case and spaces ignored) puts its sender on the workspace's suppression list, answers once with the opt-out reply (chat-app: inside the 24-hour window) and emits \`contact.opted_out\`; START, UNSTOP or YES from a suppressed number lifts it (\`contact.opted_in\`, with a reply); HELP or INFO get the help reply. The message still lands in its thread. Every send to a suppressed number is refused with **403** \`recipient_opted_out\` (\`opted_out_at\`, \`source\`); a bulk item fails alone; pending messages no channel holds yet fail with \`recipient_opted_out\`, refunded. \`GET /api/optout/list\` is the audit; \`POST /api/optout/add\` and \`/remove\` change it by hand. Keywords, replies and their lists are workspace settings (\`POST /api/workspace/settings\`); an empty list turns a rule off.
- **Quiet hours.** With \`quiet_hours\` set, a send due inside them in the recipient's local time (the contact's \`timezone\`, else the most populous zone of the number's country) is held until they end: the reply's \`scheduled_at\` and \`quiet_hours.until\` say when. \`priority\` ≥ 100 and \`transactional: true\` are not held.
- **Failover.** \`routes\` (or the workspace's \`default_routes\`) names an order of routes: phone, cloud, chatapp. A route with no usable device now is skipped at once (listed in \`skipped_routes\`). When the carrying route fails in a way another route could avoid, the same notification moves to the next route: a phone offline for PIGEON_FAILOVER_GRACE seconds (120) past the offline threshold with the message not yet taken up, a carrier or platform rejection (e.g. 131026, not a chat-app user), a blocked number, retries exhausted without doubt. Not moved: an opt-out, an expiry, a cancel, a recipient who unsubscribed on the provider (21610) or stopped marketing (131050), and a failure after which the provider may have the message (an interrupted call) — it could go twice. Its \`route\` tells which route carries it; its log holds a \`failover\` entry per move. Only the route that sends is charged: the old route's credits are refunded on the move. A chat-app route with a closed window sends \`chatapp_template_id\` with \`variables\`, else it is skipped.
- **Preview.** \`POST /api/sms/preview\` runs a send body through every check without storing: text, encoding, UCS-2 characters, segments, route, device, cost, hold, and the refusal a send would meet.

## Webhooks and events
Subscribe with \`POST /api/webhook/create\` (\`url\`, \`events\` or \`"*"\`). Each delivery is a POST of
\`{id, type, created_at, workspace_id, data}\` with \`X-Pigeon-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>\`,
\`X-Pigeon-Event\` (the event id), \`X-Pigeon-Event-Type\` and \`X-Pigeon-Delivery\`. Verify the signature over the raw body, reject a \`t\`
far from your clock, and de-duplicate on the event id: delivery is at least once. Events are written in the same transaction as the change
that causes them, so none is lost to a crash.

${eventCatalogueMarkdown()}

</details>
`;

const tags = [
  { name: "Sending", description: "Send SMS now or later, one at a time or in bulk" },
  { name: "Safe sending", description: "Opt-outs (STOP and the audit), quiet hours, failover defaults and keyword replies" },
  { name: "Devices", description: "Phones, cloud numbers and business numbers that carry messages" },
  { name: "Projects", description: "Workspaces" },
  { name: "Contacts", description: "The workspace's address book" },
  { name: "Templates", description: "Reusable message bodies with {{variables}}" },
  { name: "Notifications", description: "What happened to each message: status, attempts, the carrier's or platform's reasons; cancel" },
  { name: "Stats", description: "Notification counts and the credit balance" },
  { name: "Overview aliases", description: "The overview's short REST paths over the same services" },
  { name: "Chat-app", description: "The chat-app channel: business numbers, templates, the 24-hour window" },
  { name: "Webhooks", description: "Signed, retried, at-least-once event deliveries to your URLs" },
  { name: "Threads", description: "Conversations: every outbound and inbound message, per person and channel" },
  {
    name: "Pools",
    description: "Sender pools: which phone, SIM or cloud number each SMS goes out through (sticky, round robin, least loaded)",
  },
  {
    name: "Rules",
    description: "Inbound rules: what Pigeon does by itself with a message that comes in (reply, webhook, forward, tag), in priority order",
  },
  {
    name: "Verify",
    description:
      "One-time codes: a service says how codes are made and sent and its fraud limits; start sends a code, check approves it. The same as Twilio's Verify v2 under /v2/Services",
  },
  { name: "Email", description: "The email bridge: how mail to the SMTP listener becomes SMS, and the secret address" },
  { name: "Privacy", description: "One person's data: export it (access) or erase it (the right to be forgotten)" },
  {
    name: "Phone (companion app)",
    description: "The SMS Gateway for Android app's protocol under /mobile/v1; called by paired phones, not API clients",
  },
  { name: "Callbacks", description: "Called by providers and platforms, not by API clients; signed by them" },
  { name: "System", description: "Health and server information" },
  {
    name: "Twilio compatible",
    description:
      "Twilio's Messages API (2010-04-01) under /2010-04-01/Accounts/{AccountSid}: form-encoded requests, JSON answers, Twilio's error body and codes, HTTP Basic with the " +
      "workspace's account SID and auth token (`pigeon twilio credentials`) or an API key and secret. Status callbacks and incoming-message posts are signed with " +
      "X-Twilio-Signature; TwiML answers are sent back. Point a Twilio helper library's base URL here.",
  },
  {
    name: "SMSGate compatible",
    description:
      "SMSGate's third-party API under /3rdparty/v1, so its clients and integrations work unchanged: Basic auth with an API key and secret, or its Bearer tokens. " +
      "Every operation listed here is also served, identically, under /api/3rdparty/v1 (what a private server's base URL ends with).",
  },
];

/**
 * Elysia's coercing t.Integer/t.Boolean show up as `anyOf: [string with a format, integer]`; readers
 * want the type they send. This folds such unions into their real branch.
 */
function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy);
  if (!node || typeof node !== "object") return node;
  // TypeBox's internal $id markers mean nothing to OpenAPI readers.
  const entries = Object.entries(node as Record<string, unknown>).filter(([k]) => k !== "$id");
  const obj = Object.fromEntries(entries.map(([k, v]) => [k, tidy(v)]));
  if (Array.isArray(obj.anyOf)) {
    const branches = (obj.anyOf as Record<string, unknown>[]).filter(
      (b) => !(b.type === "string" && ["integer", "numeric", "boolean"].includes(String(b.format))),
    );
    if (branches.length === 1) {
      const { anyOf: _, ...rest } = obj;
      return { ...rest, ...branches[0] };
    }
    obj.anyOf = branches;
  }
  return obj;
}

type Operations = Record<
  string,
  Record<
    string,
    {
      operationId?: string;
      security?: unknown[];
      [ROUTE_NOTES]?: RouteNotes;
      responses?: Record<string, { description?: string; content?: Record<string, unknown> }>;
    }
  >
>;

function describeResponses(paths: Operations, notes: Map<string, RouteNotes>) {
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        response.description =
          status === "200" ? "Success: the envelope with `data`" : (errorStatusDescriptions[Number(status)] ?? `Error ${status}`);
      }
      const noted = notes.get(`${method} ${documentedPathOf(path)}`);
      const extra = noted?.alsoAs;
      const ok = op.responses?.["200"];
      if (noted?.binary && ok) {
        ok.description = noted.binary.description;
        ok.content = noted.binary.content;
      }
      if (extra && ok) {
        ok.content ??= {};
        Object.assign(ok.content, extra);
      }
    }
  }
}

/** Serves /openapi.json, built once from the finished app's routes. */
export function openapiRoutes(getApp: () => AnyElysia, publicUrl: string | null = null) {
  let cached: string | null = null;
  const build = () => {
    // Twilio's paths end in .json, which the generator would take for static files.
    const generated = toOpenAPISchema(getApp(), { paths: ["/openapi.json"], staticFile: false });
    // Each operation's security comes from its route's declared auth; the API key's is the
    // document's default, so those operations inherit it rather than repeat it. Each operation's id
    // is its route's own (detail.operationId), placed last as the generator places the ids it makes.
    // The route's notes for the document (src/http/route-doc.ts) are taken off, to be written out below.
    const notes = new Map<string, RouteNotes>();
    for (const [path, methods] of Object.entries(generated.paths as Operations)) {
      for (const [method, op] of Object.entries(methods)) {
        const noted = op[ROUTE_NOTES];
        if (noted) notes.set(`${method} ${documentedPathOf(path)}`, noted);
        delete op[ROUTE_NOTES];
        if (JSON.stringify(op.security) === JSON.stringify(API_KEY_SECURITY)) delete op.security;
        const { operationId } = op;
        delete op.operationId;
        op.operationId = operationId;
      }
    }
    const doc = tidy({
      openapi: "3.1.0",
      info: { title: "Pigeon API", version: VERSION, description },
      tags,
      paths: generated.paths,
      components: {
        schemas: { ...generated.components.schemas, Error: ErrorEnvelope },
        securitySchemes: SECURITY_SCHEMES,
      },
      security: API_KEY_SECURITY,
    }) as { paths: Operations };
    describeResponses(doc.paths, notes);
    return JSON.stringify(refineDocument(doc, publicUrl, notes));
  };
  return new Elysia({ name: "openapi-json" }).use(declaredAuth()).get(
    "/openapi.json",
    () => {
      cached ??= build();
      return new Response(cached, { headers: { "content-type": "application/json; charset=utf-8" } });
    },
    {
      auth: "public",
      detail: { hide: true },
    },
  );
}
