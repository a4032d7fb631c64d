// Approvals: the messages sent by keys that need approval, each with its text, recipient, key,
// the sender's reason, when it was made and when it expires; approved or rejected one by one (a
// button per row) or together (the checked rows), with an optional reason for a rejection.
import { html } from "../html";
import { utcTime } from "../layout";

export interface AwaitingRow {
  id: number;
  recipient: string;
  recipientName: string | null;
  message: string;
  keyName: string | null;
  agentSession: string | null;
  reason: string | null;
  createdAt: number;
  expiresAt: number;
}

const when = (t: number) => `${utcTime(t)} UTC`;

export function approvalsBody(opts: { rows: AwaitingRow[]; total: number; csrf: string }) {
  const { rows, csrf } = opts;
  if (rows.length === 0) {
    return html`<section class="card"><p class="empty">Nothing awaits approval. Sends by keys marked "needs approval" (API keys page) appear here.</p></section>`;
  }
  return html`<section aria-labelledby="awaiting-title">
  <h2 id="awaiting-title">Awaiting approval (${opts.total})</h2>
  <p class="hint">Approved, a message goes out as any other (at its scheduled time, if that is still ahead); rejected, it fails and its credits are refunded. Unapproved ones fail when they expire.</p>
  <form method="post" action="/dashboard/approvals" id="approvals-form">
  <input type="hidden" name="_csrf" value="${csrf}">
  <table class="stack"><caption class="visually-hidden">Messages awaiting approval</caption><thead><tr>
    <th scope="col">Select</th><th scope="col">To</th><th scope="col">Text</th><th scope="col">Key</th><th scope="col">Reason</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Decide</th>
  </tr></thead><tbody>
  ${rows.map(
    (r) => html`<tr>
    <td data-label="Select"><input type="checkbox" name="ids" value="${r.id}" id="pick-${r.id}" aria-label="Select message #${r.id} to ${r.recipient}"></td>
    <td data-label="To"><a href="/dashboard/messages/${r.id}">${r.recipientName ? `${r.recipientName} <${r.recipient}>` : r.recipient}</a></td>
    <td data-label="Text"><span class="pre">${r.message}</span></td>
    <td data-label="Key">${r.keyName ?? "—"}${r.agentSession ? html`<br><span class="hint">session ${r.agentSession}</span>` : ""}</td>
    <td data-label="Reason">${r.reason ?? html`<span class="hint">none given</span>`}</td>
    <td data-label="Created">${when(r.createdAt)}</td>
    <td data-label="Expires">${when(r.expiresAt)}</td>
    <td data-label="Decide"><div class="actions">
      <button type="submit" name="one" value="approve:${r.id}" aria-label="Approve message #${r.id}">Approve</button>
      <button type="submit" class="danger" name="one" value="reject:${r.id}" aria-label="Reject message #${r.id}">Reject</button>
    </div></td>
  </tr>`,
  )}
  </tbody></table>
  <div class="row">
    <div><label for="reject-reason">Reason for a rejection (optional)</label><input id="reject-reason" name="reason" maxlength="500"></div>
  </div>
  <div class="actions">
    <button type="submit" name="all" value="approve">Approve selected</button>
    <button type="submit" class="danger" name="all" value="reject">Reject selected</button>
  </div>
  </form>
</section>`;
}
