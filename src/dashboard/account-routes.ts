// The account in the dashboard: plan, limits and this month's SMS, workspaces and members for
// everyone signed in; adding a member for the account's owners only (a member's post is refused
// with 403). Members are made by the user service the CLI's `pigeon users create` uses.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { PASSWORD_MIN } from "../modules/users/service";
import type { Services } from "../services-type";
import { html } from "./html";
import type { Kit, Signed } from "./kit";
import { accountBody, type MemberErrors, type MemberForm } from "./pages/account";
import { formOf, HIDDEN, redirect } from "./web";

/** What these routes use of the services. */
export type DashboardAccountRoutesDeps = Pick<Services, "accounts" | "sending" | "users">;

export function dashboardAccountRoutes(s: DashboardAccountRoutesDeps, kit: Kit) {
  async function accountPage(who: Signed, status = 200, form?: MemberForm, errors?: MemberErrors) {
    const accountId = who.session.accountId;
    const account = await s.accounts.getAccount(accountId);
    const plan = (await s.accounts.listPlans()).find((p) => p.id === account.planId);
    if (!plan) throw new AppError("not_found", `plan ${account.planId} not found`);
    const body = accountBody({
      accountName: account.name,
      plan,
      smsUsed: await s.sending.smsUsedThisMonth(accountId),
      workspaces: await s.accounts.listWorkspaces(accountId),
      currentWorkspace: who.session.workspaceId,
      members: await s.users.listUsers(accountId),
      me: who.session.userId,
      owner: who.session.role === "owner",
      csrf: who.viewer.csrf,
      passwordMin: PASSWORD_MIN,
      twoFactor: { enabled: who.session.twoFactor, required: who.session.twoFactorRequired },
      form,
      errors,
    });
    return kit.shell(who, "Account", "/dashboard/account", body, status);
  }

  return new Elysia({ name: "pigeon-dashboard-account" })
    .use(declaredAuth())
    .get(
      "/dashboard/account",
      kit.withSession(async (_ctx, who) => accountPage(who)),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/account/members",
      kit.withSession(async ({ body }, who) => {
        if (who.session.role !== "owner") {
          return kit.shell(
            who,
            "Account",
            "/dashboard/account",
            html`<p class="error" role="alert">Only an owner of the account can add members.</p><p><a href="/dashboard/account">Back to the account</a></p>`,
            403,
          );
        }
        const f = formOf(body);
        const form: MemberForm = { email: (f.email ?? "").trim(), role: f.role === "owner" ? "owner" : "member" };
        if (f.role !== "owner" && f.role !== "member") return accountPage(who, 400, form, { role: "Choose member or owner." });
        try {
          const user = await s.users.createUser({
            email: form.email,
            password: f.password ?? "",
            accountId: who.session.accountId,
            role: form.role,
          });
          await kit.flash(who, {
            kind: "notice",
            text: `Added ${user.email} as ${user.role}. They sign in at /dashboard/sign-in with the password you chose.`,
          });
          return redirect("/dashboard/account");
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          const field = error.data.field;
          const key = field === "email" || field === "password" || field === "role" ? field : "other";
          return accountPage(who, error.status, form, { [key]: `${error.message}.`.replace(/\.\.$/, ".") });
        }
      }),
      { auth: "session", ...HIDDEN },
    );
}
