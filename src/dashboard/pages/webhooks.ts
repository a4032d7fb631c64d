// Webhooks: the subscriptions (URL, events, status, failures), subscribing with a checkbox per
// event type, the signing secret shown once, and one subscription with its delivery log (every
// attempt's time, status code and error), a test event, disable or re-enable, and delete.
import type { WebhookService } from "../../modules/webhooks/service";
import { html, type Html } from "../html";
import { errorBox, pager, utcTime } from "../layout";

export type WebhookView = Awaited<ReturnType<WebhookService["get"]>>;
export type DeliveryView = Awaited<ReturnType<WebhookService["deliveries"]>>["deliveries"][number];

export interface CreateForm {
  url: string;
  description: string;
  events: string[];
}

const when = (t: string | null) => (t ? `${utcTime(t, true)} UTC` : "");

/** The status as a badge, with what it means for a failing or disabled one. */
function statusOf(w: WebhookView): Html {
  const note =
    w.status === "failing"
      ? html`<br><span class="error-text">Deliveries failed for a day${w.failing_since ? ` (since ${when(w.failing_since)})` : ""}; nothing is sent until you re-enable it.</span>`
      : w.status === "disabled"
        ? html`<br><span class="hint">Disabled: events wait until you re-enable it.</span>`
        : w.consecutive_failures > 0
          ? html`<br><span class="error-text">${w.consecutive_failures} failed attempt${w.consecutive_failures === 1 ? "" : "s"} in a row</span>`
          : "";
  return html`<span class="badge ${w.status}">${w.status}</span>${note}`;
}

const eventsOf = (events: string[]) => (events.includes("*") ? "all events" : events.join(", "));

export function webhooksBody(opts: {
  webhooks: WebhookView[];
  eventTypes: readonly string[];
  csrf: string;
  form?: CreateForm;
  errors?: { url?: string; events?: string; other?: string };
}): Html {
  const f = opts.form ?? { url: "", description: "", events: [] };
  const e = opts.errors ?? {};
  const box = (value: string, label: string) =>
    html`<label class="check"><input type="checkbox" name="event:${value}" value="1"${f.events.includes(value) ? html` checked` : ""}> ${label}</label>`;
  return html`<section class="card" aria-labelledby="create-title">
  <h2 id="create-title">Subscribe to events</h2>
  ${errorBox(e.other)}
  <form method="post" action="/dashboard/webhooks">
    <input type="hidden" name="_csrf" value="${opts.csrf}">
    <label for="w-url">URL that receives the events</label>
    ${e.url ? html`<p class="error" role="alert" id="w-url-error">${e.url}</p>` : ""}
    <input id="w-url" name="url" type="url" required maxlength="2048" placeholder="https://example.com/hooks/pigeon" value="${f.url}"${e.url ? html` aria-invalid="true" aria-describedby="w-url-error"` : ""}>
    <label for="w-desc">Description (optional)</label>
    <input id="w-desc" name="description" maxlength="500" value="${f.description}">
    <fieldset${e.events ? html` aria-describedby="w-events-error"` : ""}>
      <legend>Events</legend>
      ${e.events ? html`<p class="error" role="alert" id="w-events-error">${e.events}</p>` : ""}
      <div class="checks">${opts.eventTypes.map((t) => box(t, t))}</div>
      ${box("*", "All events, also ones added later")}
    </fieldset>
    <p><button type="submit">Subscribe</button></p>
  </form>
</section>
<section aria-labelledby="list-title">
  <h2 id="list-title">Subscriptions</h2>
  ${
    opts.webhooks.length === 0
      ? html`<p class="empty">No webhook yet — subscribe a URL above to be told when messages are delivered, fail or arrive.</p>`
      : html`<table class="stack"><thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead><tbody>
  ${opts.webhooks.map(
    (w) => html`<tr>
    <td data-label="URL"><div><a href="/dashboard/webhooks/${w.webhook_id}">${w.url}</a>${w.description ? html`<br><span class="hint">${w.description}</span>` : ""}</div></td>
    <td data-label="Events">${eventsOf(w.events)}</td>
    <td data-label="Status"><div>${statusOf(w)}</div></td>
    <td data-label="Created">${when(w.created_at)}</td>
  </tr>`,
  )}
  </tbody></table>`
  }
</section>`;
}

