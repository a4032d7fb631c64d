// The signed-out side: sign-in (throttled per address and email), its second step for a user with
// two-factor sign-in (a short-lived pending token in its own cookie grants no page; the same
// throttle counts its attempts), the one-time setup link that makes the owner's user, and sign-out.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { clientAddress } from "../http/rate-limit";
import { randomBase62 } from "../lib/tokens";
import type { Services } from "../services-type";
import type { Kit } from "./kit";
import { setupInvalidPage, setupPage, signInPage } from "./pages/auth";
import { secondStepPage } from "./pages/two-factor";
import {
  clearCookie,
  cookieOf,
  csrfMatches,
  formOf,
  HIDDEN,
  isSecure,
  page,
  PRESESSION_COOKIE,
  redirect,
  SESSION_COOKIE,
  setCookie,
} from "./web";

/** Between the password and the second factor: a token naming the user, for a few minutes. */
export const PENDING_COOKIE = "pigeon_2fa";

/** What these routes use of the services. */
export type DashboardAuthRoutesDeps = Pick<Services, "config" | "users" | "signInThrottle">;

export function dashboardAuthRoutes(s: DashboardAuthRoutesDeps, kit: Kit) {
  const { users } = s;
  // Shared by every server on PostgreSQL; in memory on SQLite's one server.
  const throttle = s.signInThrottle;
  const tls = !!s.config.tls;

  /** The pre-session token for the signed-out forms: the cookie's, or a new one set with the page. */
  function presession(request: Request): { value: string; header: Record<string, string> } {
    const existing = cookieOf(request, PRESESSION_COOKIE);
    if (existing && /^[A-Za-z0-9]{32}$/.test(existing)) return { value: existing, header: {} };
    const value = randomBase62(32);
    return { value, header: { "set-cookie": setCookie(PRESESSION_COOKIE, value, isSecure(request, tls)) } };
  }
  const presessionMatches = (request: Request, form: Record<string, string>) =>
    csrfMatches(request, form, cookieOf(request, PRESESSION_COOKIE) ?? "\u0000");

  /** Signed in: the session cookie set, the pre-session one dropped, on to the overview. */
  function signedIn(request: Request, token: string): Response {
    const secure = isSecure(request, tls);
    const response = redirect("/dashboard");
    response.headers.append("set-cookie", setCookie(SESSION_COOKIE, token, secure));
    response.headers.append("set-cookie", clearCookie(PRESESSION_COOKIE, secure));
    response.headers.append("set-cookie", clearCookie(PENDING_COOKIE, secure));
    return response;
  }

  /** The user a pending cookie names, while it is valid. */
  const pendingUser = async (request: Request) => {
    const token = cookieOf(request, PENDING_COOKIE);
    return token ? users.twoFactor.pendingUser(token) : null;
  };

  return new Elysia({ name: "pigeon-dashboard-auth" })
    .use(declaredAuth())
    .get(
      "/dashboard/sign-in",
      async ({ request }) => {
        if (await kit.signed(request)) return redirect("/dashboard");
        const pre = presession(request);
        const done = new URL(request.url).searchParams.get("signed-out") !== null;
        return page(signInPage({ csrf: pre.value, notice: done ? "You are signed out." : null }), 200, pre.header);
      },
      { auth: "public", ...HIDDEN },
    )
    .post(
      "/dashboard/sign-in",
      async ({ request, body, server }) => {
        const form = formOf(body);
        const pre = presession(request);
        const email = (form.email ?? "").trim().toLowerCase();
        const again = (error: string, status: number, headers: Record<string, string> = {}) =>
          page(signInPage({ csrf: pre.value, email, error }), status, { ...pre.header, ...headers });
        if (!presessionMatches(request, form)) return again("This form has expired; please try again.", 403);
        const wait = await throttle.attempt([`ip:${clientAddress(request, server)}`, `email:${email}`]);
        if (wait > 0)
          return again(`Too many sign-in attempts. Wait ${wait} seconds, then try again.`, 429, { "retry-after": String(wait) });
        const user = await users.verify(email, form.password ?? "");
        if (!user) return again("Wrong email or password.", 401);
        if (user.totpEnabledAt !== null) {
          // The password was right; the session waits for the second factor.
          const token = await users.twoFactor.pendingToken(user);
          return redirect("/dashboard/sign-in/code", {
            "set-cookie": setCookie(PENDING_COOKIE, token, isSecure(request, tls), 300),
          });
        }
        return signedIn(request, await users.startSession(user, request.headers.get("user-agent")));
      },
      { auth: "public", ...HIDDEN },
    )
    .get(
      "/dashboard/sign-in/code",
      async ({ request }) => {
        if (!(await pendingUser(request))) return redirect("/dashboard/sign-in");
        const pre = presession(request);
        return page(secondStepPage({ csrf: pre.value }), 200, pre.header);
      },
      { auth: "public", ...HIDDEN },
    )
    .post(
      "/dashboard/sign-in/code",
      async ({ request, body, server }) => {
        const form = formOf(body);
        const pre = presession(request);
        const again = (error: string, status: number, headers: Record<string, string> = {}) =>
          page(secondStepPage({ csrf: pre.value, error }), status, { ...pre.header, ...headers });
        if (!presessionMatches(request, form)) return again("This form has expired; please try again.", 403);
        const user = await pendingUser(request);
        if (!user) return redirect("/dashboard/sign-in");
        // The password's attempts and these share one count per address and per email.
        const wait = await throttle.attempt([`ip:${clientAddress(request, server)}`, `email:${user.email}`]);
        if (wait > 0)
          return again(`Too many sign-in attempts. Wait ${wait} seconds, then try again.`, 429, { "retry-after": String(wait) });
        if (!(await users.twoFactor.check(user, form.code ?? ""))) return again("That code is not right, or was already used.", 401);
        return signedIn(request, await users.startSession(user, request.headers.get("user-agent")));
      },
      { auth: "public", ...HIDDEN },
    )
    .get(
      "/dashboard/setup",
      async ({ request }) => {
        const token = new URL(request.url).searchParams.get("token") ?? "";
        if (!(await users.setupValid(token))) return page(setupInvalidPage(), 410);
        const pre = presession(request);
        return page(setupPage({ csrf: pre.value, token }), 200, pre.header);
      },
      { auth: "public", ...HIDDEN },
    )
    .post(
      "/dashboard/setup",
      async ({ request, body }) => {
        const form = formOf(body);
        const pre = presession(request);
        const token = form.token ?? "";
        if (!(await users.setupValid(token))) return page(setupInvalidPage(), 410);
        const again = (error: string, status = 400) =>
          page(setupPage({ csrf: pre.value, token, email: form.email, error }), status, pre.header);
        if (!presessionMatches(request, form)) return again("This form has expired; please try again.", 403);
        if ((form.password ?? "") !== (form.confirm ?? "")) return again("The two passwords differ.");
        try {
          const user = await users.completeSetup(token, form.email ?? "", form.password ?? "");
          return signedIn(request, await users.startSession(user, request.headers.get("user-agent")));
        } catch (error) {
          if (error instanceof AppError) return again(error.message, error.status);
          throw error;
        }
      },
      { auth: "public", ...HIDDEN },
    )
    .post(
      "/dashboard/sign-out",
      kit.withSession(async ({ request }, who) => {
        await users.endSession(who.token);
        return redirect("/dashboard/sign-in?signed-out", { "set-cookie": clearCookie(SESSION_COOKIE, isSecure(request, tls)) });
      }),
      { auth: "session", ...HIDDEN },
    );
}
