// The safe-sending API: the opt-out audit and list, adding and removing a number by hand, and the
// workspace settings (quiet hours, keywords and their replies, the default failover order).
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok, Pagination } from "../../http/envelope";
import { fieldError, pageQuery, refuseUnknownFields } from "../../http/validation";
import type { Services } from "../../services-type";
import { Phone } from "../contacts/model";
import { requirePhone } from "../contacts/service";
import { ROUTE_NAMES_DOC, Settings, SettingsBody } from "./settings";

const Entry = t.Object({
  id: t.Nullable(t.Integer({ description: "The audit entry" })),
  phone: t.String(),
  action: t.Union([t.Literal("opted_out"), t.Literal("opted_in")]),
  source: t.Union([t.Literal("keyword"), t.Literal("api"), t.Literal("dashboard"), t.Literal("import")]),
  reason: t.Nullable(t.String()),
  message_id: t.Nullable(t.Integer({ description: "The inbound thread message that carried the keyword (source keyword)" })),
  channel: t.Nullable(t.String({ description: "The channel the keyword came on: sms or chatapp" })),
  device_id: t.Nullable(t.Integer()),
  contact_id: t.Nullable(t.Integer({ description: "The workspace's contact with this phone, if any" })),
  at: t.String({ format: "date-time" }),
});

const ChangeBody = t.Object(
  { phone: Phone, reason: t.Optional(t.Nullable(t.String({ maxLength: 500 }))) },
  { additionalProperties: false, examples: [{ phone: "+14155552671", reason: "asked at the counter" }] },
);

const Status = t.Object({
  phone: t.String(),
  opted_out: t.Boolean(),
  opted_out_at: t.Nullable(t.String({ format: "date-time" })),
  source: t.Nullable(t.String()),
  reason: t.Nullable(t.String()),
  changed: t.Boolean({ description: "false when the number already was in (add) or out of (remove) the list: nothing was written" }),
});

/** The hooks of adding and removing a number by hand, which differ only in their texts. */
const changeHooks = (operationId: string, summary: string, description: string) => ({
  parse: "json" as const,
  body: ChangeBody,
  transform: refuseUnknownFields(ChangeBody),
  response: { 200: Envelope(Status), ...errorResponses() },
  auth: "apiKey" as const,
  scope: "admin" as const,
  detail: { operationId, summary, description },
});

/** What these routes use of the services. */
export type SafetyRoutesDeps = Pick<Services, "safety">;

export function safetyRoutes(s: SafetyRoutesDeps) {
  const { safety } = s;
  /** Opts the body's number out or back in (audit source `api`); the reply says whether anything changed. */
  const change =
    (action: "optOut" | "optIn", changedMessage: string, unchangedMessage: string) =>
    async ({ auth, body }: { auth: { workspaceId: number }; body: typeof ChangeBody.static }) => {
      const phone = requirePhone(body.phone);
      const changed = await safety[action](auth.workspaceId, phone, { source: "api", reason: body.reason?.trim() || null });
      return ok({ ...(await safety.status(auth.workspaceId, phone)), changed }, changed ? changedMessage : unchangedMessage);
    };
  return new Elysia({ tags: ["Safe sending"] })
    .use(declaredAuth())
    .use(models)
    .get(
      "/v1/api/optout/list",
      async ({ auth, query }) =>
        ok(
          await safety.list(auth.workspaceId, {
            phone: query.phone === undefined ? null : requirePhone(query.phone),
            active: query.active === true,
            page: query.page ?? 1,
            limit: query.limit ?? 20,
          }),
          "Opt-outs fetched",
        ),
      {
        query: t.Object({
          ...pageQuery(20, 100),
          phone: t.Optional(Phone),
          active: t.Optional(t.Boolean({ ...fieldError("active", "must be true or false") })),
        }),
        response: { 200: Envelope(t.Object({ entries: t.Array(Entry), pagination: Pagination })), ...errorResponses() },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "listOptOuts",
          summary: "Opt-out audit",
          description:
            "Every opt-out and opt-in of the workspace, newest first, each with its `source` (keyword: the number texted a keyword; api; dashboard; import), " +
            "the reason, the time and, for a keyword, the inbound message (`message_id`) that carried it. `phone` narrows it to one number. " +
            "`active=true` lists instead the numbers suppressed now (one entry each: the opt-out in force). Sends to a suppressed number are refused with 403 `recipient_opted_out`.",
        },
      },
    )
    .post(
      "/v1/api/optout/add",
      change("optOut", "Number opted out", "Number was already opted out"),
      changeHooks(
        "addOptOut",
        "Opt a number out",
        "Adds the number to the workspace's suppression list (audit source `api`) and emits `contact.opted_out`. From then on sends to it are refused " +
          "(403 `recipient_opted_out`), and its pending messages that no channel holds yet fail with `recipient_opted_out` (refunded). Already opted out: 200 with `changed: false`.",
      ),
    )
    .post(
      "/v1/api/optout/remove",
      change("optIn", "Number opted in", "Number was not opted out"),
      changeHooks(
        "removeOptOut",
        "Opt a number back in",
        "Takes the number off the suppression list (audit source `api`, event `contact.opted_in`). Only do this when the person asked for it. Not opted out: 200 with `changed: false`.",
      ),
    )
    .get("/v1/api/workspace/settings", async ({ auth }) => ok(await safety.presentSettings(auth.workspaceId), "Settings fetched"), {
      response: { 200: Envelope(Settings), ...errorResponses() },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "getWorkspaceSettings",
        summary: "Safe-sending settings",
        description:
          "The workspace's quiet hours, opt-out, opt-in and help keywords with their replies, default failover routes, time zone and whether encrypted sends are allowed, defaults filled in.",
      },
    })
    .post(
      "/v1/api/workspace/settings",
      async ({ auth, body }) => ok(await safety.updateSettings(auth.workspaceId, body), "Settings saved"),
      {
        parse: "json",
        body: SettingsBody,
        transform: refuseUnknownFields(SettingsBody),
        response: { 200: Envelope(Settings), ...errorResponses() },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "updateWorkspaceSettings",
          summary: "Change safe-sending settings",
          description:
            "Changes the fields given; the others stay. `quiet_hours` `{start, end}` (HH:MM, 24-hour) in the recipient's local time: the contact's `timezone`, else the most populous zone " +
            "of the number's country. A send due inside them is held until they end (the reply's `scheduled_at`); `priority` ≥ 100 and `transactional: true` sends are not held. " +
            "`quiet_hours: null` turns them off. Keyword lists are whole-message words, matched case- and space-insensitively; an empty list turns that rule off, null restores the defaults " +
            "(opt-out STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT; opt-in START, UNSTOP, YES; help HELP, INFO). A word in two lists: 400 `keyword_conflict`. " +
            "Replies: an empty string sends none, null restores the default. `default_routes`: the failover order for sends that name neither `routes` nor `device_id` " +
            `(routes: ${ROUTE_NAMES_DOC}); it applies to the sends of the channels it names, null turns it off. ` +
            "`time_zone`: the workspace's own IANA zone, in which inbound rules read their business hours (UTC unless set; 400 `invalid_timezone`), " +
            "and the quiet hours of encrypted sends. `default_country`: the ISO 3166 country in which a number written without its country code is read " +
            "by sends (the API's, SMPP's, the email bridge's; 400 `invalid_country` otherwise); null: numbers need their code. `encrypted_sends`: allow end-to-end encrypted SMS (off by default: their recipients cannot be checked against opt-outs; " +
            "a send while off is 403 `encrypted_sends_disabled`).",
        },
      },
    );
}
