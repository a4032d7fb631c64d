// The dashboard at /dashboard: server-rendered pages over the same services the API uses. Signed-out
// pages (sign-in, setup) and the assets are public; every other page needs a session cookie and
// sends a browser without one to the sign-in page. Every form carries a CSRF token.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../http/errors";
import { clientAddress } from "../http/rate-limit";
import { randomBase62 } from "../lib/tokens";
import type { SessionWithUser } from "../modules/users/repository";
import type { Services } from "../services";
import { assetResponse } from "./assets";
import { html, type Html } from "./html";
import { bare, layout, type Viewer } from "./layout";
import { setupInvalidPage, setupPage, signInPage } from "./pages/auth";
import { keysBody } from "./pages/keys";
import { overviewBody } from "./pages/overview";
import { createDashboardRepository } from "./repository";
import {
  clearCookie,
  cookieOf,
  createSignInThrottle,
  csrfFor,
  csrfMatches,
  formOf,
  isSecure,
  page,
  PRESESSION_COOKIE,
  redirect,
  SESSION_COOKIE,
  setCookie,
} from "./web";

const DAY_MS = 86_400_000;

type Ctx = { request: Request; body?: unknown; server?: { requestIP(request: Request): { address: string } | null } | null };

/** Errors on dashboard paths are shown as a page a person can read, with a way back. */
export function dashboardError(path: string, status: number, message: string): Response | null {
  if (path !== "/dashboard" && !path.startsWith("/dashboard/")) return null;
  return page(bare(status === 404 ? "Not found" : "Something went wrong", html`<div class="card"><p role="alert">${message}</p><p><a href="/dashboard">Back to the dashboard</a></p></div>`), status);
}

/** What a signed-in page handler gets. */
interface Signed {
  session: SessionWithUser;
  viewer: Viewer;
  token: string;
}

