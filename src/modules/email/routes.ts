// The email bridge's settings through the API, in the workspace of the key (scope admin):
// GET and PATCH /v1/api/email/settings, and the secret address: POST …/secret-address/rotate
// issues or replaces it (the token is shown once), DELETE /v1/api/email/secret-address ends it. docs/email.md describes them.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { refuseUnknownFields } from "../../http/validation";
import type { Services } from "../../services-type";
import { EMAIL_CONTENTS } from "./content";
import { FORWARD_TO_MAX, SENDERS_MAX, type EmailSettings } from "./settings";

const Settings = t.Object({
  content: t.UnionEnum([...EMAIL_CONTENTS], {
    description: "Which part of a mail is the SMS: the body (the default), the subject, or both (subject, then body)",
  }),
  default_country: t.Nullable(
    t.String({
      description:
        "ISO 3166 code national numbers in addresses are read in (e.g. US); null: the workspace's default_country (/v1/api/workspace/settings)",
    }),
  ),
  senders: t.Array(t.String(), {
    description: "Who may write to the secret address without signing in: addresses, or @domain for a whole domain",
  }),
  secret_address: t.Nullable(
    t.Object({
      hint: t.String({ description: "The token's last four characters" }),
      key_id: t.Nullable(t.Integer({ description: 'The API key its sends are made with (named "Email bridge")' })),
    }),
  ),
  forward_to: t.Array(t.String(), { description: "Where every received message is forwarded by email (needs PIGEON_SMTP_RELAY_URL)" }),
  reply_domain: t.Nullable(
    t.String({
      description: "The domain of the forwards' Reply-To addresses, one that reaches this server's SMTP listener; null: no Reply-To",
    }),
  ),
  dsn: t.Boolean({ description: "Tell a mail's sender by email when a send it made fails later (needs the relay)" }),
  forward_failures: t.Boolean({ description: "Email forward_to when any message fails" }),
  relay: t.Boolean({ description: "Whether PIGEON_SMTP_RELAY_URL is set (forwards are queued only then)" }),
  listener: t.Object({
    smtp_port: t.Nullable(t.Integer({ description: "PIGEON_SMTP_PORT, or null when the listener is off" })),
    smtps_port: t.Nullable(t.Integer({ description: "PIGEON_SMTPS_PORT, or null" })),
  }),
});

const Change = t.Object(
  {
    content: t.Optional(t.UnionEnum([...EMAIL_CONTENTS])),
    default_country: t.Optional(t.Nullable(t.String({ maxLength: 2 }))),
    senders: t.Optional(t.Array(t.String({ maxLength: 254 }), { maxItems: SENDERS_MAX })),
    forward_to: t.Optional(t.Array(t.String({ maxLength: 254 }), { maxItems: FORWARD_TO_MAX })),
    reply_domain: t.Optional(t.Nullable(t.String({ maxLength: 200 }))),
    dsn: t.Optional(t.Boolean()),
    forward_failures: t.Optional(t.Boolean()),
  },
  {
    additionalProperties: false,
    examples: [{ content: "both", default_country: "US", senders: ["alarm@shop.example", "@monitoring.example"] }],
  },
);

export type EmailRoutesDeps = Pick<Services, "email" | "emailForward" | "config">;

