// The dashboard at /dashboard: server-rendered pages over the same services the API uses. Signed-out
// pages (sign-in, setup) and the assets are public; every other page needs a session cookie and
// sends a browser without one to the sign-in page. Every form carries a CSRF token.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import type { Services } from "../services-type";
import { assetResponse } from "./assets";
import { dashboardApprovalRoutes, type DashboardApprovalRoutesDeps } from "./approval-routes";
import { dashboardAuthRoutes, type DashboardAuthRoutesDeps } from "./auth-routes";
import { html } from "./html";
import { createKit, type KitDeps, type Signed } from "./kit";
import { bare } from "./layout";
import { dashboardBulkRoutes, type DashboardBulkRoutesDeps } from "./bulk-routes";
import { dashboardContactRoutes, type DashboardContactRoutesDeps } from "./contact-routes";
import { dashboardDeviceRoutes, type DashboardDeviceRoutesDeps } from "./device-routes";
import { dashboardInboxRoutes, type DashboardInboxRoutesDeps } from "./inbox-routes";
import { dashboardPoolRoutes, type DashboardPoolRoutesDeps } from "./pool-routes";
import { dashboardPrivacyRoutes, type DashboardPrivacyRoutesDeps } from "./privacy-routes";
import { dashboardRuleRoutes, type DashboardRuleRoutesDeps } from "./rule-routes";
import { dashboardMessageRoutes, type DashboardMessageRoutesDeps } from "./message-routes";
import { dashboardSendRoutes, type DashboardSendRoutesDeps } from "./send-routes";
import { dashboardWebhookRoutes, type DashboardWebhookRoutesDeps } from "./webhook-routes";
import { dashboardCreditRoutes, type DashboardCreditRoutesDeps } from "./credit-routes";
import { dashboardAccountRoutes, type DashboardAccountRoutesDeps } from "./account-routes";
import { dashboardTemplateRoutes, type DashboardTemplateRoutesDeps } from "./template-routes";
import { dashboardOptOutRoutes, type DashboardOptOutRoutesDeps } from "./optout-routes";
import { dashboardSafetyRoutes, type DashboardSafetyRoutesDeps } from "./safety-routes";
import { dashboardEmailRoutes, type DashboardEmailRoutesDeps } from "./email-routes";
import { dashboardTwoFactorRoutes, type DashboardTwoFactorRoutesDeps } from "./two-factor-routes";
import {
  keyLimitsBody,
  keysBody,
  limitsFormOf,
  scopeField,
  type KeyView,
  type LimitsForm,
  type SmppView,
  type TwilioView,
} from "./pages/keys";
import { describeRecipients, KEY_SCOPES, parseDailyCap, parseExpiry, parseRecipients } from "../core/scopes";
import { limitsOf, type KeyOptions } from "../modules/accounts/service";
import { overviewBody } from "./pages/overview";
import { formOf, HIDDEN, page, redirect } from "./web";

const DAY_MS = 86_400_000;

/** The limits form as typed, to show it again with its error. */
function typedLimits(form: Record<string, string>): LimitsForm {
  const scopes = KEY_SCOPES.filter((scope) => form[scopeField(scope)] === "on");
  return {
    scopes: scopes.length === KEY_SCOPES.length ? null : scopes,
    recipients: form.recipients ?? "anyone",
    dailyCap: form.daily_cap ?? "",
    expires: form.expires ?? "never",
    needsApproval: form.needs_approval === "on",
  };
}

/**
 * A key's limits from the form (every scope ticked: every scope), or the reason they are refused.
 * A form without the limits fields (no `limits` marker: a script that posts a name alone) sets none.
 */
function limitsFromForm(form: Record<string, string>, now: number): KeyOptions | string {
  if (form.limits !== "on") return {};
  const typed = typedLimits(form);
  if (typed.scopes !== null && typed.scopes.length === 0) return "Tick at least one thing the key may do.";
  try {
    return {
      scopes: typed.scopes,
      recipients: parseRecipients(typed.recipients, "recipients"),
      dailyCap: parseDailyCap(typed.dailyCap, "daily send cap"),
      expiresAt: parseExpiry(typed.expires, now, "expiry"),
      needsApproval: typed.needsApproval,
    };
  } catch (error) {
    if (error instanceof AppError) return error.message;
    throw error;
  }
}

/** Errors on dashboard paths are shown as a page a person can read, with a way back. */
export function dashboardError(path: string, status: number, message: string): Response | null {
  if (path !== "/dashboard" && !path.startsWith("/dashboard/")) return null;
  return page(
    bare(
      status === 404 ? "Not found" : "Something went wrong",
      html`<div class="card"><p role="alert">${message}</p><p><a href="/dashboard">Back to the dashboard</a></p></div>`,
    ),
    status,
  );
}

