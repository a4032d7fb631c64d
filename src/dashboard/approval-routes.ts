// Approvals in the dashboard: what awaits approval, and the decisions, each one call of the
// approval service the API's /v1/api/approval routes use, recorded as made by the signed-in user.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import type { Services } from "../services-type";
import type { Kit } from "./kit";
import { approvalsBody, type AwaitingRow } from "./pages/approvals";
import { HIDDEN, redirect } from "./web";

const PAGE_SIZE = 100;

/** What these routes use of the services. */
export type DashboardApprovalRoutesDeps = Pick<Services, "approval">;

/** The ids of a form's checked rows (one value, or several of the same name). */
function idsOf(value: unknown): number[] {
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.map((v) => Number(v)).filter((n) => Number.isSafeInteger(n) && n > 0);
}

export function dashboardApprovalRoutes(s: DashboardApprovalRoutesDeps, kit: Kit) {
  return new Elysia({ name: "pigeon-dashboard-approvals" })
    .use(declaredAuth())
    .get(
      "/dashboard/approvals",
      kit.withSession(async (_ctx, who) => {
        const { notifications, pagination } = await s.approval.list(who.session.workspaceId, 1, PAGE_SIZE);
        const rows: AwaitingRow[] = notifications.map((n) => ({
          id: n.notification_id,
          recipient: n.recipient,
          recipientName: n.recipient_name,
          message: n.message,
          keyName: n.key_name,
          agentSession: n.agent_session,
          reason: n.approval_reason,
          createdAt: Date.parse(n.created_at),
          expiresAt: Date.parse(n.expires_at),
        }));
        return kit.shell(who, "Approvals", "/dashboard/approvals", approvalsBody({ rows, total: pagination.total, csrf: who.viewer.csrf }));
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/approvals",
      kit.withSession(async ({ body }, who) => {
        const form = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
        const one = typeof form.one === "string" ? /^(approve|reject):(\d+)$/.exec(form.one) : null;
        const verb = one ? one[1] : form.all === "approve" || form.all === "reject" ? form.all : null;
        const ids = one ? [Number(one[2])] : idsOf(form.ids);
        if (!verb || ids.length === 0) {
          await kit.flash(who, { kind: "error", text: "Select at least one message, then approve or reject." });
          return redirect("/dashboard/approvals");
        }
        const by = `user ${who.viewer.email}`;
        const ws = who.session.workspaceId;
        const reason = typeof form.reason === "string" ? form.reason.trim().slice(0, 500) : "";
        const result = verb === "approve" ? await s.approval.approve(ws, ids, by) : await s.approval.reject(ws, ids, by, reason || null);
        const done = result.decided.length;
        const left = result.skipped.length;
        await kit.flash(who, {
          kind: done > 0 ? "notice" : "error",
          text:
            `${done} message${done === 1 ? "" : "s"} ${verb === "approve" ? "approved" : "rejected"}.` +
            (left > 0
              ? ` ${left} no longer awaited approval and ${left === 1 ? "was" : "were"} left as ${left === 1 ? "it was" : "they were"}.`
              : ""),
        });
        return redirect("/dashboard/approvals");
      }),
      { auth: "session", ...HIDDEN },
    );
}
