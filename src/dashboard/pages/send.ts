// Send: one message on a channel, typed or from a template (one field per variable), to a typed
// number or a contact, through a chosen device, now or at a local time in a chosen time zone. The
// preview under the text (characters, encoding, segments, cost) is the server's own count.
import type { TemplateRow } from "../../modules/templates/model";
import { html, type Html } from "../html";
import { errorBox } from "../layout";

export interface SendForm {
  channel: string;
  recipient: string;
  recipient_name: string;
  template: string;
  message: string;
  device: string;
  schedule: string;
  timezone: string;
  /** A paired phone's SIM, "" for the phone's own choice. */
  sim: string;
  /** Ahead of the queue and the phone's limits (one-time codes). */
  urgent: boolean;
  vars: Record<string, string>;
}

export const emptySendForm = (channel: string): SendForm => ({
  channel,
  recipient: "",
  recipient_name: "",
  template: "",
  message: "",
  device: "",
  schedule: "",
  timezone: "UTC",
  sim: "",
  urgent: false,
  vars: {},
});

const ZONES: string[] = (Intl as unknown as { supportedValuesOf(kind: string): string[] }).supportedValuesOf("timeZone");

/** The inputs for a template's variables (or the text box when there is none). */
export function templateFields(template: TemplateRow | null, form: SendForm, fieldError: Record<string, string>): Html {
  if (!template) {
    return html`<label for="message">Text</label>
<textarea id="message" name="message" rows="5" maxlength="4000"${fieldError.message ? html` aria-invalid="true" aria-describedby="message-error"` : ""}>${form.message}</textarea>
${fieldError.message ? html`<p class="error" id="message-error">${fieldError.message}</p>` : ""}`;
  }
  return html`<fieldset><legend>Template "${template.name}"</legend>
<p class="hint">${template.body}</p>
${
  template.variables.length === 0
    ? html`<p class="hint">This template has no variables.</p>`
    : template.variables.map(
        (v) => html`<label for="var-${v}">${v}</label><input id="var-${v}" name="var_${v}" value="${form.vars[v] ?? ""}" required>`,
      )
}
</fieldset>`;
}

export function sendBody(opts: {
  form: SendForm;
  channels: { value: string; label: string }[];
  devices: { id: number; label: string }[];
  templates: TemplateRow[];
  chosen: TemplateRow | null;
  contacts: { name: string; phone: string }[];
  csrf: string;
  error?: string | null;
  fieldError?: Record<string, string>;
}): Html {
  const { form } = opts;
  const fe = opts.fieldError ?? {};
  const invalid = (field: string) => (fe[field] ? html` aria-invalid="true" aria-describedby="${field}-error"` : "");
  const fieldErrorText = (field: string) => (fe[field] ? html`<p class="error" id="${field}-error">${fe[field]}</p>` : "");
  return html`<nav aria-label="Channel" class="actions">
  ${opts.channels.map((c) => html`<a class="button${c.value === form.channel ? "" : " secondary"}" href="/dashboard/send?channel=${c.value}"${c.value === form.channel ? html` aria-current="page"` : ""}>${c.label}</a>`)}
  <a class="button secondary" href="/dashboard/bulk">Bulk from a CSV file</a>
</nav>
<form class="card" method="post" action="/dashboard/send" id="send-form">
  <!-- The preview is asked for by this wrapper, not the form: htmx runs the browser's form
       validation before a form's own request, and an empty "To" would stop the preview. -->
  <div hx-post="/dashboard/send/preview" hx-trigger="input delay:250ms, change" hx-target="#preview" hx-swap="innerHTML">
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <input type="hidden" name="channel" value="${form.channel}">
  <div class="row">
    <div><label for="recipient">To (international format, or pick a contact)</label>
      <input id="recipient" name="recipient" type="tel" list="contact-list" autocomplete="off" placeholder="+14155552671" required value="${form.recipient}"${invalid("recipient")}>
      ${fieldErrorText("recipient")}
      <datalist id="contact-list">${opts.contacts.map((c) => html`<option value="${c.phone}">${c.name}</option>`)}</datalist></div>
    <div><label for="recipient_name">Name (optional)</label><input id="recipient_name" name="recipient_name" maxlength="100" value="${form.recipient_name}"></div>
  </div>
  <label for="template">Template</label>
  <select id="template" name="template" hx-get="/dashboard/send/fields" hx-include="#send-form" hx-trigger="change" hx-target="#template-fields" hx-swap="innerHTML">
    <option value="">No template: write the text</option>
    ${opts.templates.map((t) => html`<option value="${t.id}"${String(t.id) === form.template ? html` selected` : ""}>${t.name} (${t.code})</option>`)}
  </select>
  <div id="template-fields">${templateFields(opts.chosen, form, fe)}</div>
  <div id="preview" class="hint" aria-live="polite"></div>
  <div class="row">
    <div><label for="device">Send through</label><select id="device" name="device"${invalid("device")}>
      <option value="">Automatic (the first active device)</option>
      ${opts.devices.map((d) => html`<option value="${d.id}"${String(d.id) === form.device ? html` selected` : ""}>${d.label}</option>`)}
    </select>${fieldErrorText("device")}</div>
    ${
      form.channel === "sms"
        ? html`<div><label for="sim">SIM card (paired phones)</label><select id="sim" name="sim"${invalid("sim")}>
      <option value="">The phone's own choice</option>
      ${["1", "2", "3"].map((n) => html`<option value="${n}"${form.sim === n ? html` selected` : ""}>SIM ${n}</option>`)}
    </select>${fieldErrorText("sim")}</div>`
        : ""
    }
  </div>
  ${
    form.channel === "sms"
      ? html`<p><input type="checkbox" id="urgent" name="urgent" value="1"${form.urgent ? html` checked` : ""}> <label class="inline" for="urgent">Urgent, e.g. a one-time code: ahead of the queue and the phone's pacing</label></p>`
      : ""
  }
  <div class="row">
    <div><label for="schedule">Send at (leave empty to send now)</label><input id="schedule" name="schedule" type="datetime-local" value="${form.schedule}"${invalid("schedule")}>${fieldErrorText("schedule")}</div>
    <div><label for="timezone">Time zone of that time</label><select id="timezone" name="timezone" data-browser-zone="${form.timezone === "UTC" ? "yes" : "no"}">
      ${["UTC", ...ZONES.filter((z) => z !== "UTC")].map((z) => html`<option${z === form.timezone ? html` selected` : ""}>${z}</option>`)}
    </select></div>
  </div>
  <p><button type="submit">Send</button></p>
  </div>
</form>`;
}

/** The preview under the text: the final text's count, and what the server would say about the send. */
export function previewFragment(opts: {
  text: string;
  encoding: string;
  units: number;
  segments: number;
  cost: number | null;
  problem: string | null;
  recipient: "missing" | "bad" | "ok";
}): Html {
  const recipient = {
    missing: html` · <span class="error-text">no recipient yet</span>`,
    bad: html` · <span class="error-text">the number is not in international form</span>`,
    ok: " · number OK",
  }[opts.recipient];
  return html`<p>${opts.units} ${opts.encoding === "GSM-7" ? "characters" : "UTF-16 units"} · ${opts.encoding} · ${opts.segments} segment${opts.segments === 1 ? "" : "s"}${
    opts.cost !== null ? html` · costs ${opts.cost} credit${opts.cost === 1 ? "" : "s"}` : ""
  }${recipient}</p>
${opts.problem ? html`<p class="error-text">${opts.problem}</p>` : ""}`;
}