/** What these routes use of the services. */
export type DashboardRoutesDeps = Pick<Services, "accounts" | "clock" | "smsgateWebhooks" | "users" | "twilio" | "smpp"> &
  DashboardAccountRoutesDeps &
  DashboardApprovalRoutesDeps &
  DashboardAuthRoutesDeps &
  DashboardBulkRoutesDeps &
  DashboardContactRoutesDeps &
  DashboardCreditRoutesDeps &
  DashboardDeviceRoutesDeps &
  DashboardInboxRoutesDeps &
  DashboardPoolRoutesDeps &
  DashboardPrivacyRoutesDeps &
  DashboardRuleRoutesDeps &
  KitDeps &
  DashboardMessageRoutesDeps &
  DashboardOptOutRoutesDeps &
  DashboardSafetyRoutesDeps &
  DashboardEmailRoutesDeps &
  DashboardSendRoutesDeps &
  DashboardTemplateRoutesDeps &
  DashboardTwoFactorRoutesDeps &
  DashboardWebhookRoutesDeps;

export function dashboardRoutes(s: DashboardRoutesDeps) {
  const { accounts, clock } = s;
  const kit = createKit(s);
  const repo = kit.repo;

  const keyViews = async (workspaceId: number): Promise<KeyView[]> =>
    (await accounts.listKeys(workspaceId)).map((k) => {
      const limits = limitsOf(k);
      return {
        id: k.id,
        name: k.name,
        key: k.key,
        status: k.status,
        secretHint: k.secretHint,
        createdAt: k.createdAt,
        lastUsedAt: k.lastUsedAt,
        needsApproval: k.needsApproval,
        scopes: limits.scopes,
        recipients: describeRecipients(limits.recipients),
        dailyCap: limits.dailyCap,
        expiresAt: limits.expiresAt,
        expired: limits.expiresAt !== null && limits.expiresAt <= clock.now(),
      };
    });

  /** A key of the signed-in workspace by the id in the path; another workspace's is not found. */
  const ownKey = async (who: Signed, id: unknown) => {
    const key = (await keyViews(who.session.workspaceId)).find((k) => k.id === Number(id));
    if (!key) throw new AppError("not_found", `API key ${String(id)} not found`);
    return key;
  };

  /** The limits page of a key, with what was typed and why it was refused. */
  const limitsPage = async (who: Signed, key: KeyView, form: LimitsForm, error: string | null, status = 200) =>
    kit.shell(who, "API key limits", "/dashboard/keys", keyLimitsBody(key, form, who.viewer.csrf, error), status);

  /** The Twilio-compatible account as the keys page shows it: to owners only. */
  const twilioView = async (who: Signed): Promise<TwilioView | null> => {
    if (who.viewer.role !== "owner") return null;
    const settings = await s.twilio.settings(who.session.workspaceId);
    return { accountSid: settings.account_sid, incomingUrl: settings.incoming_url };
  };
  /** The SMPP credentials as the keys page shows them: to owners only. */
  const smppView = async (who: Signed): Promise<SmppView | null> => {
    if (who.viewer.role !== "owner") return null;
    const c = await s.smpp.credentials.get(who.session.workspaceId);
    return { systemId: c?.systemId ?? null, port: s.smpp.listening.port, tlsPort: s.smpp.listening.tlsPort };
  };
  const ownersOnly = (who: Signed) =>
    kit.shell(
      who,
      "API keys",
      "/dashboard/keys",
      html`<p class="error" role="alert">Only an owner of the account can change the Twilio or SMPP credentials.</p><p><a href="/dashboard/keys">Back to the keys</a></p>`,
      403,
    );

  return (
    new Elysia({ name: "pigeon-dashboard" })
      .use(declaredAuth())
      .get("/", () => redirect("/dashboard"), { auth: "public", ...HIDDEN })
      .get(
        "/dashboard/assets/:file",
        ({ request }) => assetResponse(new URL(request.url).pathname) ?? new Response("Not found", { status: 404 }),
        {
          auth: "public",
          ...HIDDEN,
        },
      )
      .use(dashboardAuthRoutes(s, kit))
      .post(
        "/dashboard/workspace",
        kit.withSession(async ({ body }, who) => {
          const id = Number(formOf(body).workspace_id);
          // Only the account's own workspaces; anything else is not found.
          if (!(await accounts.listWorkspaces(who.session.accountId)).some((w) => w.id === id))
            throw new AppError("not_found", `Workspace ${id} not found`);
          await s.users.switchWorkspace(who.session.id, id);
          // Pages send no Referer (their policy is no-referrer), so the overview of the new workspace.
          return redirect("/dashboard");
        }),
        { auth: "session", ...HIDDEN },
      )
      .get(
        "/dashboard",
        kit.withSession(async (_ctx, who) => {
          const ws = who.session.workspaceId;
          const since = Math.floor(clock.now() / DAY_MS) * DAY_MS - 29 * DAY_MS;
          const body = overviewBody({
            days: await repo.countsPerDay(ws, since, 30),
            balance: await repo.balance(ws),
            devices: await repo.devices(ws),
            failures: await repo.recentFailures(ws),
          });
          return kit.shell(who, "Overview", "/dashboard", body);
        }),
        { auth: "session", ...HIDDEN },
      )
      .get(
        "/dashboard/keys",
        kit.withSession(async (_ctx, who) => {
          // The signing key is a secret of the workspace: its owner sees it, a member does not.
          const smsgateSigningKey = who.viewer.role === "owner" ? await s.smsgateWebhooks.signingKey(who.session.workspaceId) : null;
          return kit.shell(
            who,
            "API keys",
            "/dashboard/keys",
            keysBody({
              keys: await keyViews(who.session.workspaceId),
              csrf: who.viewer.csrf,
              smsgateSigningKey,
              twilio: await twilioView(who),
              smpp: await smppView(who),
            }),
          );
        }),
        { auth: "session", ...HIDDEN },
      )
      // The Twilio-compatible credentials: made, or the token rotated; the token shown this once.
      .post(
        "/dashboard/twilio/credentials",
        kit.withSession(async (_ctx, who) => {
          if (who.session.role !== "owner") return ownersOnly(who);
          const had = (await s.twilio.settings(who.session.workspaceId)).account_sid !== null;
          const made = await s.twilio.credentials(who.session.workspaceId, { rotate: had });
          await kit.flash(who, {
            kind: "notice",
            text: had ? "Auth token rotated: the old token no longer works." : "Twilio credentials created.",
            secret: { title: "The auth token", about: html`Account SID: <code>${made.account_sid}</code>`, secret: made.auth_token },
          });
          return redirect("/dashboard/keys");
        }),
        { auth: "session", ...HIDDEN },
      )
      // The SMPP credentials: issued, or a new password; the password shown this once.
      .post(
        "/dashboard/smpp/credentials",
        kit.withSession(async (_ctx, who) => {
          if (who.session.role !== "owner") return ownersOnly(who);
          const had = (await s.smpp.credentials.get(who.session.workspaceId)) !== null;
          const issued = await s.smpp.credentials.issue(who.session.workspaceId, { rotate: true });
          s.smpp.unbindAll(issued.systemId);
          await kit.flash(who, {
            kind: "notice",
            text: had ? "New SMPP password issued: binds made with the old one are closed." : "SMPP credentials created.",
            secret: { title: "The SMPP password", about: html`system_id: <code>${issued.systemId}</code>`, secret: issued.password ?? "" },
          });
          return redirect("/dashboard/keys");
        }),
        { auth: "session", ...HIDDEN },
      )
      .post(
        "/dashboard/twilio/incoming",
        kit.withSession(async ({ body }, who) => {
          if (who.session.role !== "owner") return ownersOnly(who);
          const typed = (formOf(body).url ?? "").trim();
          try {
            await s.twilio.setIncomingUrl(who.session.workspaceId, typed === "" ? null : typed.slice(0, 2000), null);
          } catch (error) {
            if (!(error instanceof AppError)) throw error;
            const twilio = { ...(await twilioView(who))!, error: error.message, typedUrl: typed };
            return kit.shell(
              who,
              "API keys",
              "/dashboard/keys",
              keysBody({ keys: await keyViews(who.session.workspaceId), csrf: who.viewer.csrf, twilio }),
              400,
            );
          }
          await kit.flash(who, { kind: "notice", text: typed === "" ? "Incoming-message URL cleared." : "Incoming-message URL saved." });
          return redirect("/dashboard/keys");
        }),
        { auth: "session", ...HIDDEN },
      )
      .post(
        "/dashboard/keys",
        kit.withSession(async ({ body }, who) => {
          const form = formOf(body);
          const name = (form.name ?? "").trim();
          const typed = typedLimits(form);
          const refuse = async (error: string) =>
            kit.shell(
              who,
              "API keys",
              "/dashboard/keys",
              keysBody({ keys: await keyViews(who.session.workspaceId), csrf: who.viewer.csrf, error, name, limits: typed }),
              400,
            );
          if (!name || name.length > 100) return refuse("Give the key a name of 1 to 100 characters.");
          const options = limitsFromForm(form, clock.now());
          if (typeof options === "string") return refuse(options);
          const created = await accounts.createKey(name, who.session.workspaceId, options);
          await kit.flash(who, {
            kind: "notice",
            text: `Key "${name}" created.`,
            secret: { title: "Your new key", about: html`Key: <code>${created.api_key}</code>`, secret: created.api_secret },
          });
          return redirect("/dashboard/keys");
        }),
        { auth: "session", ...HIDDEN },
      )
      .get(
        "/dashboard/keys/:id/limits",
        kit.withSession(async ({ params }, who) => {
          const key = await ownKey(who, params?.id);
          return limitsPage(who, key, limitsFormOf(key), null);
        }),
        { auth: "session", ...HIDDEN },
      )
      .post(
        "/dashboard/keys/:id/limits",
        kit.withSession(async ({ params, body }, who) => {
          const key = await ownKey(who, params?.id);
          const form = formOf(body);
          // An expiry left as shown is left as it is (an expired key's limits can still be changed).
          const unchanged = (form.expires ?? "").trim() === limitsFormOf(key).expires;
          const options = limitsFromForm(unchanged ? { ...form, expires: "" } : form, clock.now());
          if (typeof options === "string") return limitsPage(who, key, typedLimits(form), options, 400);
          if (unchanged) delete options.expiresAt;
          await accounts.updateKey(String(key.id), options, who.session.workspaceId);
          await kit.flash(who, { kind: "notice", text: `Limits of key "${key.name}" saved.` });
          return redirect("/dashboard/keys");
        }),
        { auth: "session", ...HIDDEN },
      )
      .post(
        "/dashboard/keys/:id/:verb",
        kit.withSession(async ({ params }, who) => {
          const id = Number(params?.id);
          const key = (await accounts.listKeys(who.session.workspaceId)).find((k) => k.id === id);
          // Another workspace's key is not found here, not forbidden.
          if (!key) throw new AppError("not_found", `API key ${params?.id} not found`);
          const verb = params?.verb;
          if (verb === "rotate") {
            const rotated = await accounts.rotateKey(String(key.id));
            await kit.flash(who, {
              kind: "notice",
              text: `Key "${key.name}" rotated: the old secret no longer works.`,
              secret: { title: "The new secret", about: html`Key: <code>${rotated.api_key}</code>`, secret: rotated.api_secret },
            });
          } else if (verb === "approval-on" || verb === "approval-off") {
            await accounts.setKeyApproval(String(key.id), verb === "approval-on");
            await kit.flash(who, {
              kind: "notice",
              text:
                verb === "approval-on"
                  ? `Sends by key "${key.name}" now wait for approval (Sending › Approvals).`
                  : `Sends by key "${key.name}" no longer wait for approval.`,
            });
          } else if (verb === "disable" || verb === "enable") {
            await accounts.setKeyStatus(String(key.id), verb === "disable" ? "disabled" : "active");
            await kit.flash(who, { kind: "notice", text: `Key "${key.name}" ${verb}d.` });
          } else {
            throw new AppError("not_found", `No action ${verb}`);
          }
          return redirect("/dashboard/keys");
        }),
        { auth: "session", ...HIDDEN },
      )
      .use(dashboardMessageRoutes(s, kit))
      .use(dashboardApprovalRoutes(s, kit))
      .use(dashboardSendRoutes(s, kit))
      .use(dashboardBulkRoutes(s, kit))
      .use(dashboardDeviceRoutes(s, kit))
      .use(dashboardPoolRoutes(s, kit))
      .use(dashboardInboxRoutes(s, kit))
      .use(dashboardWebhookRoutes(s, kit))
      .use(dashboardCreditRoutes(s, kit))
      .use(dashboardAccountRoutes(s, kit))
      .use(dashboardTwoFactorRoutes(s, kit))
      .use(dashboardTemplateRoutes(s, kit))
      .use(dashboardContactRoutes(s, kit))
      .use(dashboardOptOutRoutes(s, kit))
      .use(dashboardPrivacyRoutes(s, kit))
      .use(dashboardRuleRoutes(s, kit))
      .use(dashboardSafetyRoutes(s, kit))
      .use(dashboardEmailRoutes(s, kit))
  );
}
