// Devices: the list (kind, status, presence, health from the phone's reports, last seen, blocked
// code and reason), one device with its settings and stats, pairing a phone (URL, token, QR code,
// the app's steps, a live "waiting… paired") and connecting a chat-app number.
import { SEND_LIMIT_MAX } from "../../modules/devices/model";
import type { DeviceService } from "../../modules/devices/service";
import { html, trusted, type Html } from "../html";
import { errorBox, utcTime } from "../layout";
import { PHONE_KIND } from "../../core/kinds";

type Presented = ReturnType<DeviceService["present"]>;
type Health = Awaited<ReturnType<DeviceService["health"]>>;

const when = (t: string | null) => (t ? `${utcTime(t)} UTC` : "never");

function presence(d: Presented): Html {
  if (d.kind !== PHONE_KIND) return html`<span class="hint">not applicable</span>`;
  return html`<span class="badge ${d.online ? "online" : "offline"}">${d.online ? "online" : "offline"}</span>${d.notification_channel === "polling" ? html` <span class="hint">(polls only)</span>` : ""}`;
}

function reported(h: Health | null): Html | string {
  const r = h?.reported;
  if (!r) return "";
  const battery = r.battery_level === null ? null : `battery ${r.battery_level} %${r.charging || r.plugged ? " (charging)" : ""}`;
  const net =
    r.connected === null ? null : r.connected ? `online${r.cellular && r.cellular !== "none" ? ` (${r.cellular})` : ""}` : "no connection";
  return [battery, net].filter(Boolean).join(", ");
}

export function devicesBody(opts: { devices: { d: Presented; h: Health | null }[] }): Html {
  return html`<p class="actions"><a class="button" href="/dashboard/devices/pair">Pair a phone</a> <a class="button secondary" href="/dashboard/devices/chatapp">Connect a chat-app number</a></p>
${
  opts.devices.length === 0
    ? html`<p class="notice">No phone yet — pair one to send SMS through it, or connect a chat-app number.</p>`
    : html`<table class="stack"><thead><tr><th scope="col">Device</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Presence</th><th scope="col">Health</th><th scope="col">Last seen</th><th scope="col">Blocked</th></tr></thead><tbody>
${opts.devices.map(
  ({ d, h }) => html`<tr>
  <td data-label="Device"><a href="/dashboard/devices/${d.device_id}">${d.name}</a>${d.phone_number ? html`<br><span class="hint">${d.phone_number}</span>` : ""}</td>
  <td data-label="Kind">${d.kind}</td>
  <td data-label="Status"><span class="badge ${d.status}">${d.status}</span></td>
  <td data-label="Presence">${presence(d)}</td>
  <td data-label="Health">${h ? `${h.health_score} / 100` : ""}${reported(h) ? html`<br><span class="hint">${reported(h)}</span>` : ""}</td>
  <td data-label="Last seen">${when(d.last_sync)}</td>
  <td data-label="Blocked">${d.blocked ? `${d.blocked_code}: ${d.blocked_reason ?? ""}` : "no"}</td>
</tr>`,
)}
</tbody></table>`
}`;
}

export function deviceBody(opts: {
  d: Presented;
  h: Health;
  stats: { sent: number; failed: number; pending: number };
  csrf: string;
  form?: { name: string; limit: string; min: string; max: string };
  error?: string | null;
}): Html {
  const { d, h, csrf } = opts;
  const f = opts.form ?? {
    name: d.name,
    limit: String(d.send_limit_per_minute),
    min: String(d.send_interval_min),
    max: String(d.send_interval_max),
  };
  return html`${d.channel_hint ? html`<p class="error" role="alert">${d.channel_hint}</p>` : ""}
<section class="stats" aria-label="This device">
  <div class="card stat">Health<strong>${h.health_score} / 100</strong></div>
  <div class="card stat">Sent<strong>${opts.stats.sent}</strong></div>
  <div class="card stat">Failed<strong>${opts.stats.failed}</strong></div>
  <div class="card stat">Pending<strong>${opts.stats.pending}</strong></div>
</section>
<section class="card" aria-labelledby="about">
  <h2 id="about">About</h2>
  <table><tbody>
    <tr><th scope="row">Kind</th><td>${d.kind}</td></tr>
    <tr><th scope="row">Status</th><td><span class="badge ${d.status}">${d.status}</span></td></tr>
    <tr><th scope="row">Presence</th><td>${presence(d)}</td></tr>
    <tr><th scope="row">Last seen</th><td>${when(d.last_sync)}</td></tr>
    ${reported(h) ? html`<tr><th scope="row">The phone reports</th><td>${reported(h)}</td></tr>` : ""}
    ${d.sim_cards.length ? html`<tr><th scope="row">SIM cards</th><td>${d.sim_cards.map((c) => html`SIM ${c.sim_number}: ${c.carrier_name ?? ""} ${c.phone_number ?? ""}<br>`)}</td></tr>` : ""}
    ${d.blocked ? html`<tr><th scope="row">Blocked</th><td>${d.blocked_code}: ${d.blocked_reason ?? ""}</td></tr>` : ""}
  </tbody></table>
  <form method="post" action="/dashboard/devices/${d.device_id}/status">
    <input type="hidden" name="_csrf" value="${csrf}">
    <input type="hidden" name="status" value="${d.status === "active" ? "inactive" : "active"}">
    <button class="${d.status === "active" ? "danger" : "secondary"}" type="submit">${d.status === "active" ? "Deactivate" : "Activate"}</button>
  </form>
</section>
<section class="card" aria-labelledby="settings">
  <h2 id="settings">Name and pacing</h2>
  ${errorBox(opts.error)}
  <form method="post" action="/dashboard/devices/${d.device_id}">
    <input type="hidden" name="_csrf" value="${csrf}">
    <label for="d-name">Name</label><input id="d-name" name="name" required maxlength="128" value="${f.name}">
    <div class="row">
      <div><label for="d-limit">Messages per minute</label><input id="d-limit" name="send_limit_per_minute" type="number" min="1" max="${SEND_LIMIT_MAX}" required value="${f.limit}"></div>
      ${
        d.kind === PHONE_KIND
          ? html`<div><label for="d-min">Pause between SMS from (seconds)</label><input id="d-min" name="send_interval_min" type="number" min="0" max="3600" value="${f.min}"></div>
      <div><label for="d-max">to (seconds)</label><input id="d-max" name="send_interval_max" type="number" min="0" max="3600" value="${f.max}"></div>`
          : ""
      }
    </div>
    <p><button type="submit">Save</button></p>
  </form>
</section>
<p><a href="/dashboard/messages?device=${d.device_id}">This device's messages</a> · <a href="/dashboard/devices">All devices</a></p>`;
}

