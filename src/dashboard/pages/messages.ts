// Messages: the filterable, paged list with live status badges, and one message's detail with
// every attempt and the reason its channel gave.
import type { DeviceRow } from "../../modules/devices/model";
import type { LogRecord } from "../../modules/notifications/model";
import type { NotificationRecord } from "../../modules/notifications/state";
import { shownStatus } from "../../modules/notifications/service";
import { html, type Html } from "../html";
import { errorBox, pager, utcTime } from "../layout";

export const STATUSES = ["awaiting_approval", "pending", "sent", "delivered", "failed", "cancelled"] as const;

export interface MessageFilters {
  status: string;
  channel: string;
  device: string;
  from: string;
  to: string;
  recipient: string;
  text: string;
}

const when = (t: number | null) => utcTime(t, true);

/** A message's status badge: `cancelling` while the phone holding it has been asked to drop it. */
export const badge = (n: Pick<NotificationRecord, "id" | "status" | "cancelPending">) => {
  const status = shownStatus(n);
  return html`<span class="badge ${status}" data-status-for="${n.id}">${status}</span>`;
};

/** An encrypted send's ciphertext, shortened for a table cell and marked as what it is. */
const cipher = (value: string) =>
  html`<span class="badge">encrypted</span> <code>${value.length > 24 ? `${value.slice(0, 23)}…` : value}</code>`;

function options(values: readonly string[], chosen: string, any: string): Html {
  return html`<option value="">${any}</option>${values.map((v) => html`<option value="${v}"${v === chosen ? html` selected` : ""}>${v}</option>`)}`;
}

