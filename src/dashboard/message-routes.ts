// Messages in the dashboard: the list (filters in the query string, so a filtered view can be
// bookmarked), its CSV export, one message's detail, cancelling, and the live status stream.
import { Elysia } from "elysia";
import { DELIVERY_TYPES } from "../core/kinds";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { toE164 } from "../lib/phone";
import type { ListFilters } from "../modules/notifications/model";
import type { NotificationStatus } from "../modules/notifications/state";
import type { Services } from "../services-type";
import type { Kit } from "./kit";
import { messageDetail, messagesBody, STATUSES, type MessageFilters } from "./pages/messages";
import { csvDownload, HIDDEN, redirect } from "./web";

const PAGE_SIZE = 50;
const EXPORT_CHUNK = 1000;
const DAY_MS = 86_400_000;

const isoOrEmpty = (t: number | null) => (t ? new Date(t).toISOString() : "");

/** What these routes use of the services. */
export type DashboardMessageRoutesDeps = Pick<
  Services,
  "accounts" | "clock" | "devices" | "notifications" | "state" | "templates" | "dashboardLive"
>;

export function dashboardMessageRoutes(s: DashboardMessageRoutesDeps, kit: Kit) {
  const live = s.dashboardLive;

  /** The filters of a query string, checked; the repository's filters, or the reason they are wrong. */
  async function parseFilters(
    url: URL,
    workspaceId: number,
  ): Promise<{ shown: MessageFilters; filters: ListFilters; error: string | null }> {
    const q = url.searchParams;
    const shown: MessageFilters = {
      status: q.get("status") ?? "",
      channel: q.get("channel") ?? "",
      device: q.get("device") ?? "",
      from: q.get("from") ?? "",
      to: q.get("to") ?? "",
      recipient: q.get("recipient") ?? "",
      text: (q.get("text") ?? "").slice(0, 200),
    };
    const filters: ListFilters = {};
    const errors: string[] = [];
    if ((STATUSES as readonly string[]).includes(shown.status)) filters.status = shown.status as NotificationStatus;
    else if (shown.status) errors.push(`Unknown status "${shown.status}".`);
    if ((DELIVERY_TYPES as readonly string[]).includes(shown.channel)) filters.deliveryType = shown.channel as ListFilters["deliveryType"];
    else if (shown.channel) errors.push(`Unknown channel "${shown.channel}".`);
    if (shown.device) {
      const id = Number(shown.device);
      if (Number.isSafeInteger(id) && (await s.devices.find(workspaceId, id))) filters.deviceId = id;
      else errors.push("That device is not one of this workspace's.");
    }
    for (const key of ["from", "to"] as const) {
      if (!shown[key]) continue;
      const day = /^\d{4}-\d{2}-\d{2}$/.test(shown[key]) ? Date.parse(`${shown[key]}T00:00:00Z`) : Number.NaN;
      if (Number.isNaN(day)) errors.push(`"${shown[key]}" is not a date (YYYY-MM-DD).`);
      else if (key === "from") filters.from = day;
      else filters.to = day + DAY_MS - 1;
    }
    if (shown.recipient) {
      const phone = toE164(shown.recipient);
      if (phone) filters.recipient = phone;
      else errors.push(`"${shown.recipient}" is not a phone number in international form (e.g. +14155552671).`);
    }
    if (shown.text) filters.text = shown.text;
    return { shown, filters, error: errors.length ? errors.join(" ") : null };
  }

  /** The query string of the filters in use, for paging and export links. */
  const queryOf = (f: MessageFilters) => new URLSearchParams(Object.entries(f).filter(([, v]) => v !== "")).toString();

  return new Elysia({ name: "pigeon-dashboard-messages" })
    .use(declaredAuth())
    .get(
      "/dashboard/messages",
      kit.withSession(async ({ request }, who) => {
        const ws = who.session.workspaceId;
        const url = new URL(request.url);
        const { shown, filters, error } = await parseFilters(url, ws);
        const requested = Number(url.searchParams.get("page") ?? "1");
        let page = Number.isSafeInteger(requested) && requested >= 1 ? requested : 1;
        let { rows, total } = error
          ? { rows: [], total: 0 }
          : await s.notifications.records(ws, filters, (page - 1) * PAGE_SIZE, PAGE_SIZE);
        const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
        // A page past the end (the list shrank, or a hand-edited link) shows the last one.
        if (page > pages) {
          page = pages;
          rows = (await s.notifications.records(ws, filters, (page - 1) * PAGE_SIZE, PAGE_SIZE)).rows;
        }
        const body = messagesBody({
          filters: shown,
          channels: DELIVERY_TYPES,
          devices: await s.devices.records(ws, true),
          rows,
          total,
          page,
          pages,
          query: queryOf(shown),
          error,
        });
        return kit.shell(who, "Messages", "/dashboard/messages", body, error ? 400 : 200);
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/messages/export.csv",
      kit.withSession(async ({ request }, who) => {
        const ws = who.session.workspaceId;
        const { filters, error } = await parseFilters(new URL(request.url), ws);
        if (error) throw new AppError("validation_error", error);
        // Messages created during the export would shift the pages under it: it stops at its start.
        filters.to = Math.min(filters.to ?? Number.MAX_SAFE_INTEGER, s.clock.now());
        const columns = [
          "id",
          "created_at",
          "status",
          "channel",
          "route",
          "device_id",
          "recipient",
          "recipient_name",
          "message",
          "segments",
          "cost",
          "error_code",
          "error_reason",
          "sent_at",
          "delivered_at",
          "failed_at",
          "cancelled_at",
        ];
        let offset = 0;
        const day = new Date(s.clock.now()).toISOString().slice(0, 10);
        return csvDownload(`messages-${day}.csv`, columns, EXPORT_CHUNK, async () => {
          const { rows } = await s.notifications.records(ws, filters, offset, EXPORT_CHUNK);
          offset += rows.length;
          return rows.map((n) => [
            n.id,
            isoOrEmpty(n.createdAt),
            n.status,
            n.deliveryType,
            n.route,
            n.deviceId,
            n.recipient,
            n.recipientName,
            n.message,
            n.segments,
            n.cost,
            n.errorCode,
            n.errorReason,
            isoOrEmpty(n.sentAt),
            isoOrEmpty(n.deliveredAt),
            isoOrEmpty(n.failedAt),
            isoOrEmpty(n.cancelledAt),
          ]);
        });
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/live",
      kit.withSession(async (_ctx, who) => live.open(who.session.workspaceId)),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/messages/:id",
      kit.withSession(async ({ params }, who) => {
        const ws = who.session.workspaceId;
        const n = await s.notifications.find(ws, Number(params?.id));
        if (!n) throw new AppError("not_found", `Message ${params?.id} not found`);
        const device = n.deviceId === null ? null : ((await s.devices.find(ws, n.deviceId))?.name ?? `#${n.deviceId}`);
        const template = n.templateId === null ? null : ((await s.templates.findAny(n.templateId))?.name ?? `#${n.templateId}`);
        const body = messageDetail({
          n,
          device,
          template,
          keyName: n.apiKeyId === null ? null : ((await s.accounts.keyById(n.apiKeyId))?.name ?? null),
          logs: await s.notifications.logs(n),
          cancellable: (n.status === "pending" && n.stage === "queued" && !n.cancelPending) || n.status === "awaiting_approval",
          csrf: who.viewer.csrf,
        });
        return kit.shell(who, `Message #${n.id}`, "/dashboard/messages", body);
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/messages/:id/cancel",
      kit.withSession(async ({ params }, who) => {
        const id = Number(params?.id);
        try {
          const after = await s.notifications.cancel(who.session.workspaceId, id);
          await kit.flash(who, {
            kind: "notice",
            text: after.cancelling
              ? `Message #${id} is cancelling: the phone that downloaded it has been told to drop it, and its answer decides.`
              : `Message #${id} cancelled; its credits were refunded.`,
          });
        } catch (error) {
          if (!(error instanceof AppError) || error.status === 404) throw error;
          await kit.flash(who, { kind: "error", text: error.message });
        }
        return redirect(`/dashboard/messages/${id}`);
      }),
      { auth: "session", ...HIDDEN },
    );
}
