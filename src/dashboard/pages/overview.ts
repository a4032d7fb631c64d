// Overview: the last 30 days as a stacked bar chart drawn on the server (SVG, no script), the
// credit balance, devices online and the latest failures.
import { utcTime } from "../layout";
import { html, trusted, escapeHtml } from "../html";
import type { DayCounts, Failure } from "../repository";

const SERIES = [
  { key: "delivered", label: "Delivered", colour: "#1b6e36" },
  { key: "sent", label: "Sent", colour: "#0b5cad" },
  { key: "pending", label: "Pending", colour: "#b07500" },
  { key: "failed", label: "Failed", colour: "#a4161a" },
] as const;

/** A stacked bar per day; the numbers are also in the table below it for screen readers. */
export function chart(days: DayCounts[]): string {
  const w = 660;
  const h = 180;
  const pad = 24;
  const max = Math.max(1, ...days.map((d) => d.sent + d.delivered + d.failed + d.pending));
  const bar = (w - pad) / days.length;
  let bars = "";
  days.forEach((d, i) => {
    let y = h - pad;
    for (const s of SERIES) {
      const v = d[s.key];
      if (!v) continue;
      const height = ((h - 2 * pad) * v) / max;
      y -= height;
      bars += `<rect x="${(pad + i * bar + 1).toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(1, bar - 2).toFixed(1)}" height="${height.toFixed(1)}" fill="${s.colour}"><title>${escapeHtml(`${d.day}: ${v} ${s.label.toLowerCase()}`)}</title></rect>`;
    }
  });
  const axis = `<line x1="${pad}" y1="${h - pad}" x2="${w}" y2="${h - pad}" stroke="#4e5a6b"/><text x="${pad}" y="${h - 6}" font-size="11" fill="#4e5a6b">${days[0]?.day ?? ""}</text><text x="${w}" y="${h - 6}" font-size="11" fill="#4e5a6b" text-anchor="end">${days.at(-1)?.day ?? ""}</text><text x="0" y="${pad - 8}" font-size="11" fill="#4e5a6b">${max}</text>`;
  return `<svg role="img" aria-labelledby="chart-title" viewBox="0 0 ${w} ${h}" width="100%" preserveAspectRatio="xMidYMid meet"><title id="chart-title">Messages per day, last ${days.length} days</title>${axis}${bars}</svg>`;
}

export function overviewBody(opts: {
  days: DayCounts[];
  balance: number;
  devices: { total: number; online: number };
  failures: Failure[];
}) {
  const total = (k: (typeof SERIES)[number]["key"]) => opts.days.reduce((sum, d) => sum + d[k], 0);
  return html`<section class="stats" aria-label="Totals, last 30 days">
  ${SERIES.map((s) => html`<div class="card stat">${s.label}<strong>${total(s.key)}</strong></div>`)}
  <div class="card stat">Credit balance<strong>${opts.balance}</strong></div>
  <div class="card stat">Devices online<strong>${opts.devices.online} / ${opts.devices.total}</strong></div>
</section>
${opts.devices.total === 0 ? html`<p class="notice">No device yet — pair a phone or connect a number to start sending.</p>` : ""}
<section class="card" aria-labelledby="per-day">
  <h2 id="per-day">Messages per day</h2>
  ${trusted(chart(opts.days))}
  <p class="hint">${SERIES.map((s) => html`<span class="badge" data-series="${s.key}">${s.label}</span> `)}</p>
  <details><summary>The numbers</summary>
  <table class="stack"><thead><tr><th scope="col">Day (UTC)</th>${SERIES.map((s) => html`<th scope="col">${s.label}</th>`)}</tr></thead>
  <tbody>${opts.days.map((d) => html`<tr><td data-label="Day">${d.day}</td>${SERIES.map((s) => html`<td data-label="${s.label}">${d[s.key]}</td>`)}</tr>`)}</tbody></table>
  </details>
</section>
<section class="card" aria-labelledby="failures">
  <h2 id="failures">Recent failures</h2>
  ${
    opts.failures.length === 0
      ? html`<p class="empty">No failed messages.</p>`
      : html`<table class="stack"><thead><tr><th scope="col">Message</th><th scope="col">To</th><th scope="col">Channel</th><th scope="col">Reason</th><th scope="col">When</th></tr></thead><tbody>
    ${opts.failures.map((f) => html`<tr><td data-label="Message">#${f.id}</td><td data-label="To">${f.recipient}</td><td data-label="Channel">${f.route}</td><td data-label="Reason">${f.errorCode ?? ""}${f.errorReason ? html`: ${f.errorReason}` : ""}</td><td data-label="When">${utcTime(f.failedAt)}</td></tr>`)}
    </tbody></table>`
  }
</section>`;
}
