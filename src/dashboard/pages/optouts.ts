// Opt-outs: the numbers suppressed now (each with a button to opt it back in) or the whole audit of
// opt-outs and opt-ins filtered by number, the form that opts a number out by hand, and the CSV
// import with its report of the numbers added, already out, and the lines turned away.
import type { SafetyService } from "../../modules/safety/service";
import { html, type Html } from "../html";
import { pager, utcTime } from "../layout";
import { csvImportBody, plural, type Rejected } from "./contacts";

type Entry = Awaited<ReturnType<SafetyService["list"]>>["entries"][number];

/** An entry as the page shows it: the contact's name beside the number when there is one. */
export type OptOutRow = Entry & { contactName: string | null };

export type OptOutView = "active" | "audit";

export interface OptOutForm {
  phone: string;
  reason: string;
}

const SOURCES: Record<Entry["source"], string> = { keyword: "keyword text", api: "API", dashboard: "dashboard", import: "import" };

const fieldError = (id: string, message: string | undefined) =>
  message ? html`<p class="error" id="${id}-error" role="alert">${message}</p>` : "";
const describedBy = (id: string, hint: string | null, message: string | undefined) => {
  const ids = [hint, message ? `${id}-error` : null].filter(Boolean).join(" ");
  return html`${ids ? html` aria-describedby="${ids}"` : ""}${message ? html` aria-invalid="true"` : ""}`;
};

const who = (r: OptOutRow) => html`${r.phone}${r.contactName ? html` <span class="hint">(${r.contactName})</span>` : ""}`;

/** The form that opts one number out by hand. */
function optOutForm(csrf: string, form: OptOutForm, errors: { phone?: string; reason?: string }): Html {
  return html`<section class="card" aria-labelledby="add-title">
  <h2 id="add-title">Opt a number out</h2>
  <form method="post" action="/dashboard/optouts">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div class="row">
      <div>
        <label for="o-phone">Phone</label>
        ${fieldError("o-phone", errors.phone)}
        <input id="o-phone" name="phone" type="tel" required maxlength="32" autocomplete="off" value="${form.phone}"${describedBy("o-phone", "o-phone-hint", errors.phone)}>
      </div>
      <div>
        <label for="o-reason">Reason (optional)</label>
        ${fieldError("o-reason", errors.reason)}
        <input id="o-reason" name="reason" maxlength="500" autocomplete="off" value="${form.reason}" placeholder="e.g. asked on the phone"${describedBy("o-reason", null, errors.reason)}>
      </div>
    </div>
    <p class="hint" id="o-phone-hint">International form, e.g. +14155552671. Sends to the number are refused from then on, and its messages still waiting fail (refunded).</p>
    <p class="actions"><button type="submit">Opt out</button> <a class="button secondary" href="/dashboard/optouts/import">Import CSV</a></p>
  </form>
</section>`;
}

function activeTable(rows: OptOutRow[], csrf: string): Html {
  return html`<table class="stack" id="active"><thead><tr><th scope="col">Number</th><th scope="col">Source</th><th scope="col">Reason</th><th scope="col">Since (UTC)</th><th scope="col">Action</th></tr></thead><tbody>
${rows.map(
  (r) => html`<tr>
  <td data-label="Number"><div>${who(r)}</div></td>
  <td data-label="Source">${SOURCES[r.source]}</td>
  <td data-label="Reason"><div class="pre">${r.reason ?? ""}</div></td>
  <td data-label="Since">${utcTime(r.at)}</td>
  <td data-label="Action"><form method="post" action="/dashboard/optouts/opt-in" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <input type="hidden" name="phone" value="${r.phone}">
    <button class="secondary" type="submit">Opt back in ${r.phone}</button>
  </form></td>
</tr>`,
)}
</tbody></table>`;
}

function auditTable(rows: OptOutRow[]): Html {
  return html`<table class="stack" id="audit"><thead><tr><th scope="col">When (UTC)</th><th scope="col">Number</th><th scope="col">Change</th><th scope="col">Source</th><th scope="col">Reason</th></tr></thead><tbody>
${rows.map(
  (r) => html`<tr>
  <td data-label="When">${utcTime(r.at, true)}</td>
  <td data-label="Number"><div>${who(r)}</div></td>
  <td data-label="Change"><span class="badge ${r.action === "opted_out" ? "failed" : "active"}">${r.action === "opted_out" ? "opted out" : "opted in"}</span></td>
  <td data-label="Source">${SOURCES[r.source]}${r.message_id !== null ? html` <span class="hint">(message #${r.message_id})</span>` : ""}</td>
  <td data-label="Reason"><div class="pre">${r.reason ?? ""}</div></td>
</tr>`,
)}
</tbody></table>`;
}

