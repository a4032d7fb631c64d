// The account: its plan with the limits, this month's SMS against the plan's monthly allowance, its
// workspaces, and its members; an owner can add a member (email, password, role). A link to the
// viewer's two-factor sign-in.
import type { PlanRow, WorkspaceRow } from "../../modules/accounts/model";
import type { PublicUser } from "../../modules/users/service";
import { html, type Html } from "../html";
import { errorBox } from "../layout";

const day = (t: number | string) => new Date(t).toISOString().slice(0, 10);

export interface MemberForm {
  email: string;
  role: "owner" | "member";
}

export type MemberErrors = { email?: string; password?: string; role?: string; other?: string };

/** A field's error above the field, tied to it for screen readers. */
const fieldError = (id: string, message: string | undefined) =>
  message ? html`<p class="error" role="alert" id="${id}-error">${message}</p>` : "";
const describedBy = (id: string, message: string | undefined, hint?: string) => {
  const ids = [hint, message ? `${id}-error` : undefined].filter(Boolean).join(" ");
  return html`${ids ? html` aria-describedby="${ids}"` : ""}${message ? html` aria-invalid="true"` : ""}`;
};

function memberForm(csrf: string, form: MemberForm, e: MemberErrors, passwordMin: number): Html {
  return html`<section class="card after-table" aria-labelledby="add-title">
  <h2 id="add-title">Add a member</h2>
  ${errorBox(e.other)}
  <form method="post" action="/dashboard/account/members">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div class="row">
      <div>
        <label for="m-email">Email</label>
        ${fieldError("m-email", e.email)}
        <input id="m-email" name="email" type="email" required autocomplete="off" value="${form.email}"${describedBy("m-email", e.email)}>
      </div>
      <div>
        <label for="m-password">Password</label>
        ${fieldError("m-password", e.password)}
        <input id="m-password" name="password" type="password" required minlength="${passwordMin}" autocomplete="new-password"${describedBy("m-password", e.password, "m-password-hint")}>
      </div>
      <div>
        <label for="m-role">Role</label>
        ${fieldError("m-role", e.role)}
        <select id="m-role" name="role"${describedBy("m-role", e.role)}>
          <option value="member"${form.role === "member" ? html` selected` : ""}>Member: uses the dashboard</option>
          <option value="owner"${form.role === "owner" ? html` selected` : ""}>Owner: also adds credits and members</option>
        </select>
      </div>
    </div>
    <p class="hint" id="m-password-hint">The password needs at least ${passwordMin} characters; give it to them yourself.</p>
    <p><button type="submit">Add member</button></p>
  </form>
</section>`;
}

export function accountBody(opts: {
  accountName: string;
  plan: PlanRow;
  smsUsed: number;
  workspaces: WorkspaceRow[];
  currentWorkspace: number;
  members: PublicUser[];
  me: number;
  owner: boolean;
  csrf: string;
  passwordMin: number;
  /** The viewer's own two-factor sign-in, and whether the account requires it. */
  twoFactor: { enabled: boolean; required: boolean };
  form?: MemberForm;
  errors?: MemberErrors;
}): Html {
  const { plan } = opts;
  const limit = plan.monthlySmsLimit;
  const usage =
    limit === null
      ? html`<p id="sms-usage"><strong>${opts.smsUsed}</strong> SMS this month; the plan has no monthly limit.</p>`
      : html`<p id="sms-usage"><strong>${opts.smsUsed}</strong> of ${limit} SMS this month${opts.smsUsed >= limit ? html` — <span class="error-text">all used; sending SMS resumes on the 1st (UTC)</span>` : ""}.</p>
  <meter min="0" max="${limit}" value="${Math.min(opts.smsUsed, limit)}" aria-labelledby="usage-title">${opts.smsUsed} of ${limit}</meter>`;
  return html`<section class="card" aria-labelledby="plan-title">
  <h2 id="plan-title">Plan: ${plan.name}</h2>
  <table><tbody>
    <tr><th scope="row">Account</th><td>${opts.accountName}</td></tr>
    <tr><th scope="row">API requests</th><td>${plan.requestsPerMinute} a minute, ${plan.requestsPerDay} a day</td></tr>
    <tr><th scope="row">SMS a month</th><td>${limit === null ? "no limit" : limit}</td></tr>
    <tr><th scope="row">Links in messages</th><td>${plan.allowUrls ? "allowed" : "not allowed"}</td></tr>
  </tbody></table>
  <h3 id="usage-title">Usage this month</h3>
  ${usage}
  <p class="hint">Counts the SMS every workspace of the account accepted since the 1st (UTC), failed and cancelled ones not included.</p>
</section>
<section class="card" aria-labelledby="tfa-title">
  <h2 id="tfa-title">Two-factor sign-in</h2>
  <p id="tfa-state">${opts.twoFactor.enabled ? "On for you" : "Off for you"}; ${opts.twoFactor.required ? "required" : "optional"} for the account's users.</p>
  <p><a href="/dashboard/account/2fa">${opts.twoFactor.enabled ? "Manage two-factor sign-in" : "Set up two-factor sign-in"}</a></p>
</section>
<section aria-labelledby="ws-title">
  <h2 id="ws-title">Workspaces</h2>
  <ul class="plain">${opts.workspaces.map((w) => html`<li>${w.name} <span class="hint">(#${w.id}, since ${day(w.createdAt)})</span>${w.id === opts.currentWorkspace ? html` <span class="badge active">this one</span>` : ""}</li>`)}</ul>
</section>
<section aria-labelledby="members-title">
  <h2 id="members-title">Members</h2>
  <table class="stack"><thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Added</th></tr></thead><tbody>
  ${opts.members.map(
    (m) => html`<tr>
    <td data-label="Email"><div>${m.email}${m.id === opts.me ? html` <span class="hint">(you)</span>` : ""}</div></td>
    <td data-label="Role">${m.role}</td>
    <td data-label="Added">${day(m.created_at)}</td>
  </tr>`,
  )}
  </tbody></table>
  ${opts.members.length === 1 && opts.owner ? html`<p class="empty">Only you so far — add the people who should share this account below.</p>` : ""}
</section>
${opts.owner ? memberForm(opts.csrf, opts.form ?? { email: "", role: "member" }, opts.errors ?? {}, opts.passwordMin) : html`<p class="hint">Only an owner of the account can add members.</p>`}`;
}
