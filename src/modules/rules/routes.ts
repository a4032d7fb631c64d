// Inbound rules through the API: create, list, get, update, delete, the order they are tried in,
// and a tester that says what a message would set off without setting it off.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { AppError } from "../../core/errors";
import { literalUnion, refuseUnknownFields } from "../../http/validation";
import { DELIVERY_TYPES } from "../../core/kinds";
import type { Services } from "../../services-type";
import { DEFAULT_REPLY_WINDOW_SECONDS, REPLIES_PER_MINUTE } from "./service";

const Channel = literalUnion(DELIVERY_TYPES);
const Clock = t.String({ description: "24-hour time HH:MM", examples: ["09:00"] });

const Match = t.Object(
  {
    keyword: t.Optional(
      t.Union(
        [t.String({ minLength: 1, maxLength: 32 }), t.Array(t.String({ minLength: 1, maxLength: 32 }), { minItems: 1, maxItems: 20 })],
        {
          description:
            'The message\'s first word, case-insensitively and without punctuation around it: "PRICE" matches "price?" and "Price list please"',
        },
      ),
    ),
    regex: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 500,
        description:
          "A regular expression found anywhere in the message, RE2 syntax (no backreferences or lookaround): it runs in time proportional to the message, whatever the pattern",
      }),
    ),
    case_sensitive: t.Optional(t.Boolean({ description: "With regex: match case as written (default: ignore case)" })),
    any: t.Optional(t.Literal(true, { description: "Every message" })),
  },
  { additionalProperties: false, description: "Exactly one of keyword, regex or any" },
);