export function optOutsBody(opts: {
  view: OptOutView;
  rows: OptOutRow[];
  total: number;
  page: number;
  pages: number;
  /** The audit's phone filter as typed, and what is wrong with it. */
  phone: string;
  phoneError?: string;
  csrf: string;
  form?: OptOutForm;
  errors?: { phone?: string; reason?: string };
}): Html {
  const { view } = opts;
  const link = (page: number) =>
    `/dashboard/optouts?${new URLSearchParams({ ...(view === "audit" ? { view } : {}), ...(opts.phone ? { phone: opts.phone } : {}), page: String(page) })}`;
  const tab = (to: OptOutView, label: string) =>
    html`<a class="button${view === to ? "" : " secondary"}" href="/dashboard/optouts${to === "audit" ? "?view=audit" : ""}"${view === to ? html` aria-current="page"` : ""}>${label}</a>`;
  const count =
    view === "active"
      ? `${opts.total} number${opts.total === 1 ? "" : "s"} opted out`
      : `${opts.total} change${opts.total === 1 ? "" : "s"}${opts.phone && !opts.phoneError ? ` for ${opts.phone}` : ""}`;
  const empty =
    view === "active"
      ? html`<p class="empty">No one has opted out. People who text STOP (or another opt-out word) to your numbers appear here, and so do numbers you opt out above or import.</p>`
      : opts.phone && !opts.phoneError
        ? html`<p class="empty">No opt-out or opt-in for ${opts.phone}. <a href="/dashboard/optouts?view=audit">Show every number</a>.</p>`
        : html`<p class="empty">Nothing has changed yet. Every opt-out and opt-in, by keyword, API, dashboard or import, is recorded here.</p>`;
  return html`${optOutForm(opts.csrf, opts.form ?? { phone: "", reason: "" }, opts.errors ?? {})}
<nav class="actions" aria-label="Opt-out views">${tab("active", "Opted out now")} ${tab("audit", "History")}</nav>
${
  view === "audit"
    ? html`<form class="card" method="get" action="/dashboard/optouts" role="search" aria-label="Filter the history">
  <input type="hidden" name="view" value="audit">
  <div class="row">
    <div><label for="a-phone">Changes of the number</label>${fieldError("a-phone", opts.phoneError)}<input id="a-phone" name="phone" type="tel" maxlength="32" placeholder="+14155552671" value="${opts.phone}"${describedBy("a-phone", null, opts.phoneError)}></div>
    <button type="submit">Filter</button>
    ${opts.phone ? html`<a class="button secondary" href="/dashboard/optouts?view=audit">Show all</a>` : ""}
  </div>
</form>`
    : ""
}
<p role="status">${count}${opts.pages > 1 ? `, page ${opts.page} of ${opts.pages}` : ""}</p>
${opts.rows.length === 0 ? empty : view === "active" ? activeTable(opts.rows, opts.csrf) : auditTable(opts.rows)}
${pager(opts.page, opts.pages, link, view === "audit" ? ["Newer changes", "Older changes"] : ["Previous page", "Next page"])}`;
}

export interface ImportReport {
  added: number;
  already: number;
  rejected: Rejected[];
}

/** The upload form, and after an import its report. */
export function optOutImportBody(opts: { csrf: string; maxRows: number; error?: string | null; report?: ImportReport | null }): Html {
  const r = opts.report;
  return csvImportBody({
    action: "/dashboard/optouts/import",
    csrf: opts.csrf,
    error: opts.error,
    report: r
      ? {
          summary: `${plural(r.added, "number")} opted out, ${r.already} already opted out, ${plural(r.rejected.length, "row")} failed.`,
          rejected: r.rejected,
          caption: "Failed rows: their numbers were not opted out. Fix them and import just those rows again.",
          back: { href: "/dashboard/optouts", text: "See the numbers opted out" },
        }
      : null,
    hint: html`<p>One number a row in the first column, in international form (e.g. +14155552671), and optionally a reason in the second. A first line naming the columns (<code>phone</code>, <code>reason</code>, in any order) is optional. At most ${opts.maxRows} rows.</p>
    <p>Each number is opted out as if opted out by hand (source <em>import</em>). A number already opted out is counted and left as it is; a row that is not a number is listed with its reason.</p>`,
    submit: "Import opt-outs",
  });
}
