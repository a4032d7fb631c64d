// The approval API: what awaits approval, and approving or rejecting it. A key that itself needs
// approval may not decide (403 approver_needs_approval).
// Scope: these routes are for an approver. The keys work (issue 43's scoped keys) maps them to the
// `admin` scope when it lands; until then any key of the workspace that needs no approval may decide.
import { Elysia, t } from "elysia";
import type { KeyAuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok, Pagination } from "../../http/envelope";
import { fieldError, pageQuery } from "../../http/validation";
import type { Services } from "../../services-type";
import { MAX_DECISION_IDS } from "./approval";
import { Notification } from "./model";

/** What these routes use of the services. */
export type ApprovalRoutesDeps = Pick<Services, "approval">;

const Awaiting = t.Object({
  ...Notification.properties,
  key_name: t.Nullable(t.String({ description: "The name of the API key that sent it" })),
  expires_at: t.String({
    format: "date-time",
    description: "When it fails with `approval_expired` unless decided (its creation plus PIGEON_APPROVAL_TTL_SECONDS)",
  }),
});

const Ids = t.Array(t.Integer({ minimum: 1 }), {
  minItems: 1,
  maxItems: MAX_DECISION_IDS,
  description: `The notification ids to decide (1 to ${MAX_DECISION_IDS})`,
  ...fieldError("ids", `must be a list of 1 to ${MAX_DECISION_IDS} notification ids`),
});

const Decision = Envelope(
  t.Object({
    decided: t.Array(t.Integer(), { description: "The ids this request approved (or rejected)" }),
    skipped: t.Array(
      t.Object({
        notification_id: t.Integer(),
        status: t.Nullable(t.String({ description: "Its status now (null: no such notification in this workspace)" })),
      }),
      { description: "The ids left as they were: not awaiting approval (already decided, cancelled or expired) or not found" },
    ),
  }),
);

/** Refuses a caller that may not decide: a key whose own sends need approval. */
function approver(auth: KeyAuthContext): string {
  if (auth.needsApproval) {
    throw new AppError(
      "approver_needs_approval",
      `The API key ${auth.keyName} needs approval for its own sends, so it cannot approve or reject messages`,
      { key_name: auth.keyName },
    );
  }
  return `key ${auth.keyId} (${auth.keyName})`;
}

export function approvalRoutes(s: ApprovalRoutesDeps) {
  const { approval } = s;
  return new Elysia({ tags: ["Approval"] })
    .use(declaredAuth())
    .use(models)
    .get(
      "/v1/api/approval/list",
      async ({ auth, query }) => {
        approver(auth);
        return ok(await approval.list(auth.workspaceId, query.page, query.limit), "Messages awaiting approval");
      },
      {
        query: t.Object(pageQuery(50, 200)),
        response: { 200: Envelope(t.Object({ notifications: t.Array(Awaiting), pagination: Pagination })), ...errorResponses(403) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "listAwaitingApproval",
          summary: "List messages awaiting approval",
          description:
            "The workspace's sends by keys that need approval, newest first: text, recipient, the key, the sender's `approval_reason`, " +
            "the agent session, and `expires_at`. A key that itself needs approval is refused (403 `approver_needs_approval`).",
        },
      },
    )
    .post(
      "/v1/api/approval/approve",
      async ({ auth, body }) => ok(await approval.approve(auth.workspaceId, body.ids, approver(auth)), "Approval recorded"),
      {
        parse: "json",
        body: t.Object({ ids: Ids }),
        response: { 200: Decision, ...errorResponses(403) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "approveMessages",
          summary: "Approve messages",
          description:
            "Each id still `awaiting_approval` becomes `pending` and takes the normal path (at its `schedule_time` if that is still ahead, " +
            "else at once); the others are listed in `skipped` with their status. Of two decisions on one message made at once, only one counts.",
        },
      },
    )
    .post(
      "/v1/api/approval/reject",
      async ({ auth, body }) => ok(await approval.reject(auth.workspaceId, body.ids, approver(auth), body.reason), "Rejection recorded"),
      {
        parse: "json",
        body: t.Object({
          ids: Ids,
          reason: t.Optional(
            t.String({
              maxLength: 500,
              description: "Why (at most 500 characters): kept as the message's error_reason",
              ...fieldError("reason", "must be text of at most 500 characters"),
            }),
          ),
        }),
        response: { 200: Decision, ...errorResponses(403) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "rejectMessages",
          summary: "Reject messages",
          description:
            "Each id still `awaiting_approval` fails with `approval_rejected` (its credits refunded, `notification.failed` sent to webhooks); " +
            "the others are listed in `skipped`.",
        },
      },
    );
}
