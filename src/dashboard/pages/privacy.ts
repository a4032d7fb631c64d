// The erasure page: what erasing one person's data removes, asked once more before anything goes.
import { html, type Html } from "../html";

export function eraseConfirmBody(opts: { phone: string; back: string; csrf: string }): Html {
  return html`<section class="card" aria-labelledby="erase-title">
  <h2 id="erase-title">Erase all data about ${opts.phone}?</h2>
  <p>This removes everything this workspace holds about ${opts.phone}: the contact, every message to and from the number with its history,
  its conversations, its opt-out history and the webhook events that carried it. Statistics keep their counts, without the number.
  It cannot be undone.</p>
  <p>If the number opted out, it stays opted out: the opt-out is kept under a code made from the number, not the number itself.</p>
  <p><a href="/dashboard/privacy/export?phone=${encodeURIComponent(opts.phone)}">Download this person's data first</a> (JSON), if they asked for a copy.</p>
  <form method="post" action="/dashboard/privacy/erase" class="actions">
    <input type="hidden" name="_csrf" value="${opts.csrf}">
    <input type="hidden" name="phone" value="${opts.phone}">
    <input type="hidden" name="back" value="${opts.back}">
    <button class="danger" type="submit">Erase all data about ${opts.phone}</button>
    <a class="button secondary" href="${opts.back}">Keep it</a>
  </form>
</section>`;
}
