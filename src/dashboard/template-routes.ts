// Templates in the dashboard: the list, creating and editing SMS templates, and deleting one after a
// confirmation page. Writes go through the templates service the API uses; system and chat-app
// templates are refused here even when a form for them is posted by hand.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import type { TemplateRow } from "../modules/templates/model";
import type { Services } from "../services-type";
import type { Kit, Signed } from "./kit";
import {
  emptyTemplateForm,
  templateDeleteBody,
  templateEditable,
  templateFormBody,
  templatesBody,
  type TemplateForm,
} from "./pages/templates";
import { formOf, HIDDEN, redirect } from "./web";

const PAGE_SIZE = 50;
const CODE = /^[A-Z][A-Z0-9_]{0,31}$/;

/** Which form field an error of the templates service belongs next to. */
const FIELD_OF: Record<string, keyof TemplateForm> = {
  duplicate_template_code: "code",
  invalid_template_body: "body",
  message_too_long: "body",
};

/** The posted form, trimmed where spaces mean nothing (a body keeps its own). */
function templateFormOf(body: unknown): TemplateForm {
  const f = formOf(body);
  return {
    name: (f.name ?? "").trim(),
    code: (f.code ?? "").trim(),
    description: (f.description ?? "").trim(),
    body: f.body ?? "",
    status: f.status === "disabled" ? "disabled" : "active",
  };
}

/** The checks the API's request schema makes before its service runs, as messages per field. */
function schemaErrors(form: TemplateForm): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!form.name || form.name.length > 200) errors.name = "Give the template a name of 1 to 200 characters.";
  if (form.code && !CODE.test(form.code))
    errors.code = "A code is 1 to 32 upper-case letters, digits or underscores and starts with a letter.";
  if (!form.body.trim()) errors.body = "Write the text of the template.";
  else if (form.body.length > 4096) errors.body = `The body is ${form.body.length} characters; at most 4096.`;
  if (form.description.length > 1000) errors.description = "The description can be at most 1000 characters.";
  return errors;
}

/** What these routes use of the services. */
export type DashboardTemplateRoutesDeps = Pick<Services, "accounts" | "templates">;

export function dashboardTemplateRoutes(s: DashboardTemplateRoutesDeps, kit: Kit) {
  /** A template of the workspace that the dashboard may change; read-only ones are refused with the API's error. */
  async function editable(who: Signed, raw: string | undefined): Promise<TemplateRow> {
    const t = await s.templates.require(who.session.workspaceId, Number(raw));
    if (!templateEditable(t)) {
      const whose = t.isSystem ? "a system template" : "managed on the chat-app platform";
      throw new AppError("template_read_only", `Template "${t.name}" is ${whose} and cannot be changed here.`);
    }
    return t;
  }

  function formPage(
    who: Signed,
    id: number | undefined,
    form: TemplateForm,
    status = 200,
    errors: Record<string, string> = {},
    error: string | null = null,
  ) {
    const title = id === undefined ? "New template" : `Edit template "${form.name || "(no name)"}"`;
    return kit.shell(who, title, "/dashboard/templates", templateFormBody({ id, form, csrf: who.viewer.csrf, errors, error }), status);
  }

  /** Runs a service write; an error it raises comes back as the form with the message beside its field. */
  async function attempt(who: Signed, id: number | undefined, form: TemplateForm, write: () => Promise<void>): Promise<Response | null> {
    const errors = schemaErrors(form);
    if (Object.keys(errors).length) return formPage(who, id, form, 400, errors);
    try {
      await write();
      return null;
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500 || error.status === 404 || error.status === 403) throw error;
      const field = FIELD_OF[error.code];
      return formPage(who, id, form, error.status, field ? { [field]: error.message } : {}, field ? null : error.message);
    }
  }

  return new Elysia({ name: "pigeon-dashboard-templates" })
    .use(declaredAuth())
    .get(
      "/dashboard/templates",
      kit.withSession(async ({ request }, who) => {
        const ws = who.session.workspaceId;
        const requested = Number(new URL(request.url).searchParams.get("page") ?? "1");
        const total = (await s.templates.records(ws, { offset: 0, limit: 1 })).total;
        const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
        const page = Number.isSafeInteger(requested) && requested >= 1 ? Math.min(requested, pages) : 1;
        const { rows } = await s.templates.records(ws, { offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE });
        return kit.shell(who, "Templates", "/dashboard/templates", templatesBody({ rows, total, page, pages }));
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/templates/new",
      kit.withSession(async (_ctx, who) => formPage(who, undefined, emptyTemplateForm())),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/templates",
      kit.withSession(async ({ body }, who) => {
        const form = templateFormOf(body);
        let created = "";
        const failed = await attempt(who, undefined, form, async () => {
          const input = {
            name: form.name,
            body: form.body,
            channel: "sms" as const,
            ...(form.code ? { code: form.code } : {}),
            ...(form.description ? { description: form.description } : {}),
          };
          const t = await s.templates.create(await s.accounts.callerFor(who.session.workspaceId), input);
          created = `Template "${t.name}" created with code ${t.code}${t.variables.length ? ` and variables ${t.variables.join(", ")}` : ""}.`;
        });
        if (failed) return failed;
        await kit.flash(who, { kind: "notice", text: created });
        return redirect("/dashboard/templates");
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/templates/:id/edit",
      kit.withSession(async ({ params }, who) => {
        const t = await editable(who, params?.id);
        return formPage(who, t.id, {
          name: t.name,
          code: t.code,
          description: t.description,
          body: t.body,
          status: t.status === "disabled" ? "disabled" : "active",
        });
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/templates/:id",
      kit.withSession(async ({ params, body }, who) => {
        const t = await editable(who, params?.id);
        const form = templateFormOf(body);
        // An emptied code keeps the old one: every template has a code.
        if (!form.code) form.code = t.code;
        const failed = await attempt(who, t.id, form, async () => {
          await s.templates.update(await s.accounts.callerFor(who.session.workspaceId), {
            template_id: t.id,
            name: form.name,
            code: form.code,
            body: form.body,
            description: form.description,
            status: form.status === "disabled" ? "disabled" : "active",
          });
        });
        if (failed) return failed;
        await kit.flash(who, { kind: "notice", text: `Template "${form.name}" saved.` });
        return redirect("/dashboard/templates");
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/templates/:id/delete",
      kit.withSession(async ({ params }, who) => {
        const t = await editable(who, params?.id);
        return kit.shell(who, "Delete a template", "/dashboard/templates", templateDeleteBody({ t, csrf: who.viewer.csrf }));
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/templates/:id/delete",
      kit.withSession(async ({ params }, who) => {
        const t = await editable(who, params?.id);
        await s.templates.remove(who.session.workspaceId, t.id);
        await kit.flash(who, { kind: "notice", text: `Template "${t.name}" deleted.` });
        return redirect("/dashboard/templates");
      }),
      { auth: "session", ...HIDDEN },
    );
}
