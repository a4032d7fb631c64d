// The signed-in side of two-factor sign-in: /dashboard/account/2fa enrols (QR code, the secret as
// text, a confirming code, then the recovery codes shown once), turns it off with a current code,
// and lets an owner require it for every user of the account. The second step of signing in is in
// auth-routes.ts.
import { Elysia } from "elysia";
import QRCode from "qrcode";
import { declaredAuth } from "../http/declared-auth";
import type { Services } from "../services-type";
import { ENROLMENT_PATH, type Kit, type Signed } from "./kit";
import { recoveryCodesBody, twoFactorBody } from "./pages/two-factor";
import { formOf, HIDDEN, redirect } from "./web";

/** What these routes use of the services. */
export type DashboardTwoFactorRoutesDeps = Pick<Services, "users">;

export function dashboardTwoFactorRoutes(s: DashboardTwoFactorRoutesDeps, kit: Kit) {
  const { users } = s;
  const userOf = async (who: Signed) => (await users.userById(who.session.userId))!;

  async function twoFactorPage(who: Signed, status = 200, errors: { error?: string; ownerError?: string } = {}) {
    const user = await userOf(who);
    const state = await users.twoFactor.status(user);
    let enrolment: { secret: string; qrSvg: string } | undefined;
    if (!state.enabled) {
      const { secret, uri } = await users.twoFactor.enrolment(user);
      enrolment = { secret, qrSvg: await QRCode.toString(uri, { type: "svg", margin: 2 }) };
    }
    const body = twoFactorBody({
      csrf: who.viewer.csrf,
      email: user.email,
      owner: who.session.role === "owner",
      ...state,
      enrolment,
      ...errors,
    });
    return kit.shell(who, "Two-factor sign-in", "/dashboard/account", body, status);
  }

  return new Elysia({ name: "pigeon-dashboard-two-factor" })
    .use(declaredAuth())
    .get(
      ENROLMENT_PATH,
      kit.withSession(async (_ctx, who) => twoFactorPage(who)),
      { auth: "session", ...HIDDEN },
    )
    .post(
      `${ENROLMENT_PATH}/confirm`,
      kit.withSession(async ({ body }, who) => {
        const codes = await users.twoFactor.confirm(await userOf(who), formOf(body).code ?? "", who.session.id);
        if (!codes)
          return twoFactorPage(who, 400, { error: "That code does not match. Check the phone's time and enter the newest code." });
        // Shown in this answer only: nothing keeps them but their digests.
        return kit.shell(who, "Recovery codes", "/dashboard/account", recoveryCodesBody(codes));
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      `${ENROLMENT_PATH}/disable`,
      kit.withSession(async ({ body }, who) => {
        const user = await userOf(who);
        if (await users.twoFactor.required(user.accountId))
          return twoFactorPage(who, 403, { error: "This account requires two-factor sign-in; an owner can stop requiring it." });
        if (!(await users.twoFactor.disable(user, formOf(body).code ?? "")))
          return twoFactorPage(who, 400, { error: "That code does not match; enter the newest code from the app." });
        await kit.flash(who, { kind: "notice", text: "Two-factor sign-in is off; your recovery codes no longer work." });
        return redirect(ENROLMENT_PATH);
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      `${ENROLMENT_PATH}/require`,
      kit.withSession(async ({ body }, who) => {
        if (who.session.role !== "owner")
          return twoFactorPage(who, 403, { error: "Only an owner of the account can change what it requires." });
        const required = formOf(body).required === "yes";
        if (required && !who.session.twoFactor)
          return twoFactorPage(who, 400, { ownerError: "Turn on two-factor sign-in for yourself first." });
        await users.twoFactor.setRequired(who.session.accountId, required);
        await kit.flash(who, {
          kind: "notice",
          text: required ? "Every user of the account now needs two-factor sign-in." : "Two-factor sign-in is optional again.",
        });
        return redirect(ENROLMENT_PATH);
      }),
      { auth: "session", ...HIDDEN },
    );
}
