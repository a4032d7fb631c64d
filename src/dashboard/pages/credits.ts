// Credits: the balance and what was used this month, the ledger page by page (debits, refunds,
// top-ups and adjustments with their notes), and, for the account's owners, the top-up form.
import type { LedgerRow } from "../../modules/credits/model";
import { pager, utcTime } from "../layout";
import { html, type Html } from "../html";

const when = (t: number) => `${utcTime(t)} UTC`;

const REASONS: Record<LedgerRow["reason"], string> = { topup: "top-up", debit: "debit", refund: "refund", adjustment: "adjustment" };

export interface TopUpForm {
  amount: string;
  note: string;
}

function topUpForm(csrf: string, form: TopUpForm, errors: { amount?: string; note?: string }): Html {
  return html`<section class="card" aria-labelledby="topup-title">
  <h2 id="topup-title">Top up</h2>
  <form method="post" action="/dashboard/credits">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div class="row">
      <div>
        <label for="c-amount">Credits to add</label>
        ${errors.amount ? html`<p class="error" role="alert" id="c-amount-error">${errors.amount}</p>` : ""}
        <input id="c-amount" name="amount" type="number" step="1" required value="${form.amount}" aria-describedby="c-amount-hint${errors.amount ? " c-amount-error" : ""}"${errors.amount ? html` aria-invalid="true"` : ""}>
      </div>
      <div>
        <label for="c-note">Note (optional)</label>
        ${errors.note ? html`<p class="error" role="alert">${errors.note}</p>` : ""}
        <input id="c-note" name="note" maxlength="200" value="${form.note}" placeholder="e.g. Invoice 2026-11">
      </div>
    </div>
    <p class="hint" id="c-amount-hint">A negative number corrects the balance down (never below zero).</p>
    <p><button type="submit">Add credits</button></p>
  </form>
</section>`;
}

export function creditsBody(opts: {
  balance: number;
  usedThisMonth: number;
  entries: LedgerRow[];
  page: number;
  pages: number;
  owner: boolean;
  csrf: string;
  form?: TopUpForm;
  errors?: { amount?: string; note?: string };
}): Html {
  const link = (p: number) => `/dashboard/credits?page=${p}`;
  return html`<section class="stats" aria-label="Credits">
  <div class="card stat">Balance<strong id="balance">${opts.balance}</strong></div>
  <div class="card stat">Used this month<strong>${opts.usedThisMonth}</strong></div>
</section>
${opts.owner ? topUpForm(opts.csrf, opts.form ?? { amount: "", note: "" }, opts.errors ?? {}) : html`<p class="hint">Only an owner of the account can add credits; ask one if the balance runs low.</p>`}
<section aria-labelledby="ledger-title">
  <h2 id="ledger-title">Ledger</h2>
  ${
    opts.entries.length === 0
      ? html`<p class="empty">No entries yet. ${opts.owner ? "Top up above" : "An owner tops up"} before sending through a cloud route, which takes a credit per segment; SMS from your own phones cost none.</p>`
      : html`<table class="stack"><thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Credits</th><th scope="col">Message</th><th scope="col">Note</th></tr></thead><tbody>
  ${opts.entries.map(
    (e) => html`<tr>
    <td data-label="When">${when(e.createdAt)}</td>
    <td data-label="What">${REASONS[e.reason]}</td>
    <td data-label="Credits" class="${e.delta < 0 ? "error-text" : ""}">${e.delta > 0 ? `+${e.delta}` : e.delta}</td>
    <td data-label="Message">${e.notificationId === null ? "" : html`<a href="/dashboard/messages/${e.notificationId}">#${e.notificationId}</a>`}</td>
    <td data-label="Note">${e.note ?? ""}</td>
  </tr>`,
  )}
  </tbody></table>`
  }
  ${pager(opts.page, opts.pages, link, ["Newer entries", "Older entries"])}
</section>`;
}