const Action = t.Object(
  {
    reply: t.Optional(
      t.Object(
        {
          text: t.Optional(t.String({ minLength: 1, maxLength: 1600 })),
          template_id: t.Optional(t.Integer({ minimum: 1, description: "A template of the workspace, rendered with `variables`" })),
          variables: t.Optional(t.Record(t.String(), t.String({ maxLength: 500 }))),
        },
        {
          additionalProperties: false,
          description: "Sent back to the sender through the device (and SIM) the message came in on; text or a template",
        },
      ),
    ),
    webhook: t.Optional(
      t.Object(
        { url: t.String({ minLength: 1, maxLength: 2048, format: "uri" }) },
        {
          additionalProperties: false,
          description:
            "The URL gets a `rule.matched` event with the message, signed as every Pigeon webhook is, from a webhook subscription of the rule's own (listed with the others; its secret is shown once, when created)",
        },
      ),
    ),
    forward: t.Optional(
      t.Object(
        {
          to: t.String({ minLength: 1, maxLength: 32, description: "A staff number, E.164" }),
          channel: t.Optional(Channel),
          device_id: t.Optional(t.Integer({ minimum: 1, description: "The device it goes through; else the workspace's routing" })),
        },
        { additionalProperties: false, description: 'An SMS (or chat-app message) to the staff number: "From <sender>: <text>"' },
      ),
    ),
    tag: t.Optional(
      t.String({ minLength: 1, maxLength: 50, description: "A tag given to the sender's contact, created if there is none" }),
    ),
    email: t.Optional(
      t.Object(
        {
          to: t.Array(t.String({ maxLength: 254 }), { minItems: 1, maxItems: 20, description: "Addresses the message is emailed to" }),
          subject: t.Optional(
            t.String({
              maxLength: 200,
              description: 'The subject; {from}, {name} and {text} are replaced (default "Message from {name}")',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            "An email of the message through PIGEON_SMTP_RELAY_URL (docs/email.md), its Reply-To the conversation's when the workspace has a reply_domain",
        },
      ),
    ),
  },
  { additionalProperties: false, description: "At least one of reply, webhook, forward, tag and email" },
);

const When = t.Object(
  {
    outside_hours: t.Optional(
      t.Object(
        {
          start: Clock,
          end: Clock,
          days: t.Optional(
            t.Array(t.String({ examples: ["mon"] }), {
              maxItems: 7,
              description: "The open days (sun, mon, tue, wed, thu, fri, sat); default mon to fri",
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            "The rule holds only outside these open hours, in the workspace's time zone (settings `time_zone`): before start, from end on, and all day on other days",
        },
      ),
    ),
  },
  { additionalProperties: false },
);

const ruleFields = {
  name: t.String({ minLength: 1, maxLength: 100 }),
  match: Match,
  channels: t.Optional(t.Nullable(t.Array(Channel, { maxItems: 2, description: "The channels it hears; default every one" }))),
  action: Action,
  continue: t.Optional(
    t.Boolean({ description: "After this rule acts, the next matching one may act too (default false: the first match wins)" }),
  ),
  when: t.Optional(t.Nullable(When)),
  priority: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000, description: "Lower goes first; default after the last rule" })),
  enabled: t.Optional(t.Boolean()),
  reply_window_seconds: t.Optional(
    t.Integer({
      minimum: 10,
      maximum: 604800,
      description: `At most one automatic reply per sender from this rule within this time (default ${DEFAULT_REPLY_WINDOW_SECONDS})`,
    }),
  ),
};

const CreateBody = t.Object(ruleFields, {
  additionalProperties: false,
  examples: [
    { name: "Prices", match: { keyword: "PRICE" }, action: { reply: { text: "Our prices: example.com/prices" } } },
    {
      name: "Closed",
      match: { any: true },
      when: { outside_hours: { start: "09:00", end: "17:00", days: ["mon", "tue", "wed", "thu", "fri"] } },
      action: { reply: { text: "We are closed; we answer from 9:00 on weekdays." } },
      continue: true,
    },
  ],
});
const UpdateBody = t.Object(
  {
    rule_id: t.Integer(),
    name: t.Optional(ruleFields.name),
    match: t.Optional(Match),
    channels: ruleFields.channels,
    action: t.Optional(Action),
    continue: ruleFields.continue,
    when: ruleFields.when,
    priority: ruleFields.priority,
    enabled: ruleFields.enabled,
    reply_window_seconds: ruleFields.reply_window_seconds,
  },
  { additionalProperties: false, examples: [{ rule_id: 1, enabled: false }] },
);

const RuleView = t.Object({
  rule_id: t.Integer(),
  name: t.String(),
  priority: t.Integer(),
  enabled: t.Boolean(),
  match: t.Record(t.String(), t.Unknown()),
  channels: t.Nullable(t.Array(t.String())),
  action: t.Record(t.String(), t.Unknown(), {
    description: "As given; a webhook action also says its `webhook_id`, and its `secret` in the answer that created it",
  }),
  continue: t.Boolean(),
  when: t.Nullable(t.Record(t.String(), t.Unknown())),
  reply_window_seconds: t.Integer(),
  matched_count: t.Integer(),
  last_matched_at: t.Nullable(t.String({ format: "date-time" })),
  created_at: t.String({ format: "date-time" }),
  updated_at: t.String({ format: "date-time" }),
});

const Outcome = t.Object({
  rule_id: t.Integer(),
  name: t.String(),
  actions: t.Array(
    t.Object({
      action: t.String(),
      done: t.Boolean({ description: "false: held back, `reason` says why (an opted-out sender, the loop protection)" }),
      reason: t.Nullable(t.String()),
    }),
  ),
});

/** Unknown fields are refused at every level (the schema alone would drop them without a word). */
const refuseUnknown = (schema: { properties: Record<string, unknown> }) => refuseUnknownFields(schema, { deep: true });

export type RuleRoutesDeps = Pick<Services, "rules">;

export function ruleRoutes(s: RuleRoutesDeps) {
  const { rules } = s;
  const description =
    "Rules are tried in `priority` order on every message that comes in (SMS, MMS text and chat-app), after the opt-out, opt-in and help keywords: " +
    "a message that is one of those sets off no rule. The first rule that matches acts and the others are skipped, unless it says `continue`. " +
    "Automatic replies are held back: never to an opted-out sender or to one of the workspace's own numbers (its cloud numbers, its pool members' numbers), " +
    `at most one per sender per rule within \`reply_window_seconds\`, and at most ${REPLIES_PER_MINUTE} a minute to one sender across rules. `;
  return new Elysia({ prefix: "/v1/api/rule", tags: ["Rules"] })
    .use(declaredAuth())
    .use(models)
    .post("/create", async ({ auth, body }) => ok(await rules.create(auth.workspaceId, body), "Rule created"), {
      parse: "json",
      body: CreateBody,
      transform: refuseUnknown(CreateBody),
      response: { 200: Envelope(RuleView), ...errorResponses(404, 409) },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "createRule",
        summary: "Create an inbound rule",
        description:
          description +
          "Errors: 400 `validation_error`, `invalid_regex`, `invalid_phone_number` (forward.to), `invalid_webhook_url`; 404 `not_found` (a template or device); " +
          "409 `duplicate_rule` (the name is taken), `conflict` (100 rules, or 25 webhooks).",
      },
    })
    .get("/list", async ({ auth }) => ok(await rules.list(auth.workspaceId), "Rules fetched"), {
      response: { 200: Envelope(t.Object({ rules: t.Array(RuleView) })), ...errorResponses() },
      auth: "apiKey",
      scope: "admin",
      detail: { operationId: "listRules", summary: "List inbound rules", description: "In the order they are tried." },
    })
    .post(
      "/test",
      async ({ auth, body }) => {
        const at = body.at === undefined ? undefined : Date.parse(body.at);
        if (at !== undefined && Number.isNaN(at))
          throw new AppError("validation_error", "Invalid body field 'at': must be an ISO 8601 date-time", {
            field: "at",
            location: "body",
          });
        return ok(await rules.test(auth.workspaceId, { ...body, at }), "Rules tested");
      },
      {
        parse: "json",
        body: t.Object(
          {
            body: t.String({ maxLength: 4096, description: "The text of a message" }),
            channel: t.Optional(Channel),
            from: t.Optional(
              t.String({ maxLength: 32, description: "The sender, E.164: the loop protection and opt-outs are checked for it" }),
            ),
            at: t.Optional(t.String({ format: "date-time", description: "When it comes in (business hours); default now" })),
          },
          { additionalProperties: false, examples: [{ body: "price?", from: "+14155550100" }] },
        ),
        response: { 200: Envelope(t.Object({ at: t.String({ format: "date-time" }), matches: t.Array(Outcome) })), ...errorResponses() },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "testRules",
          summary: "Test the inbound rules on a message",
          description: "Which rules a message would set off and what each would do, without doing any of it.",
        },
      },
    )
    .post("/priority", async ({ auth, body }) => ok(await rules.reorder(auth.workspaceId, body.rule_ids), "Rules reordered"), {
      parse: "json",
      body: t.Object(
        {
          rule_ids: t.Array(t.Integer(), {
            minItems: 1,
            maxItems: 100,
            description: "Rules in the order wanted; the others follow in theirs",
          }),
        },
        { additionalProperties: false, examples: [{ rule_ids: [3, 1, 2] }] },
      ),
      response: { 200: Envelope(t.Object({ rules: t.Array(RuleView) })), ...errorResponses(404) },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "orderRules",
        summary: "Order the inbound rules",
        description: "Numbers the rules' `priority` 10, 20, 30… in the order given.",
      },
    })
    .get("/:rule_id", async ({ auth, params }) => ok(await rules.get(auth.workspaceId, params.rule_id), "Rule fetched"), {
      params: t.Object({ rule_id: t.Integer() }),
      response: { 200: Envelope(RuleView), ...errorResponses(404) },
      auth: "apiKey",
      scope: "admin",
      detail: { operationId: "getRule", summary: "Get an inbound rule" },
    })
    .post(
      "/update",
      async ({ auth, body }) => {
        const { rule_id, ...change } = body;
        return ok(await rules.update(auth.workspaceId, rule_id, change), "Rule updated");
      },
      {
        parse: "json",
        body: UpdateBody,
        transform: refuseUnknown(UpdateBody),
        response: { 200: Envelope(RuleView), ...errorResponses(404, 409) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "updateRule",
          summary: "Update an inbound rule",
          description:
            "Changes the fields given; `action` and `match` replace the whole object. Removing the webhook action deletes its subscription.",
        },
      },
    )
    .post("/delete", async ({ auth, body }) => ok(await rules.remove(auth.workspaceId, body.rule_id), "Rule deleted"), {
      parse: "json",
      body: t.Object({ rule_id: t.Integer() }, { additionalProperties: false }),
      response: { 200: Envelope(t.Object({ rule_id: t.Integer(), deleted: t.Boolean() })), ...errorResponses(404) },
      auth: "apiKey",
      scope: "admin",
      detail: { operationId: "deleteRule", summary: "Delete an inbound rule", description: "Its webhook subscription goes with it." },
    });
}
