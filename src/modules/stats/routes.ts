import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { fieldError } from "../../http/validation";
import { DAY, iso } from "../../lib/time";
import type { Services } from "../../services-type";

const PERIODS = { day: DAY, week: 7 * DAY, month: 30 * DAY } as const;

/** What these routes use of the services. */
export type StatsRoutesDeps = Pick<Services, "clock" | "credits" | "notifications">;

export function statsRoutes(s: StatsRoutesDeps) {
  const STATUSES = ["sent", "delivered", "failed", "pending", "cancelled"] as const;
  return new Elysia({ prefix: "/v1/api/stats", tags: ["Stats"] })
    .use(declaredAuth())
    .use(models)
    .get(
      "/notifications",
      async ({ auth, query }) => {
        const period = query.period ?? "day";
        const to = s.clock.now();
        const from = to - PERIODS[period];
        const ws = auth.workspaceId;
        const counts: Record<string, number> = {};
        for (const st of STATUSES) counts[st] = await s.notifications.count(ws, { status: st, from, to, history: true });
        return ok(
          {
            period,
            from: iso(from),
            to: iso(to),
            sent: counts.sent ?? 0,
            delivered: counts.delivered ?? 0,
            failed: counts.failed ?? 0,
            pending: counts.pending ?? 0,
            cancelled: counts.cancelled ?? 0,
          },
          "Notification stats",
        );
      },
      {
        query: t.Object({
          period: t.Optional(
            t.Union([t.Literal("day"), t.Literal("week"), t.Literal("month")], {
              default: "day",
              ...fieldError("period", 'must be "day", "week" or "month"'),
            }),
          ),
        }),
        response: {
          200: Envelope(
            t.Object({
              period: t.String(),
              from: t.String({ format: "date-time" }),
              to: t.String({ format: "date-time" }),
              sent: t.Integer({ description: "Now in state sent (delivered ones are counted in delivered)" }),
              delivered: t.Integer(),
              failed: t.Integer(),
              pending: t.Integer(),
              cancelled: t.Integer(),
            }),
          ),
          ...errorResponses(),
        },
        auth: "apiKey",
        scope: "messages:read",
        detail: {
          operationId: "getNotificationStats",
          summary: "Notification stats",
          description:
            "Notifications of this workspace created in the last day, week (7 days) or month (30 days), by their current status.",
        },
      },
    )
    .get(
      "/credits",
      async ({ auth }) => {
        const ws = auth.workspaceId;
        return ok({ balance: await s.credits.balance(ws), used_this_month: await s.credits.usedThisMonth(ws) }, "Credit balance");
      },
      {
        response: {
          200: Envelope(
            t.Object({
              balance: t.Integer(),
              used_this_month: t.Integer({ description: "Credits spent this calendar month (UTC), net of refunds" }),
            }),
          ),
          ...errorResponses(),
        },
        auth: "apiKey",
        scope: "messages:read",
        detail: {
          operationId: "getCreditStats",
          summary: "Credit balance",
          description:
            "Only SMS through a cloud number costs credits: one per segment (160 GSM-7 characters, or 153 per part; 70 UCS-2, or 67 per part). Top up with `pigeon credits add`.",
        },
      },
    );
}
