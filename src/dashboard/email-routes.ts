// The email bridge in the dashboard (/dashboard/email): its settings in one form, the secret
// address made, replaced (its token shown once) or removed, and the latest forwards. Each change
// is one call of the email module's settings service, the one /v1/api/email uses, so its checks
// and messages apply.
import { Elysia } from "elysia";
import { AppError } from "../core/errors";
import { declaredAuth } from "../http/declared-auth";
import type { Services } from "../services-type";
import { html } from "./html";
import type { Kit, Signed } from "./kit";
import { emailBody, type EmailErrors, type EmailForm } from "./pages/email";
import { formOf, HIDDEN, redirect } from "./web";

/** The service's field names and the form's. */
const FIELDS: Record<string, keyof EmailErrors> = {
  content: "content",
  default_country: "defaultCountry",
  senders: "senders",
  forward_to: "forwardTo",
  reply_domain: "replyDomain",
};

const lines = (text: string) =>
  text
    .split(/[\s,;]+/)
    .map((l) => l.trim())
    .filter(Boolean);

export type DashboardEmailRoutesDeps = Pick<Services, "email" | "emailForward" | "config">;

export function dashboardEmailRoutes(s: DashboardEmailRoutesDeps, kit: Kit) {
  async function saved(workspaceId: number): Promise<EmailForm> {
    const v = await s.email.get(workspaceId);
    return {
      content: v.content,
      defaultCountry: v.defaultCountry ?? "",
      senders: v.senders.join("\n"),
      forwardTo: v.forwardTo.join("\n"),
      replyDomain: v.replyDomain ?? "",
      dsn: v.dsn,
      forwardFailures: v.forwardFailures,
    };
  }

  async function page(who: Signed, form: EmailForm, status = 200, errors?: EmailErrors) {
    const workspaceId = who.session.workspaceId;
    const settings = await s.email.get(workspaceId);
    const forwards = (await s.emailForward.outbox(workspaceId, 20)).map((f) => ({
      id: f.id,
      to: (JSON.parse(f.recipients) as string[]).join(", "),
      subject: f.subject,
      status: f.status,
      attempts: f.attempts,
      lastError: f.lastError,
      at: new Date(f.createdAt).toISOString().replace("T", " ").slice(0, 16),
    }));
    return kit.shell(
      who,
      "Email",
      "/dashboard/email",
      emailBody({
        form,
        errors,
        secretHint: settings.secretAddress?.hint ?? null,
        listener: s.email.listening,
        relay: s.config.smtp.relay !== null,
        forwards,
        csrf: who.viewer.csrf,
      }),
      status,
    );
  }

  return new Elysia({ name: "pigeon-dashboard-email" })
    .use(declaredAuth())
    .get(
      "/dashboard/email",
      kit.withSession(async (_ctx, who) => page(who, await saved(who.session.workspaceId))),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/email",
      kit.withSession(async ({ body }, who) => {
        const f = formOf(body);
        const form: EmailForm = {
          content: f.content ?? "body",
          defaultCountry: (f.default_country ?? "").trim(),
          senders: f.senders ?? "",
          forwardTo: f.forward_to ?? "",
          replyDomain: (f.reply_domain ?? "").trim(),
          dsn: f.dsn === "yes",
          forwardFailures: f.forward_failures === "yes",
        };
        try {
          await s.email.update(who.session.workspaceId, {
            content: form.content,
            defaultCountry: form.defaultCountry || null,
            senders: lines(form.senders),
            forwardTo: lines(form.forwardTo),
            replyDomain: form.replyDomain || null,
            dsn: form.dsn,
            forwardFailures: form.forwardFailures,
          });
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          const field = FIELDS[String((error.data as { field?: string } | undefined)?.field ?? "")] ?? "other";
          return page(who, form, error.status, { [field]: error.message });
        }
        await kit.flash(who, { kind: "notice", text: "Email settings saved." });
        return redirect("/dashboard/email");
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/email/secret",
      kit.withSession(async (_ctx, who) => {
        const { token } = await s.email.issueSecretAddress(who.session.workspaceId);
        await kit.flash(who, {
          kind: "notice",
          text: "Secret address made; an older one no longer works.",
          secret: {
            title: "Your secret address",
            about: html`Write to <code>${token}+15551234567@your-domain</code> from an allowed sender. The token is shown only now:`,
            secret: token,
          },
        });
        return redirect("/dashboard/email");
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/email/secret/remove",
      kit.withSession(async (_ctx, who) => {
        await s.email.removeSecretAddress(who.session.workspaceId);
        await kit.flash(who, { kind: "notice", text: "Secret address removed: its token no longer works." });
        return redirect("/dashboard/email");
      }),
      { auth: "session", ...HIDDEN },
    );
}