export function dashboardRoutes(s: Services) {
  const { users, accounts, clock } = s;
  const repo = createDashboardRepository(s.db.$client);
  const throttle = createSignInThrottle(() => clock.now());
  const tls = s.config.tls !== null && s.config.tls !== undefined;
  // A key's secret, shown once on the page the browser is sent to after creating or rotating it.
  const reveals = new Map<number, { title: string; key: string; secret: string; at: number }>();

  function signed(request: Request): Signed | null {
    const token = cookieOf(request, SESSION_COOKIE);
    const session = token ? users.session(token) : null;
    if (!token || !session) return null;
    const workspace = accounts.getWorkspace(session.workspace_id);
    return { session, token, viewer: { email: session.email, role: session.role, workspaceName: workspace.name, csrf: csrfFor(token) } };
  }

  /** A page that needs a session: GETs without one go to sign-in; posts must carry the CSRF token. */
  function withSession(handler: (ctx: Ctx, who: Signed) => Response | Promise<Response>) {
    return async (ctx: Ctx) => {
      const who = signed(ctx.request);
      if (!who) return redirect("/dashboard/sign-in");
      if (ctx.request.method !== "GET" && !csrfMatches(ctx.request, formOf(ctx.body), who.viewer.csrf)) {
        return page(html`<p>This form has expired; go back, reload the page and try again.</p>`, 403);
      }
      return handler(ctx, who);
    };
  }

  /** The pre-session token for the signed-out forms: the cookie's, or a new one set with the page. */
  function presession(request: Request): { value: string; header: Record<string, string> } {
    const existing = cookieOf(request, PRESESSION_COOKIE);
    if (existing && /^[A-Za-z0-9]{32}$/.test(existing)) return { value: existing, header: {} };
    const value = randomBase62(32);
    return { value, header: { "set-cookie": setCookie(PRESESSION_COOKIE, value, isSecure(request, tls)) } };
  }

  const shell = (who: Signed, title: string, current: string, body: Html, status = 200) => page(layout({ title, current, viewer: who.viewer, body }), status);

  const keyViews = (workspaceId: number) =>
    accounts.listKeys(workspaceId).map((k) => ({ id: k.id, name: k.name, key: k.key, status: k.status, secretHint: k.secretHint, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt }));

  /** A key of the session's workspace, or 404 (another workspace's key is not found, not forbidden). */
  function ownKey(who: Signed, raw: string) {
    const id = Number(raw);
    const key = Number.isSafeInteger(id) ? accounts.listKeys(who.session.workspace_id).find((k) => k.id === id) : undefined;
    if (!key) throw new AppError("not_found", `API key ${raw} not found`);
    return key;
  }

  const hidden = { detail: { hide: true } } as const;

  return new Elysia({ name: "pigeon-dashboard" })
    .use(declaredAuth())
    .get("/", () => redirect("/dashboard"), { auth: "public", ...hidden })
    .get("/dashboard/assets/:file", ({ request }) => assetResponse(new URL(request.url).pathname) ?? new Response("Not found", { status: 404 }), {
      auth: "public",
      ...hidden,
    })
    .get("/dashboard/sign-in", ({ request }) => {
      if (signed(request)) return redirect("/dashboard");
      const pre = presession(request);
      const done = new URL(request.url).searchParams.get("signed-out") !== null;
      return page(signInPage({ csrf: pre.value, notice: done ? "You are signed out." : null }), 200, pre.header);
    }, { auth: "public", ...hidden })
    .post("/dashboard/sign-in", async ({ request, body, server }) => {
      const form = formOf(body);
      const pre = presession(request);
      const email = (form.email ?? "").trim().toLowerCase();
      if (!csrfMatches(request, form, cookieOf(request, PRESESSION_COOKIE) ?? "\u0000")) {
        return page(signInPage({ csrf: pre.value, email, error: "This form has expired; please try again." }), 403, pre.header);
      }
      const wait = throttle.attempt([`ip:${clientAddress(request, server)}`, `email:${email}`]);
      if (wait > 0) {
        return page(signInPage({ csrf: pre.value, email, error: `Too many sign-in attempts. Wait ${wait} seconds, then try again.` }), 429, {
          ...pre.header,
          "retry-after": String(wait),
        });
      }
      const user = await users.verify(email, form.password ?? "");
      if (!user) return page(signInPage({ csrf: pre.value, email, error: "Wrong email or password." }), 401, pre.header);
      const token = users.startSession(user, request.headers.get("user-agent"));
      const secure = isSecure(request, tls);
      const response = redirect("/dashboard");
      response.headers.append("set-cookie", setCookie(SESSION_COOKIE, token, secure));
      response.headers.append("set-cookie", clearCookie(PRESESSION_COOKIE, secure));
      return response;
    }, { auth: "public", ...hidden })
    .get("/dashboard/setup", ({ request }) => {
      const token = new URL(request.url).searchParams.get("token") ?? "";
      if (!users.setupValid(token)) return page(setupInvalidPage(), 410);
      const pre = presession(request);
      return page(setupPage({ csrf: pre.value, token }), 200, pre.header);
    }, { auth: "public", ...hidden })
    .post("/dashboard/setup", async ({ request, body }) => {
      const form = formOf(body);
      const pre = presession(request);
      const token = form.token ?? "";
      if (!users.setupValid(token)) return page(setupInvalidPage(), 410);
      const again = (error: string, status = 400) => page(setupPage({ csrf: pre.value, token, email: form.email, error }), status, pre.header);
      if (!csrfMatches(request, form, cookieOf(request, PRESESSION_COOKIE) ?? "\u0000")) return again("This form has expired; please try again.", 403);
      if ((form.password ?? "") !== (form.confirm ?? "")) return again("The two passwords differ.");
      try {
        const user = await users.completeSetup(token, form.email ?? "", form.password ?? "");
        const session = users.startSession(user, request.headers.get("user-agent"));
        const secure = isSecure(request, tls);
        const response = redirect("/dashboard");
        response.headers.append("set-cookie", setCookie(SESSION_COOKIE, session, secure));
        response.headers.append("set-cookie", clearCookie(PRESESSION_COOKIE, secure));
        return response;
      } catch (error) {
        if (error instanceof AppError) return again(error.message, error.status);
        throw error;
      }
    }, { auth: "public", ...hidden })
    .post("/dashboard/sign-out", withSession(({ request }, who) => {
      users.endSession(who.token);
      return redirect("/dashboard/sign-in?signed-out", { "set-cookie": clearCookie(SESSION_COOKIE, isSecure(request, tls)) });
    }), { auth: "session", ...hidden })
    .get("/dashboard", withSession((_ctx, who) => {
      const ws = who.session.workspace_id;
      const since = Math.floor(clock.now() / DAY_MS) * DAY_MS - 29 * DAY_MS;
      const body = overviewBody({ days: repo.countsPerDay(ws, since, 30), balance: repo.balance(ws), devices: repo.devices(ws), failures: repo.recentFailures(ws) });
      return shell(who, "Overview", "/dashboard", body);
    }), { auth: "session", ...hidden })
    .get("/dashboard/keys", withSession((_ctx, who) => {
      const revealed = reveals.get(who.session.id) ?? null;
      reveals.delete(who.session.id);
      return shell(who, "API keys", "/dashboard/keys", keysBody({ keys: keyViews(who.session.workspace_id), csrf: who.viewer.csrf, revealed }));
    }), { auth: "session", ...hidden })
    .post("/dashboard/keys", withSession(({ body }, who) => {
      const name = (formOf(body).name ?? "").trim();
      if (!name || name.length > 100) {
        const error = "Give the key a name of 1 to 100 characters.";
        return shell(who, "API keys", "/dashboard/keys", keysBody({ keys: keyViews(who.session.workspace_id), csrf: who.viewer.csrf, error, name }), 400);
      }
      const created = accounts.createKey(name, who.session.workspace_id);
      reveals.set(who.session.id, { title: `Key "${name}" created`, key: created.api_key, secret: created.api_secret, at: clock.now() });
      return redirect("/dashboard/keys");
    }), { auth: "session", ...hidden })
    .post("/dashboard/keys/:id/:verb", withSession(({ request }, who) => {
      const [, , , id, verb] = new URL(request.url).pathname.split("/");
      const key = ownKey(who, id);
      if (verb === "rotate") {
        const rotated = accounts.rotateKey(String(key.id));
        reveals.set(who.session.id, { title: `Key "${key.name}" rotated: the old secret no longer works`, key: rotated.api_key, secret: rotated.api_secret, at: clock.now() });
      } else if (verb === "disable" || verb === "enable") {
        accounts.setKeyStatus(String(key.id), verb === "disable" ? "disabled" : "active");
      } else {
        throw new AppError("not_found", `No action ${verb}`);
      }
      return redirect("/dashboard/keys");
    }), { auth: "session", ...hidden });
}
