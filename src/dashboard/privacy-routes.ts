// One person's data from the dashboard: a contact's and a conversation's "Erase data" button lead
// to a confirmation page; only its form erases, through the service the API uses, audited under
// the signed-in user. The export downloads the same JSON as GET /v1/api/privacy/export.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import type { Services } from "../services-type";
import type { Kit } from "./kit";
import { eraseConfirmBody } from "./pages/privacy";
import { formOf, HIDDEN, redirect } from "./web";

/** What these routes use of the services. */
export type DashboardPrivacyRoutesDeps = Pick<Services, "privacy">;

/** Where to go back to: a dashboard page, never another site. */
function backTo(value: string | null | undefined): string {
  return value && /^\/dashboard(\/[\w/-]*)?$/.test(value) ? value : "/dashboard/contacts";
}

export function dashboardPrivacyRoutes(s: DashboardPrivacyRoutesDeps, kit: Kit) {
  return new Elysia({ name: "pigeon-dashboard-privacy" })
    .use(declaredAuth())
    .get(
      "/dashboard/privacy/erase",
      kit.withSession(async ({ request }, who) => {
        const q = new URL(request.url).searchParams;
        const { phone } = s.privacy.number(q.get("phone") ?? "");
        const body = eraseConfirmBody({ phone, back: backTo(q.get("back")), csrf: who.viewer.csrf });
        return kit.shell(who, "Erase a person's data", "/dashboard/contacts", body);
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/privacy/erase",
      kit.withSession(async ({ body }, who) => {
        const form = formOf(body);
        const result = await s.privacy.erase(who.session.workspaceId, form.phone ?? "", `user:${who.session.userId}`);
        const e = result.erased;
        const text =
          `All data about ${result.phone} erased: ${e.notifications} message(s), ${e.thread_messages} conversation message(s), ` +
          `${e.contacts} contact(s), ${e.events} webhook event(s).` +
          (result.in_flight > 0 ? ` ${result.in_flight} message(s) were being sent: erase again in a minute.` : "");
        await kit.flash(who, { kind: "notice", text });
        // The page the button was on may be the person's own (a conversation): it is gone.
        const back = backTo(form.back);
        return redirect(back.startsWith("/dashboard/inbox/") ? "/dashboard/inbox" : back);
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/privacy/export",
      kit.withSession(async ({ request }, who) => {
        const data = await s.privacy.export(who.session.workspaceId, new URL(request.url).searchParams.get("phone") ?? "");
        return new Response(JSON.stringify(data, null, 2), {
          headers: {
            "content-type": "application/json; charset=utf-8",
            "content-disposition": `attachment; filename="pigeon-data-${data.phone.slice(1)}.json"`,
            "cache-control": "no-store",
          },
        });
      }),
      { auth: "session", ...HIDDEN },
    );
}
