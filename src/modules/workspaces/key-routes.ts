// A workspace's API keys over the API: list, create (the secret answered once) and change their
// name and limits (src/core/scopes.ts). Every route needs `admin`, the scope that is every power
// the API has: a key that may manage keys may make one with any scope, so no narrower key can
// give itself or another more than it has.
import { Elysia, t } from "elysia";
import { KEY_SCOPES, parseDailyCap, parseExpiry, parseRecipients, SCOPE_DESCRIPTIONS } from "../../core/scopes";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { refuseUnknownFields } from "../../http/validation";
import type { Services } from "../../services-type";
import { keyView, type KeyOptions } from "../accounts/service";

const scopeList = KEY_SCOPES.map((s) => `\`${s}\` (${SCOPE_DESCRIPTIONS[s]})`).join("; ");

const Scopes = t.Nullable(t.Array(t.UnionEnum([...KEY_SCOPES]), { minItems: 1, uniqueItems: true }), {
  description: `What the key may do; null (the default) for every scope. The scopes: ${scopeList}.`,
});
const Recipients = t.Nullable(
  t.Union([t.String({ maxLength: 2000 }), t.Array(t.String({ maxLength: 32 }), { minItems: 1, maxItems: 1000 })]),
  {
    description:
      "Whom the key may send to: `anyone` (or null, the default), `contacts` (numbers in the workspace's contacts), `tag:<tag>` (contacts with that tag), or E.164 numbers (an array, or one string with commas). A send to anyone else: 403 `recipient_not_allowed`.",
    examples: ["contacts", "tag:customers", ["+14155552671"]],
  },
);
const DailyCap = t.Nullable(t.Integer({ minimum: 1, maximum: 999_999_999 }), {
  description:
    "Sends the key may have accepted in one UTC day, every message of a bulk send counted, whatever becomes of it later; null for none. Past it: 403 `key_daily_cap`.",
});
const Expires = t.Nullable(t.String({ maxLength: 64 }), {
  description:
    "When the key stops working (401 `key_expired`): a date (`2027-01-31`, the end of that UTC day), an ISO 8601 instant with its zone, or a span from now (`30d`, `12h`, `90m`); null or `never` for never.",
  examples: ["2027-01-31", "30d"],
});

const NeedsApproval = t.Boolean({
  description:
    "Whether the key's sends wait for a person's approval (`awaiting_approval`, docs/approval.md) instead of going out; false, the default, for none.",
});

const KeyName = t.String({ minLength: 1, maxLength: 100, description: "What the key is for, as the key list shows it." });

const Key = t.Object({
  key_id: t.Integer(),
  name: t.String(),
  workspace_id: t.Integer(),
  api_key: t.String({ description: "The key itself (`pk_…`), sent as `Authorization: Bearer`." }),
  status: t.String({ description: "active or disabled." }),
  scopes: t.Nullable(t.Array(t.String()), { description: "null: every scope." }),
  recipients: t.String({ description: "anyone, contacts, tag:<tag>, or the numbers with commas." }),
  daily_cap: t.Nullable(t.Integer()),
  expires_at: t.Nullable(t.String({ format: "date-time" })),
  needs_approval: t.Boolean({ description: "Its sends wait for a person's approval." }),
  created_at: t.String({ format: "date-time" }),
  last_used_at: t.Nullable(t.String({ format: "date-time" })),
});
const CreatedKey = t.Composite([
  Key,
  t.Object({ api_secret: t.String({ description: "The secret, sent as `X-API-SECRET`. Shown this once: only its hash is kept." }) }),
]);

