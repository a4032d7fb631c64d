// Webhooks in the dashboard: list and subscribe (the secret shown on the next page only), one
// subscription with its delivery log, a test event, disable or re-enable, and delete. Everything
// goes through the webhook service the API uses, so the URL check (no private addresses unless the
// server allows them) and the event check answer with the same messages.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { EVENT_TYPES } from "../modules/events/service";
import type { Services } from "../services-type";
import { html } from "./html";
import type { Kit, Signed } from "./kit";
import { webhookBody, webhooksBody, type CreateForm } from "./pages/webhooks";
import { formOf, HIDDEN, redirect } from "./web";

const PAGE_SIZE = 20;

/** What these routes use of the services. */
export type DashboardWebhookRoutesDeps = Pick<Services, "webhooks">;

export function dashboardWebhookRoutes(s: DashboardWebhookRoutesDeps, kit: Kit) {
  async function listPage(who: Signed, status = 200, form?: CreateForm, errors?: { url?: string; events?: string; other?: string }) {
    const body = webhooksBody({
      webhooks: (await s.webhooks.list(who.session.workspaceId)).webhooks,
      eventTypes: EVENT_TYPES,
      csrf: who.viewer.csrf,
      form,
      errors,
    });
    return kit.shell(who, "Webhooks", "/dashboard/webhooks", body, status);
  }

  /** The subscription of this workspace with the id in the path; another workspace's is not found. */
  async function own(who: Signed, raw: string | undefined) {
    const id = Number(raw);
    if (!Number.isSafeInteger(id) || id < 1) throw new AppError("not_found", `webhook ${raw} not found`);
    return s.webhooks.get(who.session.workspaceId, id);
  }

  return new Elysia({ name: "pigeon-dashboard-webhooks" })
    .use(declaredAuth())
    .get(
      "/dashboard/webhooks",
      kit.withSession(async (_ctx, who) => listPage(who)),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/webhooks",
      kit.withSession(async ({ body }, who) => {
        const f = formOf(body);
        const form: CreateForm = {
          url: (f.url ?? "").trim(),
          description: (f.description ?? "").trim(),
          events: Object.keys(f)
            .filter((k) => k.startsWith("event:"))
            .map((k) => k.slice("event:".length)),
        };
        if (!form.url) return listPage(who, 400, form, { url: "Enter the URL that should receive the events." });
        if (form.events.length === 0) return listPage(who, 400, form, { events: "Choose at least one event." });
        try {
          const created = await s.webhooks.create(who.session.workspaceId, {
            url: form.url,
            events: form.events.includes("*") ? "*" : form.events,
            ...(form.description ? { description: form.description.slice(0, 500) } : {}),
          });
          await kit.flash(who, {
            kind: "notice",
            text: `Subscribed ${created.url}.`,
            ...("secret" in created
              ? {
                  secret: {
                    title: "Signing secret",
                    about: html`For <code>${created.url}</code>. Check each delivery's <code>X-Pigeon-Signature</code> with it.`,
                    secret: created.secret,
                  },
                }
              : {}),
          });
          return redirect("/dashboard/webhooks");
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          const field = error.data.field === "url" || error.data.field === "events" ? error.data.field : "other";
          return listPage(who, error.status, form, { [field]: error.message });
        }
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/webhooks/:id",
      kit.withSession(async ({ request, params }, who) => {
        const w = await own(who, params?.id);
        const asked = Number(new URL(request.url).searchParams.get("page") ?? "1");
        const first = await s.webhooks.deliveries(who.session.workspaceId, w.webhook_id, 1, PAGE_SIZE);
        const pages = Math.max(1, Math.ceil(first.pagination.total / PAGE_SIZE));
        const page = Number.isInteger(asked) ? Math.min(Math.max(asked, 1), pages) : 1;
        const list = page === 1 ? first : await s.webhooks.deliveries(who.session.workspaceId, w.webhook_id, page, PAGE_SIZE);
        return kit.shell(
          who,
          "Webhook",
          "/dashboard/webhooks",
          webhookBody({ w, deliveries: list.deliveries, page, pages, csrf: who.viewer.csrf }),
        );
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/webhooks/:id/test",
      kit.withSession(async ({ params }, who) => {
        const w = await own(who, params?.id);
        const r = await s.webhooks.test(who.session.workspaceId, w.webhook_id);
        const answer = r.status_code === null ? "no answer" : `HTTP ${r.status_code}`;
        await kit.flash(
          who,
          r.delivered
            ? { kind: "notice", text: `Test event delivered: the receiver answered ${answer} in ${r.latency_ms} ms.` }
            : { kind: "error", text: `Test event not delivered: ${r.error ?? answer}. It will be retried like any delivery.` },
        );
        return redirect(`/dashboard/webhooks/${w.webhook_id}`);
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/webhooks/:id/status",
      kit.withSession(async ({ params, body }, who) => {
        const w = await own(who, params?.id);
        const status = formOf(body).status === "active" ? "active" : "disabled";
        await s.webhooks.update(who.session.workspaceId, { webhook_id: w.webhook_id, status });
        await kit.flash(who, {
          kind: "notice",
          text: status === "active" ? "Re-enabled: events that waited are delivered now." : "Disabled: events wait until you re-enable it.",
        });
        return redirect(`/dashboard/webhooks/${w.webhook_id}`);
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/webhooks/:id/delete",
      kit.withSession(async ({ params }, who) => {
        const w = await own(who, params?.id);
        await s.webhooks.remove(who.session.workspaceId, w.webhook_id);
        await kit.flash(who, { kind: "notice", text: `Deleted the webhook to ${w.url}; deliveries not yet made are dropped.` });
        return redirect("/dashboard/webhooks");
      }),
      { auth: "session", ...HIDDEN },
    );
}