export function pairBody(opts: { serverUrl: string; token: string; qrSvg: string; known: number }): Html {
  return html`<section class="card" aria-labelledby="steps">
  <h2 id="steps">In the SMS Gateway for Android app</h2>
  <ol>
    <li>Open Settings → Cloud Server.</li>
    <li>API URL: <code id="pair-url">${opts.serverUrl}</code> <button type="button" class="secondary" data-copy="pair-url">Copy URL</button> <span id="pair-url-status" role="status"></span></li>
    <li>Private Token: <code id="pair-token">${opts.token}</code> <button type="button" class="secondary" data-copy="pair-token">Copy token</button> <span id="pair-token-status" role="status"></span></li>
    <li>Notification channel: <strong>SSE Only</strong>.</li>
    <li>Back on the Home tab turn on "Cloud server", then restart the app.</li>
  </ol>
  <p>Or scan this code with the app:</p>
  <figure class="qr" role="img" aria-label="QR code of the API URL and token">${trusted(opts.qrSvg)}</figure>
  ${opts.serverUrl.startsWith("http://") ? html`<p class="error">This address is http://: release builds of the app refuse it. Set PIGEON_PUBLIC_URL to the https address phones reach (see the README's pairing guide).</p>` : ""}
</section>
<section class="card" aria-labelledby="wait-title">
  <h2 id="wait-title">Your phone</h2>
  <div id="pair-status" role="status" aria-live="polite" hx-get="/dashboard/devices/pair/status?known=${opts.known}" hx-trigger="every 2s" hx-swap="outerHTML">
    <p>Waiting for your phone…</p>
  </div>
</section>`;
}

/** The live part of the pair page; once a phone paired, it stops the polling (htmx stops on 286). */
export function pairStatus(paired: { device_id: number; name: string } | null, known: number): Html {
  if (!paired) {
    return html`<div id="pair-status" role="status" aria-live="polite" hx-get="/dashboard/devices/pair/status?known=${known}" hx-trigger="every 2s" hx-swap="outerHTML"><p>Waiting for your phone…</p></div>`;
  }
  return html`<div id="pair-status" role="status" aria-live="polite"><p class="notice">Paired: <a href="/dashboard/devices/${paired.device_id}">${paired.name}</a></p></div>`;
}

export function chatappBody(opts: {
  csrf: string;
  error?: string | null;
  result?: { accounts: number; devices: string[]; templates: number } | null;
}): Html {
  return html`${opts.result ? html`<p class="notice" role="status">Connected ${opts.result.accounts} business account${opts.result.accounts === 1 ? "" : "s"}: ${opts.result.devices.join(", ")}; ${opts.result.templates} templates synced.</p>` : ""}
<form class="card" method="post" action="/dashboard/devices/chatapp">
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <label for="c-token">Access token</label>
  <input id="c-token" name="access_token" required autocomplete="off" aria-describedby="c-token-hint">
  <p class="hint" id="c-token-hint">A system-user or business access token from the platform's business settings.</p>
  <label for="c-waba">Business account id (optional)</label>
  <input id="c-waba" name="business_account_id" autocomplete="off">
  <p><button type="submit">Connect</button></p>
</form>`;
}
