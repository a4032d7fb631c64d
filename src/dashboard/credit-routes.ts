// Credits in the dashboard: balance, this month's use and the ledger for everyone signed in; the
// top-up for the account's owners only (a member's post is refused with 403). The top-up is the
// credit service's, the one `pigeon credits add` uses.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import type { Services } from "../services-type";
import { html } from "./html";
import type { Kit, Signed } from "./kit";
import { creditsBody, type TopUpForm } from "./pages/credits";
import { formOf, HIDDEN, redirect } from "./web";

const PAGE_SIZE = 25;
const MAX_TOP_UP = 1_000_000_000;

/** The service's message as a sentence: capitalised, with a full stop. */
const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}${/[.!?]$/.test(text) ? "" : "."}`;

/** What these routes use of the services. */
export type DashboardCreditRoutesDeps = Pick<Services, "credits">;

export function dashboardCreditRoutes(s: DashboardCreditRoutesDeps, kit: Kit) {
  async function creditsPage(who: Signed, askedPage: number, status = 200, form?: TopUpForm, errors?: { amount?: string; note?: string }) {
    const ws = who.session.workspaceId;
    const total = (await s.credits.ledger(ws, 1, 1)).total;
    const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
    const page = Number.isInteger(askedPage) ? Math.min(Math.max(askedPage, 1), pages) : 1;
    const body = creditsBody({
      balance: await s.credits.balance(ws),
      usedThisMonth: await s.credits.usedThisMonth(ws),
      entries: (await s.credits.ledger(ws, page, PAGE_SIZE)).entries,
      page,
      pages,
      owner: who.session.role === "owner",
      csrf: who.viewer.csrf,
      form,
      errors,
    });
    return kit.shell(who, "Credits", "/dashboard/credits", body, status);
  }

  return new Elysia({ name: "pigeon-dashboard-credits" })
    .use(declaredAuth())
    .get(
      "/dashboard/credits",
      kit.withSession(async ({ request }, who) => creditsPage(who, Number(new URL(request.url).searchParams.get("page") ?? "1"))),
      {
        auth: "session",
        ...HIDDEN,
      },
    )
    .post(
      "/dashboard/credits",
      kit.withSession(async ({ body }, who) => {
        if (who.session.role !== "owner") {
          return kit.shell(
            who,
            "Credits",
            "/dashboard/credits",
            html`<p class="error" role="alert">Only an owner of the account can add credits.</p><p><a href="/dashboard/credits">Back to credits</a></p>`,
            403,
          );
        }
        const f = formOf(body);
        const form = { amount: (f.amount ?? "").trim(), note: (f.note ?? "").trim() };
        const amount = Number(form.amount);
        if (!/^-?\d+$/.test(form.amount) || amount === 0 || Math.abs(amount) > MAX_TOP_UP) {
          return creditsPage(who, 1, 400, form, {
            amount: `Enter a whole number of credits other than 0, at most ${MAX_TOP_UP.toLocaleString("en")}.`,
          });
        }
        if (form.note.length > 200) return creditsPage(who, 1, 400, form, { note: "Keep the note under 200 characters." });
        try {
          const balance = await s.credits.topUp(who.session.workspaceId, amount, form.note || null);
          const moved = Math.abs(amount);
          await kit.flash(who, {
            kind: "notice",
            text: `${amount > 0 ? "Added" : "Took off"} ${moved} credit${moved === 1 ? "" : "s"}; the balance is ${balance}.`,
          });
          return redirect("/dashboard/credits");
        } catch (error) {
          if (error instanceof AppError && error.status === 400) return creditsPage(who, 1, 400, form, { amount: sentence(error.message) });
          throw error;
        }
      }),
      { auth: "session", ...HIDDEN },
    );
}
