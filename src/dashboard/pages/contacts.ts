// Contacts: the paged list with its search, the create and edit form, the delete confirmation, and
// the CSV import with its report of every row that was turned away and why.
import type { ContactService } from "../../modules/contacts/service";
import { html, type Html } from "../html";
import { errorBox, pager, utcTime } from "../layout";

type Contact = Awaited<ReturnType<ContactService["present"]>>;
type ContactType = Awaited<ReturnType<ContactService["types"]>>["types"][number];

export interface ContactForm {
  name: string;
  phone: string;
  email: string;
  type: string;
  /** IANA name; "" for none (quiet hours then follow the number's country). */
  timezone: string;
}

export interface Rejected {
  line: number;
  held: string;
  reason: string;
}

export const emptyContactForm = (): ContactForm => ({ name: "", phone: "", email: "", type: "", timezone: "" });

const fieldError = (id: string, message: string | undefined) =>
  message ? html`<p class="error" id="${id}-error" role="alert">${message}</p>` : "";
const describedBy = (id: string, hint: string | null, message: string | undefined) => {
  const ids = [hint, message ? `${id}-error` : null].filter(Boolean).join(" ");
  return html`${ids ? html` aria-describedby="${ids}"` : ""}${message ? html` aria-invalid="true"` : ""}`;
};

export function contactsBody(opts: {
  rows: Contact[];
  total: number;
  page: number;
  pages: number;
  query: string;
  error?: string | null;
}): Html {
  const link = (page: number) =>
    `/dashboard/contacts?${new URLSearchParams({ ...(opts.query ? { q: opts.query } : {}), page: String(page) })}`;
  return html`<p class="actions"><a class="button" href="/dashboard/contacts/new">New contact</a> <a class="button secondary" href="/dashboard/contacts/import">Import CSV</a> <a class="button secondary" href="/dashboard/contacts/export.csv">Export CSV</a></p>
<form class="card" method="get" action="/dashboard/contacts" role="search" aria-label="Search contacts">
  ${errorBox(opts.error)}
  <div class="row">
    <div><label for="c-q">Name, phone or email contains</label><input id="c-q" name="q" type="search" maxlength="200" value="${opts.query}"></div>
    <button type="submit">Search</button>
    ${opts.query ? html`<a class="button secondary" href="/dashboard/contacts">Show all</a>` : ""}
  </div>
</form>
<p role="status">${opts.query ? `${opts.total === 1 ? "1 contact matches" : `${opts.total} contacts match`} "${opts.query}"` : `${opts.total} contact${opts.total === 1 ? "" : "s"}`}${opts.pages > 1 ? `, page ${opts.page} of ${opts.pages}` : ""}</p>
${
  opts.rows.length === 0
    ? opts.query
      ? html`<p class="empty">No contact matches. Try part of the name or a few digits of the number, or <a href="/dashboard/contacts/new">add the contact</a>.</p>`
      : html`<p class="empty">No contacts yet. Add one with <strong>New contact</strong>, or import a CSV file with name and phone columns.</p>`
    : html`<table class="stack"><thead><tr><th scope="col">Name</th><th scope="col">Phone</th><th scope="col">Email</th><th scope="col">Type</th><th scope="col">Actions</th></tr></thead><tbody>
${opts.rows.map(
  (c) => html`<tr>
  <td data-label="Name"><span class="pre">${c.name}</span></td>
  <td data-label="Phone"><div>${c.phone}${c.opted_out ? html` <span class="badge failed" title="Since ${utcTime(c.opted_out_at)} UTC">Opted out</span>` : ""}</div></td>
  <td data-label="Email">${c.email ?? ""}</td>
  <td data-label="Type">${c.type ?? ""}</td>
  <td data-label="Actions"><span class="actions"><a class="button secondary" href="/dashboard/contacts/${c.contact_id}/edit" aria-label="Edit ${c.name}">Edit</a> <a class="button danger" href="/dashboard/contacts/${c.contact_id}/delete" aria-label="Delete ${c.name}">Delete</a> <a class="button danger" href="/dashboard/privacy/erase?phone=${encodeURIComponent(c.phone)}&amp;back=/dashboard/contacts" aria-label="Erase data about ${c.name}">Erase data</a></span></td>
</tr>`,
)}
</tbody></table>`
}
${pager(opts.page, opts.pages, link)}`;
}