/** A small form that posts one action of a subscription. */
function action(id: number, path: string, label: string, style: string, csrf: string, hidden: Record<string, string> = {}): Html {
  return html`<form class="inline" method="post" action="/dashboard/webhooks/${id}/${path}">
<input type="hidden" name="_csrf" value="${csrf}">${Object.entries(hidden).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<button class="${style}" type="submit">${label}</button></form>`;
}

/** The outcome of a delivery in words: its last status code or error. */
function outcome(d: DeliveryView): Html {
  const last = d.attempts.at(-1);
  if (!last) return html`<span class="hint">not tried yet</span>`;
  return html`${last.status_code === null ? "no answer" : html`<strong>HTTP ${last.status_code}</strong>`}${last.error ? html`<br><span class="error-text">${last.error}</span>` : ""}`;
}

export function webhookBody(opts: { w: WebhookView; deliveries: DeliveryView[]; page: number; pages: number; csrf: string }): Html {
  const { w, csrf } = opts;
  const paused = w.status !== "active";
  const link = (p: number) => `/dashboard/webhooks/${w.webhook_id}?page=${p}`;
  return html`<section class="card" aria-labelledby="about">
  <h2 id="about">Subscription</h2>
  <table><tbody>
    <tr><th scope="row">URL</th><td><code>${w.url}</code></td></tr>
    ${w.description ? html`<tr><th scope="row">Description</th><td>${w.description}</td></tr>` : ""}
    <tr><th scope="row">Events</th><td>${eventsOf(w.events)}</td></tr>
    <tr><th scope="row">Status</th><td>${statusOf(w)}</td></tr>
    <tr><th scope="row">Signing secret</th><td><code>${"secret_hint" in w ? w.secret_hint : ""}</code> <span class="hint">(shown in full only when it was created)</span></td></tr>
    <tr><th scope="row">Created</th><td>${when(w.created_at)}</td></tr>
  </tbody></table>
  <div class="actions">
    ${action(w.webhook_id, "test", "Send a test event", "", csrf)}
    ${paused ? action(w.webhook_id, "status", "Re-enable", "secondary", csrf, { status: "active" }) : action(w.webhook_id, "status", "Disable", "secondary", csrf, { status: "disabled" })}
    ${action(w.webhook_id, "delete", "Delete this webhook", "danger", csrf)}
  </div>
</section>
<section aria-labelledby="log-title">
  <h2 id="log-title">Deliveries</h2>
  ${
    opts.deliveries.length === 0
      ? html`<p class="empty">Nothing delivered yet — send a test event to see how the receiver answers.</p>`
      : html`<table class="stack log"><thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Answer</th><th scope="col">Attempts</th></tr></thead><tbody>
  ${opts.deliveries.map(
    (d) => html`<tr>
    <td data-label="Created">${when(d.created_at)}</td>
    <td data-label="Event"><div>${d.event_type}<br><span class="hint">${d.event_id}</span></div></td>
    <td data-label="Status"><div><span class="badge ${d.status}">${d.status}</span>${d.next_attempt_at ? html`<br><span class="hint">next try ${when(d.next_attempt_at)}</span>` : ""}</div></td>
    <td data-label="Answer"><div>${outcome(d)}</div></td>
    <td data-label="Attempts"><div>${d.attempts.length}${
      d.attempts.length > 1
        ? html`<details><summary>Every attempt</summary><ol>${d.attempts.map((a) => html`<li>${when(a.at)}: ${a.status_code === null ? "no answer" : `HTTP ${a.status_code}`}, ${a.latency_ms} ms${a.error ? ` — ${a.error}` : ""}</li>`)}</ol></details>`
        : ""
    }</div></td>
  </tr>`,
  )}
  </tbody></table>`
  }
  ${pager(opts.page, opts.pages, link, ["Newer deliveries", "Older deliveries"])}
</section>
<p><a href="/dashboard/webhooks">All webhooks</a></p>`;
}