export function messagesBody(opts: {
  filters: MessageFilters;
  channels: readonly string[];
  devices: DeviceRow[];
  rows: NotificationRecord[];
  total: number;
  page: number;
  pages: number;
  query: string;
  error?: string | null;
}) {
  const f = opts.filters;
  const deviceName = new Map(opts.devices.map((d) => [d.id, d.name]));
  const link = (page: number) =>
    `/dashboard/messages?${new URLSearchParams({ ...Object.fromEntries(new URLSearchParams(opts.query)), page: String(page) })}`;
  return html`<form class="card" method="get" action="/dashboard/messages" aria-label="Filter messages">
  ${errorBox(opts.error)}
  <div class="row">
    <div><label for="f-status">Status</label><select id="f-status" name="status">${options(STATUSES, f.status, "Any status")}</select></div>
    <div><label for="f-channel">Channel</label><select id="f-channel" name="channel">${options(opts.channels, f.channel, "Any channel")}</select></div>
    <div><label for="f-device">Device</label><select id="f-device" name="device"><option value="">Any device</option>${opts.devices.map((d) => html`<option value="${d.id}"${String(d.id) === f.device ? html` selected` : ""}>${d.name}</option>`)}</select></div>
  </div>
  <div class="row">
    <div><label for="f-from">From (UTC day)</label><input id="f-from" name="from" type="date" value="${f.from}"></div>
    <div><label for="f-to">To (UTC day)</label><input id="f-to" name="to" type="date" value="${f.to}"></div>
    <div><label for="f-recipient">Recipient</label><input id="f-recipient" name="recipient" type="tel" placeholder="+14155552671" value="${f.recipient}"></div>
    <div><label for="f-text">Text contains</label><input id="f-text" name="text" maxlength="200" value="${f.text}"></div>
  </div>
  <p class="actions"><button type="submit">Filter</button> <a class="button secondary" href="/dashboard/messages">Clear</a>
  <a class="button secondary" href="/dashboard/messages/export.csv?${opts.query}">Export CSV</a></p>
</form>
<p role="status">${opts.total} message${opts.total === 1 ? "" : "s"}${opts.pages > 1 ? `, page ${opts.page} of ${opts.pages}` : ""}</p>
${
  opts.rows.length === 0
    ? html`<p class="empty">No messages match. Send one from the API or the Send page.</p>`
    : html`<table class="stack" data-live><thead><tr><th scope="col">Message</th><th scope="col">Created (UTC)</th><th scope="col">To</th><th scope="col">Channel</th><th scope="col">Device</th><th scope="col">Text</th><th scope="col">Status</th></tr></thead><tbody>
${opts.rows.map(
  (n) => html`<tr>
  <td data-label="Message"><a href="/dashboard/messages/${n.id}">#${n.id}</a></td>
  <td data-label="Created">${when(n.createdAt)}</td>
  <td data-label="To">${n.encrypted ? cipher(n.recipient) : n.recipient}</td>
  <td data-label="Channel">${n.deliveryType}</td>
  <td data-label="Device">${n.deviceId === null ? "" : (deviceName.get(n.deviceId) ?? `#${n.deviceId}`)}</td>
  <td data-label="Text">${n.encrypted ? cipher(n.message) : n.message.length > 80 ? `${n.message.slice(0, 79)}…` : n.message}</td>
  <td data-label="Status">${badge(n)}</td>
</tr>`,
)}
</tbody></table>`
}
${pager(opts.page, opts.pages, link)}`;
}

export function messageDetail(opts: {
  n: NotificationRecord;
  device: string | null;
  template: string | null;
  /** The API key that sent it (its name), or null for the dashboard's own sends. */
  keyName: string | null;
  logs: LogRecord[];
  cancellable: boolean;
  csrf: string;
}) {
  const { n } = opts;
  const vars = n.templateVars;
  const field = (label: string, value: Html | string | number | null) =>
    value === null || value === "" ? "" : html`<tr><th scope="row">${label}</th><td>${value}</td></tr>`;
  return html`<section class="card" data-live>
  <table><tbody>
  ${field("Status", badge(n))}
  ${field("Channel", `${n.deliveryType} (${n.route})`)}
  ${field("Encrypted", n.encrypted ? "Yes: the number and the text below are ciphertext, which only the paired phone decrypts" : null)}
  ${field("To", n.recipientName ? `${n.recipientName} <${n.recipient}>` : n.recipient)}
  ${field("Device", opts.device)}
  ${field("Sent by key", n.apiKeyId === null ? null : `${opts.keyName ?? "a deleted key"} (#${n.apiKeyId})`)}
  ${field("Agent session", n.agentSession)}
  ${field("Sender's reason", n.approvalReason)}
  ${field("Approved", n.approvedAt ? `${when(n.approvedAt)} UTC by ${n.decidedBy ?? "?"}` : null)}
  ${field("Rejected", n.rejectedAt ? `${when(n.rejectedAt)} UTC by ${n.decidedBy ?? "?"}` : null)}
  ${field("Template", opts.template)}
  ${vars ? field("Variables", html`${Object.entries(vars).map(([k, v]) => html`<code>${k}</code> = ${v}<br>`)}`) : ""}
  ${field("Text", html`<span class="pre">${n.message}</span>`)}
  ${field("Segments", n.encrypted ? "unknown (encrypted; counted as 1)" : n.segments)}
  ${field("Cost", n.cost)}
  ${field("Scheduled", n.scheduleAt ? `${when(n.scheduleAt)} UTC${n.timezone ? ` (${n.timezone})` : ""}` : null)}
  ${field("Created", `${when(n.createdAt)} UTC`)}
  ${field("Sent", n.sentAt ? `${when(n.sentAt)} UTC` : null)}
  ${field("Delivered", n.deliveredAt ? `${when(n.deliveredAt)} UTC` : null)}
  ${field("Failed", n.failedAt ? `${when(n.failedAt)} UTC` : null)}
  ${field("Error", n.errorCode ? `${n.errorCode}${n.errorReason ? `: ${n.errorReason}` : ""}` : null)}
  ${field("Provider's id", n.externalId)}
  </tbody></table>
  ${
    opts.cancellable
      ? html`<form method="post" action="/dashboard/messages/${n.id}/cancel"><input type="hidden" name="_csrf" value="${opts.csrf}"><button class="danger" type="submit">Cancel this message</button></form>`
      : ""
  }
</section>
<section aria-labelledby="attempts"><h2 id="attempts">Attempts and reports</h2>
${
  opts.logs.length === 0
    ? html`<p class="empty">Nothing recorded yet.</p>`
    : html`<table class="stack"><thead><tr><th scope="col">When (UTC)</th><th scope="col">What</th><th scope="col">Status</th><th scope="col">Reason</th></tr></thead><tbody>
${opts.logs.map((l) => html`<tr><td data-label="When">${when(l.at)}</td><td data-label="What">${l.event}</td><td data-label="Status">${l.status ?? ""}</td><td data-label="Reason">${l.errorCode ? `${l.errorCode}: ` : ""}${l.detail ?? ""}</td></tr>`)}
</tbody></table>`
}
</section>
<p><a href="/dashboard/messages">Back to messages</a></p>`;
}
