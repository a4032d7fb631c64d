// SMPP credentials through the API, in the workspace of the key (scope admin): GET
// /v1/api/smpp/credentials reads them (never the password), POST …/credentials/rotate issues them
// or a new password (shown only in that answer), PATCH /v1/api/smpp/settings turns the forwarding
// of received SMS to receiver binds on or off. docs/smpp.md describes them.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { refuseUnknownFields } from "../../http/validation";
import type { Services } from "../../services-type";
import type { SmppCredentials } from "./credentials";

const Credentials = t.Object({
  system_id: t.Nullable(t.String({ description: "What an ESME binds with; null until the credentials are issued" })),
  password: t.Nullable(t.String({ description: "Eight characters: only in the answer that issued it, null otherwise" })),
  incoming: t.Boolean({ description: "Whether SMS the workspace's phones receive go to its receiver binds as deliver_sm" }),
  issued_at: t.Nullable(t.String({ format: "date-time", description: "When the password in force was issued" })),
  listener: t.Object({
    port: t.Nullable(t.Integer({ description: "PIGEON_SMPP_PORT this server listens on, or null when off" })),
    tls_port: t.Nullable(t.Integer({ description: "PIGEON_SMPP_TLS_PORT, or null" })),
  }),
});

const Change = t.Object(
  { incoming: t.Optional(t.Boolean({ description: "Send received SMS to the receiver binds (default true)" })) },
  { additionalProperties: false, examples: [{ incoming: false }] },
);

export type SmppRoutesDeps = Pick<Services, "smpp">;

export function smppRoutes(s: SmppRoutesDeps) {
  const { smpp } = s;
  const view = (c: SmppCredentials | null) => ({
    system_id: c?.systemId ?? null,
    password: c?.password ?? null,
    incoming: c?.receivesIncoming ?? true,
    issued_at: c ? new Date(c.rotatedAt).toISOString() : null,
    listener: { port: smpp.listening.port, tls_port: smpp.listening.tlsPort },
  });
  return new Elysia({ tags: ["SMPP"] })
    .use(declaredAuth())
    .use(models)
    .get("/v1/api/smpp/credentials", async ({ auth }) => ok(view(await smpp.credentials.get(auth.workspaceId)), "SMPP credentials"), {
      response: { 200: Envelope(Credentials), ...errorResponses() },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "getSmppCredentials",
        summary: "Read the SMPP credentials",
        description:
          "The workspace's system_id (null until issued), whether received SMS go to receiver binds, and the listener's ports. The password is never shown again.",
      },
    })
    .post(
      "/v1/api/smpp/credentials/rotate",
      async ({ auth }) => {
        const issued = await smpp.credentials.issue(auth.workspaceId, { rotate: true });
        smpp.unbindAll(issued.systemId);
        return ok(view(issued), "SMPP credentials issued: store the password, it is shown only now");
      },
      {
        response: { 200: Envelope(Credentials), ...errorResponses() },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "rotateSmppCredentials",
          summary: "Issue the SMPP credentials, or a new password",
          description:
            "The first call issues a system_id (`pigeon<workspace id>`) and an eight-character password, and makes the API key submits go through " +
            '(scopes send and messages:read, named "SMPP": limit it on the keys page like any key). Each later call issues a new password: binds made with the old one are unbound.',
        },
      },
    )
    .patch(
      "/v1/api/smpp/settings",
      async ({ auth, body }) => {
        const current = await smpp.credentials.get(auth.workspaceId);
        const changed =
          body.incoming === undefined || !current ? current : await smpp.credentials.issue(auth.workspaceId, { incoming: body.incoming });
        return ok(view(changed), "SMPP settings changed");
      },
      {
        parse: "json",
        body: Change,
        transform: refuseUnknownFields(Change),
        response: { 200: Envelope(Credentials), ...errorResponses(404) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "updateSmppSettings",
          summary: "Change the SMPP settings",
          description:
            "`incoming`: whether received SMS go to the receiver binds. Before the credentials are issued nothing changes (issue them first).",
        },
      },
    );
}