const CreateBody = t.Object(
  {
    name: KeyName,
    scopes: t.Optional(Scopes),
    recipients: t.Optional(Recipients),
    daily_cap: t.Optional(DailyCap),
    expires: t.Optional(Expires),
    needs_approval: t.Optional(NeedsApproval),
  },
  {
    examples: [
      {
        name: "support agent",
        scopes: ["send", "threads:read"],
        recipients: "contacts",
        daily_cap: 50,
        expires: "30d",
        needs_approval: true,
      },
    ],
  },
);
const UpdateBody = t.Object(
  {
    key_id: t.Integer({ minimum: 1, description: "The key to change (one of this workspace's)." }),
    name: t.Optional(KeyName),
    scopes: t.Optional(Scopes),
    recipients: t.Optional(Recipients),
    daily_cap: t.Optional(DailyCap),
    expires: t.Optional(Expires),
    needs_approval: t.Optional(NeedsApproval),
  },
  { examples: [{ key_id: 2, daily_cap: 100 }] },
);

/** The limits a body gives; a field left out stays as it is. */
function optionsOf(
  body: {
    scopes?: string[] | null;
    recipients?: string | string[] | null;
    daily_cap?: number | null;
    expires?: string | null;
    needs_approval?: boolean;
  },
  now: number,
): KeyOptions {
  const options: KeyOptions = {};
  if (body.scopes !== undefined) options.scopes = body.scopes === null ? null : KEY_SCOPES.filter((s) => body.scopes?.includes(s));
  if (body.recipients !== undefined) options.recipients = parseRecipients(body.recipients ?? "anyone");
  if (body.daily_cap !== undefined) options.dailyCap = parseDailyCap(body.daily_cap);
  if (body.expires !== undefined) options.expiresAt = parseExpiry(body.expires ?? "never", now, "expires");
  if (body.needs_approval !== undefined) options.needsApproval = body.needs_approval;
  return options;
}

/** What these routes use of the services. */
export type KeyRoutesDeps = Pick<Services, "accounts" | "clock">;

export function keyRoutes(s: KeyRoutesDeps) {
  return new Elysia({ prefix: "/v1/api/key", tags: ["API keys"] })
    .use(declaredAuth())
    .use(models)
    .get("/list", async ({ auth }) => ok({ keys: (await s.accounts.listKeys(auth.workspaceId)).map(keyView) }, "API keys fetched"), {
      response: { 200: Envelope(t.Object({ keys: t.Array(Key) })), ...errorResponses() },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "listApiKeys",
        summary: "List API keys",
        description: "The workspace's keys with their limits, oldest first; never a secret. Needs the `admin` scope.",
      },
    })
    .post(
      "/create",
      async ({ auth, body }) => {
        const { name, ...limits } = body;
        const created = await s.accounts.createKey(name.trim(), auth.workspaceId, optionsOf(limits, s.clock.now()));
        return ok(created, "API key created");
      },
      {
        parse: "json",
        body: CreateBody,
        transform: refuseUnknownFields(CreateBody),
        response: { 200: Envelope(CreatedKey), ...errorResponses() },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "createApiKey",
          summary: "Create an API key",
          description:
            "A new key of this workspace, answered with its secret this once. Without limits it may do everything; give `scopes`, `recipients`, `daily_cap` and `expires` to narrow it, and `needs_approval` to hold its sends for a person. " +
            "Needs the `admin` scope, which is every power the API has: a key that may create keys may create one with any scope.",
        },
      },
    )
    .post(
      "/update",
      async ({ auth, body }) => {
        const { key_id, name, ...limits } = body;
        const options = { ...optionsOf(limits, s.clock.now()), ...(name === undefined ? {} : { name: name.trim() }) };
        return ok(keyView(await s.accounts.updateKey(String(key_id), options, auth.workspaceId)), "API key updated");
      },
      {
        parse: "json",
        body: UpdateBody,
        transform: refuseUnknownFields(UpdateBody),
        response: { 200: Envelope(Key), ...errorResponses(404) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "updateApiKey",
          summary: "Change an API key's name or limits",
          description:
            "A field left out stays as it is; null removes that limit. A key of another workspace: 404. Takes effect on the key's next request, on every server. Needs the `admin` scope.",
        },
      },
    );
}
