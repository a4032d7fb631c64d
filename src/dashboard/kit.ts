// What every dashboard route group shares: who is signed in, the page wrapper that sends strangers
// to sign-in, checks CSRF on posts and holds a user the account requires two-factor sign-in of
// at its enrolment page, the page shell, and one-time notices carried across a
// redirect (a created key's secret, "cancelled", an error).
import type { Services } from "../services-type";
import type { SessionWithUser } from "../modules/users/model";
import { Html, html } from "./html";
import { createScratch } from "./scratch";
import { createDashboardRepository } from "./repository";
import { layout, type Viewer } from "./layout";
import { cookieOf, csrfFor, csrfMatches, formOf, page, redirect, SESSION_COOKIE } from "./web";

export type Ctx = {
  request: Request;
  body?: unknown;
  params?: Record<string, string>;
  server?: { requestIP(request: Request): { address: string } | null } | null;
};

export interface Signed {
  session: SessionWithUser;
  viewer: Viewer;
  token: string;
}

export interface Flash {
  kind: "notice" | "error";
  text: string;
  /** A secret shown the one time it is known, with a line saying what it belongs to. */
  secret?: { title: string; about: Html; secret: string };
}

/** What these routes use of the services. */
export type KitDeps = Pick<Services, "accounts" | "storage" | "users" | "secrets" | "clock" | "cluster">;

/** Two-factor sign-in's page: where a user the account requires it of goes until enrolled. */
export const ENROLMENT_PATH = "/dashboard/account/2fa";

/** Whether a path stays open to a user who must still enrol: the enrolment itself and signing out. */
const openBeforeEnrolment = (path: string) =>
  path === ENROLMENT_PATH || path.startsWith(`${ENROLMENT_PATH}/`) || path === "/dashboard/sign-out";

/** How long a message waits for the next page. */
const FLASH_MS = 24 * 3_600_000;

/** A message as kept between requests: its Html as text (made here, so trusted when read back). */
type StoredFlash = Omit<Flash, "secret"> & { secret?: { title: string; about: string; secret: string } };

export function createKit(s: KitDeps) {
  const { users, accounts } = s;
  // The next page's message, where the next request may find it (another server, on PostgreSQL).
  const scratch = createScratch(s.storage, s.secrets, s.clock, s.cluster.shared);
  const flashId = (who: Signed) => `flash:${who.session.id}`;
  // The dashboard's own read queries, prepared once for every page group.
  const repo = createDashboardRepository(s.storage);

  async function signed(request: Request): Promise<Signed | null> {
    const token = cookieOf(request, SESSION_COOKIE);
    const session = token ? await users.session(token) : null;
    if (!token || !session) return null;
    const workspaces = (await accounts.listWorkspaces(session.accountId)).map((w) => ({
      id: w.id,
      name: w.name,
      current: w.id === session.workspaceId,
    }));
    const current = workspaces.find((w) => w.current)?.name ?? (await accounts.getWorkspace(session.workspaceId)).name;
    return {
      session,
      token,
      viewer: { email: session.email, role: session.role, workspaceName: current, workspaces, csrf: csrfFor(token) },
    };
  }

  return {
    repo,
    signed,

    /** A page that needs a session: GETs without one go to sign-in; posts must carry the CSRF token. */
    withSession(handler: (ctx: Ctx, who: Signed) => Response | Promise<Response>) {
      return async (ctx: Ctx) => {
        const who = await signed(ctx.request);
        if (!who) return redirect("/dashboard/sign-in");
        if (ctx.request.method !== "GET" && !csrfMatches(ctx.request, formOf(ctx.body), who.viewer.csrf)) {
          return page(html`<p>This form has expired; go back, reload the page and try again.</p>`, 403);
        }
        // The account requires a second factor this user has not set up: nothing else until it is.
        if (who.session.twoFactorRequired && !who.session.twoFactor && !openBeforeEnrolment(new URL(ctx.request.url).pathname)) {
          if (ctx.request.method === "GET") return redirect(ENROLMENT_PATH);
          return page(html`<p>This account requires two-factor sign-in: <a href="${ENROLMENT_PATH}">set it up</a> first.</p>`, 403);
        }
        return handler(ctx, who);
      };
    },

    scratch,

    async shell(who: Signed, title: string, current: string, body: Html, status = 200): Promise<Response> {
      const stored = await scratch.take<StoredFlash>(flashId(who), who.session.id);
      const flash: Flash | null = stored
        ? { ...stored, secret: stored.secret ? { ...stored.secret, about: new Html(stored.secret.about) } : undefined }
        : null;
      const top = flash
        ? html`<p class="${flash.kind}" role="${flash.kind === "error" ? "alert" : "status"}">${flash.text}</p>${flash.secret ? secretBox(flash.secret) : ""}`
        : "";
      return page(layout({ title, current, viewer: who.viewer, body: html`${top}${body}` }), status);
    },

    /** Shown on the next page this session opens. */
    async flash(who: Signed, flash: Flash): Promise<void> {
      const stored: StoredFlash = { ...flash, secret: flash.secret ? { ...flash.secret, about: flash.secret.about.value } : undefined };
      await scratch.put(flashId(who), who.session.id, stored, FLASH_MS);
    },
  };
}

function secretBox(secret: NonNullable<Flash["secret"]>): Html {
  return html`<section class="card" aria-labelledby="secret-title">
  <h2 id="secret-title">${secret.title}</h2>
  <p>${secret.about}</p>
  <p>Secret — store it now; it is shown only this once:</p>
  <code class="secret" id="new-secret">${secret.secret}</code>
  <p class="actions"><button type="button" data-copy="new-secret">Copy secret</button> <span id="new-secret-status" role="status"></span></p>
</section>`;
}

export type Kit = ReturnType<typeof createKit>;
