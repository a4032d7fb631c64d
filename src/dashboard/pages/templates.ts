// Templates: the list (own SMS templates with edit and delete; system and chat-app templates shown
// read-only with their status and language), the create and edit form, and the delete confirmation.
import type { TemplateRow } from "../../modules/templates/model";
import { html, type Html } from "../html";
import { errorBox, pager } from "../layout";

export interface TemplateForm {
  name: string;
  code: string;
  description: string;
  body: string;
  status: string;
}

export const emptyTemplateForm = (): TemplateForm => ({ name: "", code: "", description: "", body: "", status: "active" });

/** Whether the dashboard may change a template: system templates belong to everyone and chat-app ones to the platform. */
export const templateEditable = (t: TemplateRow) => !t.isSystem && t.channel === "sms";

/** The error of one field, tied to its input by id. */
const fieldError = (id: string, message: string | undefined) =>
  message ? html`<p class="error" id="${id}-error" role="alert">${message}</p>` : "";
const describedBy = (id: string, hint: string | null, message: string | undefined) => {
  const ids = [hint, message ? `${id}-error` : null].filter(Boolean).join(" ");
  return html`${ids ? html` aria-describedby="${ids}"` : ""}${message ? html` aria-invalid="true"` : ""}`;
};

function origin(t: TemplateRow): Html | string {
  if (t.isSystem) return html`<span class="hint">system template, read-only</span>`;
  if (!templateEditable(t)) return html`<span class="hint">managed on the platform, read-only</span>`;
  return "";
}

export function templatesBody(opts: { rows: TemplateRow[]; total: number; page: number; pages: number }): Html {
  return html`<p class="actions"><a class="button" href="/dashboard/templates/new">New template</a></p>
${
  opts.rows.length === 0
    ? html`<p class="empty">No templates yet. Create one with <strong>New template</strong>; write variables as {{name}} and fill them in when you send.</p>`
    : html`${opts.page === 1 && !opts.rows.some(templateEditable) ? html`<p class="notice">None of these templates is yours to change yet: make your own with <strong>New template</strong>.</p>` : ""}
<p role="status">${opts.total} template${opts.total === 1 ? "" : "s"}${opts.pages > 1 ? `, page ${opts.page} of ${opts.pages}` : ""}</p>
<table class="stack templates"><thead><tr><th scope="col">Name</th><th scope="col">Code</th><th scope="col">Channel</th><th scope="col">Body</th><th scope="col">Variables</th><th scope="col">Status</th><th scope="col">Actions</th></tr></thead><tbody>
${opts.rows.map(
  (t) => html`<tr>
  <td data-label="Name"><span>${t.name}${origin(t) ? html`<br>${origin(t)}` : ""}</span></td>
  <td data-label="Code"><code>${t.code}</code></td>
  <td data-label="Channel"><span>${t.channel}${t.language ? html`<br><span class="hint">${t.language}</span>` : ""}</span></td>
  <td data-label="Body"><span class="pre">${t.body.length > 160 ? `${t.body.slice(0, 159)}…` : t.body}</span></td>
  <td data-label="Variables"><span>${t.variables.length ? t.variables.map((v, i) => html`${i ? ", " : ""}<code>${v}</code>`) : html`<span class="hint">none</span>`}</span></td>
  <td data-label="Status"><span class="badge ${t.status}">${t.status}</span></td>
  <td data-label="Actions">${
    templateEditable(t)
      ? html`<span class="actions"><a class="button secondary" href="/dashboard/templates/${t.id}/edit" aria-label="Edit ${t.name}">Edit</a> <a class="button danger" href="/dashboard/templates/${t.id}/delete" aria-label="Delete ${t.name}">Delete</a></span>`
      : html`<span class="hint">read-only</span>`
  }</td>
</tr>`,
)}
</tbody></table>`
}
${pager(opts.page, opts.pages, (n) => `/dashboard/templates?page=${n}`)}`;
}

/** The create form (no id) or the edit form of template `id`; errors sit under their fields. */
export function templateFormBody(opts: {
  id?: number;
  form: TemplateForm;
  csrf: string;
  errors?: Record<string, string>;
  error?: string | null;
}): Html {
  const f = opts.form;
  const e = opts.errors ?? {};
  const action = opts.id === undefined ? "/dashboard/templates" : `/dashboard/templates/${opts.id}`;
  return html`<form class="card" method="post" action="${action}">
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <label for="t-name">Name</label>
  <input id="t-name" name="name" required maxlength="200" value="${f.name}"${describedBy("t-name", null, e.name)}>
  ${fieldError("t-name", e.name)}
  <label for="t-code">Code${opts.id === undefined ? " (optional)" : ""}</label>
  <input id="t-code" name="code" maxlength="32" pattern="[A-Z][A-Z0-9_]{0,31}" autocapitalize="characters" value="${f.code}"${describedBy("t-code", "t-code-hint", e.code)}>
  <p class="hint" id="t-code-hint">Upper-case letters, digits and underscores, starting with a letter, e.g. ORDER_READY.${opts.id === undefined ? " Left empty, one is made from the name." : ""}</p>
  ${fieldError("t-code", e.code)}
  <label for="t-body">Body</label>
  <textarea id="t-body" name="body" rows="5" required maxlength="4096"${describedBy("t-body", "t-body-hint", e.body)}>${f.body}</textarea>
  <p class="hint" id="t-body-hint">Write variables as {{name}}: letters, digits and underscores, case-sensitive. Each one gets a field on the Send page.</p>
  ${fieldError("t-body", e.body)}
  <label for="t-description">Description (optional)</label>
  <input id="t-description" name="description" maxlength="1000" value="${f.description}"${describedBy("t-description", null, e.description)}>
  ${fieldError("t-description", e.description)}
  ${
    opts.id === undefined
      ? html`<p class="hint">Channel: SMS. Chat-app templates are made on the platform and appear here once the number is connected.</p>`
      : html`<label for="t-status">Status</label>
  <select id="t-status" name="status">${["active", "disabled"].map((s) => html`<option value="${s}"${s === f.status ? html` selected` : ""}>${s}</option>`)}</select>`
  }
  <p class="actions"><button type="submit">${opts.id === undefined ? "Create template" : "Save template"}</button> <a class="button secondary" href="/dashboard/templates">Cancel</a></p>
</form>`;
}

export function templateDeleteBody(opts: { t: TemplateRow; csrf: string }): Html {
  const { t } = opts;
  return html`<section class="card" aria-labelledby="confirm-title">
  <h2 id="confirm-title">Delete "${t.name}"?</h2>
  <p>The template <code>${t.code}</code> can no longer be sent. Messages already sent with it keep their text.</p>
  <p class="pre">${t.body}</p>
  <form method="post" action="/dashboard/templates/${t.id}/delete" class="actions">
    <input type="hidden" name="_csrf" value="${opts.csrf}">
    <button class="danger" type="submit">Delete template</button>
    <a class="button secondary" href="/dashboard/templates">Keep it</a>
  </form>
</section>`;
}