/** The create form (no id) or the edit form of contact `id`; errors sit under their fields. */
export function contactFormBody(opts: {
  id?: number;
  form: ContactForm;
  types: ContactType[];
  csrf: string;
  errors?: Record<string, string>;
  error?: string | null;
}): Html {
  const f = opts.form;
  const e = opts.errors ?? {};
  return html`<form class="card" method="post" action="${opts.id === undefined ? "/dashboard/contacts" : `/dashboard/contacts/${opts.id}`}">
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <label for="c-name">Name</label>
  <input id="c-name" name="name" required maxlength="200" autocomplete="off" value="${f.name}"${describedBy("c-name", null, e.name)}>
  ${fieldError("c-name", e.name)}
  <label for="c-phone">Phone</label>
  <input id="c-phone" name="phone" type="tel" required maxlength="32" autocomplete="off" value="${f.phone}"${describedBy("c-phone", "c-phone-hint", e.phone)}>
  <p class="hint" id="c-phone-hint">International form, e.g. +14155552671. One contact per number.</p>
  ${fieldError("c-phone", e.phone)}
  <label for="c-email">Email (optional)</label>
  <input id="c-email" name="email" type="email" maxlength="254" autocomplete="off" value="${f.email}"${describedBy("c-email", null, e.email)}>
  ${fieldError("c-email", e.email)}
  <label for="c-type">Type</label>
  <select id="c-type" name="type"${describedBy("c-type", null, e.type)}><option value="">No type</option>${opts.types.map((t) => html`<option value="${t.code}"${t.code === f.type ? html` selected` : ""}>${t.name}</option>`)}</select>
  ${fieldError("c-type", e.type)}
  <label for="c-timezone">Time zone (optional)</label>
  <input id="c-timezone" name="timezone" maxlength="64" autocomplete="off" spellcheck="false" placeholder="Europe/Berlin" value="${f.timezone}"${describedBy("c-timezone", "c-timezone-hint", e.timezone)}>
  <p class="hint" id="c-timezone-hint">An IANA time zone name such as America/New_York or Asia/Kolkata. Quiet hours use it; left empty, they use the zone of the number's country.</p>
  ${fieldError("c-timezone", e.timezone)}
  <p class="actions"><button type="submit">${opts.id === undefined ? "Create contact" : "Save contact"}</button> <a class="button secondary" href="/dashboard/contacts">Cancel</a></p>
</form>`;
}

export function contactDeleteBody(opts: { c: Contact; csrf: string }): Html {
  const { c } = opts;
  return html`<section class="card" aria-labelledby="confirm-title">
  <h2 id="confirm-title">Delete ${c.name}?</h2>
  <p>${c.name} (${c.phone}${c.email ? `, ${c.email}` : ""}) is removed from your contacts. Messages already sent to the number stay in Messages.</p>
  <form method="post" action="/dashboard/contacts/${c.contact_id}/delete" class="actions">
    <input type="hidden" name="_csrf" value="${opts.csrf}">
    <button class="danger" type="submit">Delete contact</button>
    <a class="button secondary" href="/dashboard/contacts">Keep it</a>
  </form>
</section>`;
}

/**
 * A CSV import page: after an import, its report (the summary, and each rejected row with its line,
 * what it held and why), then the upload form with its hint. Contacts and opt-outs share it.
 */
export function csvImportBody(opts: {
  action: string;
  csrf: string;
  error?: string | null;
  report?: { summary: string; rejected: Rejected[]; caption: string; back: { href: string; text: string } } | null;
  hint: Html;
  submit: string;
}): Html {
  const r = opts.report;
  return html`${
    r
      ? html`<section class="card" aria-labelledby="report-title">
  <h2 id="report-title">Import report</h2>
  <p class="${r.rejected.length ? "error" : "notice"}" role="status">${r.summary}</p>
  ${
    r.rejected.length
      ? html`<table class="stack" id="rejected"><caption class="hint">${r.caption}</caption><thead><tr><th scope="col">Line</th><th scope="col">What it held</th><th scope="col">Why</th></tr></thead><tbody>
${r.rejected.map((x) => html`<tr><td data-label="Line">${x.line}</td><td data-label="Held"><code>${x.held}</code></td><td data-label="Why">${x.reason}</td></tr>`)}
</tbody></table>`
      : ""
  }
  <p><a href="${r.back.href}">${r.back.text}</a></p>
</section>`
      : ""
  }
<form class="card" method="post" action="${opts.action}" enctype="multipart/form-data">
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <label for="i-file">CSV file</label>
  <input id="i-file" name="file" type="file" accept=".csv,text/csv" required aria-describedby="i-file-hint">
  <div class="hint" id="i-file-hint">${opts.hint}</div>
  <p><button type="submit">${opts.submit}</button></p>
</form>`;
}

/** Counted in a sentence: "1 contact", "2 contacts". */
export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The contacts upload form, and after an import its report: how many came in and each rejected row with its reason. */
export function importBody(opts: {
  csrf: string;
  types: ContactType[];
  maxRows: number;
  error?: string | null;
  report?: { imported: number; rejected: Rejected[] } | null;
}): Html {
  const r = opts.report;
  return csvImportBody({
    action: "/dashboard/contacts/import",
    csrf: opts.csrf,
    error: opts.error,
    report: r
      ? {
          summary: `${plural(r.imported, "contact")} imported, ${plural(r.rejected.length, "row")} rejected.`,
          rejected: r.rejected,
          caption: "Rejected rows: nothing of them was stored. Fix them and import just those rows again.",
          back: { href: "/dashboard/contacts", text: "See the contacts" },
        }
      : null,
    hint: html`<p>The first line names the columns: <code>name</code> and <code>phone</code>, and optionally <code>email</code> and <code>type</code> (${opts.types.map((t, i) => html`${i ? ", " : ""}<code>${t.code}</code>`)}), in any order and any case. Other columns are ignored. At most ${opts.maxRows} rows.</p>
    <p>Each row becomes one contact, checked as the form checks it. A row with a problem is skipped whole and listed with its reason. A phone number that is already a contact is rejected as a duplicate: the existing contact is left as it is.</p>`,
    submit: "Import contacts",
  });
}
