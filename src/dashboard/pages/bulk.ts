// Bulk sends from a CSV file: the upload form, the column mapping (only when the headers do not
// already say it), the preview of the first messages with the total cost and every row that would
// fail, and the result.
import type { TemplateRow } from "../../modules/templates/model";
import { html, type Html } from "../html";
import { errorBox } from "../layout";

export interface BulkUploadForm {
  channel: string;
  template: string;
  message: string;
  device: string;
}

export function uploadBody(opts: {
  form: BulkUploadForm;
  templates: TemplateRow[];
  devices: { id: number; label: string }[];
  csrf: string;
  error?: string | null;
}): Html {
  const f = opts.form;
  return html`<p class="hint">A CSV file with a <code>phone</code> column (international form, e.g. +14155552671), an optional
<code>name</code> column, and one column per variable, used as <code>{{column}}</code> in the text or the template's variables.
Up to 10,000 rows; they are sent in requests of 100.</p>
<form class="card" method="post" action="/dashboard/bulk" enctype="multipart/form-data">
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <label for="csv">CSV file</label>
  <input id="csv" name="csv" type="file" accept=".csv,text/csv" required>
  <label for="b-channel">Channel</label>
  <select id="b-channel" name="channel">
    <option value="sms"${f.channel === "sms" ? html` selected` : ""}>SMS</option>
    <option value="chatapp"${f.channel === "chatapp" ? html` selected` : ""}>Chat-app</option>
  </select>
  <label for="b-template">Template</label>
  <select id="b-template" name="template">
    <option value="">No template: use the text below</option>
    ${opts.templates.map((t) => html`<option value="${t.id}"${String(t.id) === f.template ? html` selected` : ""}>${t.name} (${t.channel}, ${t.code})</option>`)}
  </select>
  <label for="b-message">Text (with {{name}} or any column as {{column}})</label>
  <textarea id="b-message" name="message" rows="4" maxlength="4000">${f.message}</textarea>
  <label for="b-device">Send through</label>
  <select id="b-device" name="device">
    <option value="">Automatic (the first active device)</option>
    ${opts.devices.map((d) => html`<option value="${d.id}"${String(d.id) === f.device ? html` selected` : ""}>${d.label}</option>`)}
  </select>
  <p><button type="submit">Upload and preview</button></p>
</form>`;
}

/** One labelled choice per field the send needs that no header names. */
export function mappingBody(opts: {
  draft: string;
  headers: string[];
  needed: string[];
  mapping: Record<string, string>;
  csrf: string;
  error?: string | null;
}): Html {
  return html`<form class="card" method="post" action="/dashboard/bulk/preview">
  <p>The file's headers do not name every field. Choose the column for each:</p>
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <input type="hidden" name="draft" value="${opts.draft}">
  ${opts.needed.map(
    (
      field,
    ) => html`<label for="map-${field}">Column for ${field === "phone" ? "the phone number" : field === "name" ? "the name (optional)" : `{{${field}}}`}</label>
  <select id="map-${field}" name="map_${field}">
    ${field === "name" ? html`<option value="">(none)</option>` : ""}
    ${opts.headers.map((h, i) => html`<option value="${i}"${opts.mapping[field] === String(i) ? html` selected` : ""}>${h || `column ${i + 1}`}</option>`)}
  </select>`,
  )}
  <p><button type="submit">Preview</button></p>
</form>`;
}

export interface PreviewRow {
  line: number;
  recipient: string;
  text: string | null;
  error: string | null;
}

export function previewBody(opts: {
  draft: string;
  mapping: Record<string, string>;
  first: PreviewRow[];
  failing: PreviewRow[];
  total: number;
  valid: number;
  cost: number;
  csrf: string;
}): Html {
  return html`<section class="stats" aria-label="This send">
  <div class="card stat">Rows<strong>${opts.total}</strong></div>
  <div class="card stat">Will be sent<strong>${opts.valid}</strong></div>
  <div class="card stat">Will fail<strong>${opts.failing.length}</strong></div>
  <div class="card stat">Credits<strong>${opts.cost}</strong></div>
</section>
<section aria-labelledby="first-title"><h2 id="first-title">The first messages</h2>
<table class="stack"><thead><tr><th scope="col">Line</th><th scope="col">To</th><th scope="col">Text</th></tr></thead><tbody>
${opts.first.map((r) => html`<tr><td data-label="Line">${r.line}</td><td data-label="To">${r.recipient}</td><td data-label="Text">${r.text ?? html`<span class="error-text">${r.error}</span>`}</td></tr>`)}
</tbody></table></section>
${
  opts.failing.length
    ? html`<section aria-labelledby="failing-title"><h2 id="failing-title">Rows that will not be sent</h2>
<table class="stack"><thead><tr><th scope="col">Line</th><th scope="col">To</th><th scope="col">Why</th></tr></thead><tbody>
${opts.failing.map((r) => html`<tr><td data-label="Line">${r.line}</td><td data-label="To">${r.recipient}</td><td data-label="Why">${r.error}</td></tr>`)}
</tbody></table></section>`
    : ""
}
<form method="post" action="/dashboard/bulk/send" class="actions">
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <input type="hidden" name="draft" value="${opts.draft}">
  ${Object.entries(opts.mapping).map(([field, column]) => html`<input type="hidden" name="map_${field}" value="${column}">`)}
  ${opts.valid > 0 ? html`<button type="submit">Send ${opts.valid} message${opts.valid === 1 ? "" : "s"}</button>` : html`<p class="error">No row can be sent.</p>`}
  <a class="button secondary" href="/dashboard/bulk">Start again</a>
</form>`;
}

export function resultBody(opts: { accepted: number; failed: PreviewRow[]; requests: number }): Html {
  return html`<p class="notice" role="status">${opts.accepted} message${opts.accepted === 1 ? "" : "s"} accepted in ${opts.requests} request${opts.requests === 1 ? "" : "s"} of at most 100.</p>
${
  opts.failed.length
    ? html`<section aria-labelledby="failed-title"><h2 id="failed-title">Not sent</h2>
<table class="stack"><thead><tr><th scope="col">Line</th><th scope="col">To</th><th scope="col">Why</th></tr></thead><tbody>
${opts.failed.map((r) => html`<tr><td data-label="Line">${r.line}</td><td data-label="To">${r.recipient}</td><td data-label="Why">${r.error}</td></tr>`)}
</tbody></table></section>`
    : ""
}
<p class="actions"><a class="button" href="/dashboard/messages">See them in Messages</a> <a class="button secondary" href="/dashboard/bulk">Another bulk send</a></p>`;
}