export function emailRoutes(s: EmailRoutesDeps) {
  const { email, emailForward, config } = s;
  const view = (settings: EmailSettings) => ({
    content: settings.content,
    default_country: settings.defaultCountry,
    senders: settings.senders,
    secret_address: settings.secretAddress ? { hint: settings.secretAddress.hint, key_id: settings.secretAddress.keyId } : null,
    forward_to: settings.forwardTo,
    reply_domain: settings.replyDomain,
    dsn: settings.dsn,
    forward_failures: settings.forwardFailures,
    relay: config.smtp.relay !== null,
    listener: { smtp_port: email.listening.smtp, smtps_port: email.listening.smtps },
  });
  return new Elysia({ tags: ["Email"] })
    .use(declaredAuth())
    .use(models)
    .get("/v1/api/email/settings", async ({ auth }) => ok(view(await email.get(auth.workspaceId)), "Email settings"), {
      response: { 200: Envelope(Settings), ...errorResponses() },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "getEmailSettings",
        summary: "Read the email bridge's settings",
        description:
          "How mail sent to the SMTP listener becomes SMS in this workspace: the part of a mail sent, the default country, the secret address and its allowed senders.",
      },
    })
    .patch(
      "/v1/api/email/settings",
      async ({ auth, body }) =>
        ok(
          view(
            await email.update(auth.workspaceId, {
              content: body.content,
              defaultCountry: body.default_country,
              senders: body.senders,
              forwardTo: body.forward_to,
              replyDomain: body.reply_domain,
              dsn: body.dsn,
              forwardFailures: body.forward_failures,
            }),
          ),
          "Email settings changed",
        ),
      {
        parse: "json",
        body: Change,
        transform: refuseUnknownFields(Change),
        response: { 200: Envelope(Settings), ...errorResponses() },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "updateEmailSettings",
          summary: "Change the email bridge's settings",
          description:
            "Fields left out stay. `senders` replaces the whole list (at most 100): lower-cased, each an address or `@domain`; anything else is 400 `validation_error`. " +
            "`default_country` must be an ISO 3166 two-letter code, or null.",
        },
      },
    )
    .post(
      "/v1/api/email/secret-address/rotate",
      async ({ auth }) => {
        const { token, settings } = await email.issueSecretAddress(auth.workspaceId);
        return ok(
          { token, example: `${token}+15551234567@your-domain`, ...view(settings) },
          "Secret address issued: store the token, it is shown only now",
        );
      },
      {
        response: {
          200: Envelope(
            t.Composite([
              t.Object({
                token: t.String({ description: "The secret: shown only in this answer" }),
                example: t.String({ description: "An address that writes to +15551234567 through it" }),
              }),
              Settings,
            ]),
          ),
          ...errorResponses(),
        },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "issueEmailSecretAddress",
          summary: "Issue (or replace) the secret address",
          description:
            "For devices that cannot sign in to SMTP: mail to `<token>+NUMBER@…` from a sender on `senders` is sent without AUTH. A new token replaces the old one at once. " +
            'The first one also makes the API key its sends go through (scope send, named "Email bridge"): limit it on the keys page like any key; disabling it closes the address.',
        },
      },
    )
    .get(
      "/v1/api/email/outbox",
      async ({ auth }) =>
        ok(
          {
            forwards: (await emailForward.outbox(auth.workspaceId)).map((f) => ({
              forward_id: f.id,
              to: JSON.parse(f.recipients) as string[],
              subject: f.subject,
              status: f.status as "pending" | "sent" | "failed",
              attempts: f.attempts,
              last_error: f.lastError,
              created_at: new Date(f.createdAt).toISOString(),
              sent_at: f.sentAt === null ? null : new Date(f.sentAt).toISOString(),
            })),
          },
          "Email forwards",
        ),
      {
        response: {
          200: Envelope(
            t.Object({
              forwards: t.Array(
                t.Object({
                  forward_id: t.Integer(),
                  to: t.Array(t.String()),
                  subject: t.String(),
                  status: t.UnionEnum(["pending", "sent", "failed"]),
                  attempts: t.Integer(),
                  last_error: t.Nullable(t.String()),
                  created_at: t.String({ format: "date-time" }),
                  sent_at: t.Nullable(t.String({ format: "date-time" })),
                }),
              ),
            }),
          ),
          ...errorResponses(),
        },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "listEmailForwards",
          summary: "List the latest forwards by email",
          description:
            "The 50 newest forwards of received messages, newest first: pending (waiting for the relay, retried with backoff), sent, or failed with the relay's last answer. Kept 7 days.",
        },
      },
    )
    .delete(
      "/v1/api/email/secret-address",
      async ({ auth }) => ok(view(await email.removeSecretAddress(auth.workspaceId)), "Secret address removed"),
      {
        response: { 200: Envelope(Settings), ...errorResponses() },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "removeEmailSecretAddress",
          summary: "Remove the secret address",
          description: "Its token stops working and its key is disabled. Removing when there is none changes nothing.",
        },
      },
    );
}
