// Sender pools: each pool with its strategy, default and geomatch, its members (device, SIM,
// number), their caps and what they used today and this month as meters, paused members with a
// Resume button (active ones with Pause); the form for a new pool, a box per phone, SIM or cloud
// number that can be a member; and the delete confirmation.
import type { PoolService } from "../../modules/pools/service";
import { html, type Html } from "../html";
import { errorBox, utcTime } from "../layout";
import { type DeviceKind, ROUTE_DESCRIPTION } from "../../core/kinds";

export type PoolView = Awaited<ReturnType<PoolService["get"]>>;
export type PoolUsage = Awaited<ReturnType<PoolService["usage"]>>;
type MemberView = PoolView["members"][number];
type UsageOf = PoolUsage["members"][number];

export const STRATEGY_TEXT: Record<string, string> = {
  sticky: "Sticky: a recipient keeps the member that last texted them, or that they wrote to",
  round_robin: "Round robin: each member in turn",
  least_loaded: "Least loaded: the member with the fewest messages waiting",
};

/** What a member sends through, in words: its device and SIM. */
export const memberLabel = (m: Pick<MemberView, "device_name" | "device_id" | "sim_number">) =>
  `${m.device_name ?? `Device ${m.device_id}`}${m.sim_number ? `, SIM ${m.sim_number}` : ""}`;

const when = (t: string) => `${utcTime(t)} UTC`;

/** A phone, one SIM of it, or a cloud number that the form offers as a member. */
export interface Candidate {
  /** The form's name for it: `<device id>` or `<device id>-sim<n>`. */
  key: string;
  deviceId: number;
  sim: number | null;
  label: string;
  phone: boolean;
  /** A cloud number's own number. */
  number: string | null;
}

export interface MemberForm {
  chosen: boolean;
  number: string;
  daily: string;
  monthly: string;
  recipients: string;
  segments: boolean;
}

export interface PoolForm {
  name: string;
  strategy: string;
  geomatch: boolean;
  isDefault: boolean;
  members: Record<string, MemberForm>;
}

export const emptyMember = (): MemberForm => ({ chosen: false, number: "", daily: "", monthly: "", recipients: "", segments: false });
export const emptyPoolForm = (): PoolForm => ({ name: "", strategy: "sticky", geomatch: false, isDefault: false, members: {} });

/** The error of one field, tied to its input by id. */
const fieldError = (id: string, message: string | undefined) =>
  message ? html`<p class="error" id="${id}-error" role="alert">${message}</p>` : "";
const describedBy = (id: string, hint: string | null, message: string | undefined) => {
  const ids = [hint, message ? `${id}-error` : null].filter(Boolean).join(" ");
  return html`${ids ? html` aria-describedby="${ids}"` : ""}${message ? html` aria-invalid="true"` : ""}`;
};

/** Used against a cap: a meter with its numbers when there is a cap, else the count alone. */
function usageCell(label: string, used: number, limit: number | null, unit: string, extra = ""): Html {
  const text = `${used}${limit === null ? "" : ` of ${limit}`} ${unit}${extra}`;
  if (limit === null) return html`<span>${text}<br><span class="hint">no cap</span></span>`;
  const full = used >= limit;
  return html`<span class="usage"><span${full ? html` class="error-text"` : ""}>${text}${full ? " — at the cap" : ""}</span>
<meter min="0" max="${limit}" low="${Math.ceil(limit * 0.8)}" high="${Math.ceil(limit * 0.9)}" optimum="0" value="${Math.min(used, limit)}" aria-label="${label}: ${used} of ${limit} ${unit}">${used} of ${limit}</meter></span>`;
}

/** Why a member sends or not: removed, paused by the user, or paused after carrier failures. */
function statusOf(m: MemberView, threshold: number, now: number): Html {
  const failing = m.paused_until !== null && Date.parse(m.paused_until) > now;
  const notes: Html[] = [];
  if (m.device_name === null) notes.push(html`<span class="error-text">Its device was removed.</span>`);
  if (m.paused) notes.push(html`<span class="hint">Paused by you.</span>`);
  if (failing)
    notes.push(
      html`<span class="error-text">Paused after ${threshold} carrier failure${threshold === 1 ? "" : "s"} in a row, until ${when(m.paused_until!)}.</span>`,
    );
  else if (m.consecutive_failures > 0)
    notes.push(
      html`<span class="hint">${m.consecutive_failures} carrier failure${m.consecutive_failures === 1 ? "" : "s"} in a row.</span>`,
    );
  const badge = m.paused || failing ? html`<span class="badge paused">paused</span>` : html`<span class="badge active">active</span>`;
  return html`<span>${badge}${notes.map((n) => html`<br>${n}`)}</span>`;
}

/** Whether Resume applies: paused by the user, or by failures with the back-off still running. */
export const isPaused = (m: MemberView, now: number) => m.paused || (m.paused_until !== null && Date.parse(m.paused_until) > now);

function memberAction(p: PoolView, m: MemberView, now: number, csrf: string): Html {
  const resume = isPaused(m, now);
  const verb = resume ? "resume" : "pause";
  return html`<form class="inline" method="post" action="/dashboard/pools/${p.pool_id}/members/${m.member_id}/${verb}">
<input type="hidden" name="_csrf" value="${csrf}"><button class="${resume ? "" : "secondary"}" type="submit" aria-label="${resume ? "Resume" : "Pause"} ${memberLabel(m)} in ${p.name}">${resume ? "Resume" : "Pause"}</button></form>`;
}

function poolCard(p: PoolView, usage: PoolUsage, now: number, csrf: string): Html {
  const used = new Map(usage.members.map((u) => [u.member_id, u]));
  const title = `pool-${p.pool_id}`;
  const row = (m: MemberView) => {
    const u: UsageOf | undefined = used.get(m.member_id);
    const name = memberLabel(m);
    const unit = m.count === "segments" ? "segments" : "messages";
    const of = (period: { messages: number; segments: number }) => (m.count === "segments" ? period.segments : period.messages);
    const sent = (period: { messages: number }) => (m.count === "segments" ? ` (${period.messages} messages)` : "");
    return html`<tr>
  <td data-label="Member"><span>${name}${m.kind ? html`<br><span class="hint">${ROUTE_DESCRIPTION[m.kind as DeviceKind] ?? m.kind}</span>` : ""}</span></td>
  <td data-label="Number">${m.number ?? html`<span class="hint">not given</span>`}</td>
  <td data-label="Status">${statusOf(m, p.failure_threshold, now)}</td>
  <td data-label="Today">${u ? usageCell(`${name}, today`, of(u.today), u.today.limit, unit, sent(u.today)) : ""}</td>
  <td data-label="This month">${u ? usageCell(`${name}, this month`, of(u.this_month), u.this_month.limit, unit, sent(u.this_month)) : ""}</td>
  <td data-label="Recipients">${u ? usageCell(`${name}, recipients this month`, u.unique_recipients.count, u.unique_recipients.limit, "recipients") : ""}</td>
  <td data-label="Actions">${memberAction(p, m, now, csrf)}</td>
</tr>`;
  };
  return html`<section class="card pool" aria-labelledby="${title}">
  <h2 id="${title}">${p.name}</h2>
  <p class="actions">
    <span class="badge">${p.strategy.replace("_", " ")}</span>
    ${p.is_default ? html`<span class="badge active">default pool</span>` : ""}
    ${p.geomatch ? html`<span class="badge">geomatch</span>` : ""}
  </p>
  <p class="hint">${STRATEGY_TEXT[p.strategy] ?? p.strategy}.${p.is_default ? " Sends that name neither a pool nor a device go through this pool." : ""}${
    p.geomatch ? " Members whose number shares the recipient's country code (and area code for +1 numbers) come first." : ""
  } After ${p.failure_threshold} carrier failures in a row a member is paused for ${p.failure_backoff_seconds} seconds, doubling each time.</p>
  <p>Messaging Service SID (Twilio's <code>MessagingServiceSid</code> sends through this pool): <code id="${title}-sid">${p.messaging_service_sid}</code>
  <button type="button" class="secondary" data-copy="${title}-sid" aria-label="Copy the Messaging Service SID of ${p.name}">Copy</button> <span id="${title}-sid-status" role="status"></span></p>
  <table class="stack pool-members"><caption>Members of ${p.name}</caption><thead><tr><th scope="col">Member</th><th scope="col">Number</th><th scope="col">Status</th><th scope="col">Today</th><th scope="col">This month</th><th scope="col">Recipients this month</th><th scope="col">Actions</th></tr></thead><tbody>
  ${p.members.map(row)}
  </tbody></table>
  <p class="hint">Caps count from midnight UTC (next reset ${when(usage.day_resets_at)}) and from the 1st of the month (next ${when(usage.month_resets_at)}).</p>
  <p class="actions"><a class="button danger" href="/dashboard/pools/${p.pool_id}/delete" aria-label="Delete pool ${p.name}">Delete pool</a></p>
</section>`;
}

export function poolsBody(opts: { pools: { pool: PoolView; usage: PoolUsage }[]; now: number; csrf: string }): Html {
  return html`<p>A pool spreads SMS over several phones, SIMs and cloud numbers: a send names it with <code>pool_id</code>, or goes
through the default pool. Paused members and members at a cap are skipped.</p>
<p class="actions"><a class="button" href="/dashboard/pools/new">New pool</a></p>
${
  opts.pools.length === 0
    ? html`<p class="empty">No pool yet. Create one with <strong>New pool</strong> to send through more than one phone or number.</p>`
    : opts.pools.map(({ pool, usage }) => poolCard(pool, usage, opts.now, opts.csrf))
}`;
}

function candidateBox(c: Candidate, m: MemberForm, errors: Record<string, string>): Html {
  const id = `m-${c.key}`;
  const e = (field: string) => errors[`${c.key}.${field}`];
  const cap = (field: "daily" | "monthly" | "recipients", label: string) => html`<div>
      <label for="${id}-${field}">${label}</label>
      <input id="${id}-${field}" name="${field}:${c.key}" type="number" min="1" step="1" inputmode="numeric" value="${m[field]}"${describedBy(`${id}-${field}`, null, e(field))}>
      ${fieldError(`${id}-${field}`, e(field))}
    </div>`;
  return html`<fieldset class="candidate">
  <legend>${c.label}</legend>
  ${fieldError(id, e("member"))}
  <label class="check"><input type="checkbox" id="${id}" name="member:${c.key}" value="1"${m.chosen ? html` checked` : ""}${describedBy(id, null, e("member"))}> Add ${c.label} to the pool</label>
  ${
    c.phone
      ? html`<label for="${id}-number">Its number (optional)</label>
  <input id="${id}-number" name="number:${c.key}" type="tel" maxlength="32" autocomplete="off" placeholder="+14155550100" value="${m.number}"${describedBy(`${id}-number`, `${id}-number-hint`, e("number"))}>
  <p class="hint" id="${id}-number-hint">The app does not tell a SIM's number: give it (E.164) for geomatch.</p>
  ${fieldError(`${id}-number`, e("number"))}`
      : html`<p class="hint">Sends from ${c.number ?? "its provider's number"}.</p>`
  }
  <div class="row">
    ${cap("daily", "Daily limit")}
    ${cap("monthly", "Monthly limit")}
    ${cap("recipients", "Recipients a month")}
  </div>
  <label class="check"><input type="checkbox" name="segments:${c.key}" value="1"${m.segments ? html` checked` : ""}> The limits count segments (a 3-segment SMS counts 3), not messages</label>
</fieldset>`;
}

/** The form for a new pool; errors sit under their fields (a member's as `<key>.<field>`). */
export function poolFormBody(opts: {
  candidates: Candidate[];
  form: PoolForm;
  csrf: string;
  errors?: Record<string, string>;
  error?: string | null;
}): Html {
  const f = opts.form;
  const e = opts.errors ?? {};
  if (opts.candidates.length === 0)
    return html`<p class="notice">A pool's members are paired phones and cloud numbers, and this workspace has none yet.</p>
<p class="actions"><a class="button" href="/dashboard/devices/pair">Pair a phone</a> <a class="button secondary" href="/dashboard/pools">Back to pools</a></p>`;
  return html`<form class="card" method="post" action="/dashboard/pools">
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <label for="p-name">Name</label>
  <input id="p-name" name="name" required maxlength="100" value="${f.name}"${describedBy("p-name", null, e.name)}>
  ${fieldError("p-name", e.name)}
  <label for="p-strategy">Strategy</label>
  <select id="p-strategy" name="strategy"${describedBy("p-strategy", null, e.strategy)}>${Object.entries(STRATEGY_TEXT).map(
    ([value, text]) => html`<option value="${value}"${value === f.strategy ? html` selected` : ""}>${text}</option>`,
  )}</select>
  ${fieldError("p-strategy", e.strategy)}
  <label class="check"><input type="checkbox" name="geomatch" value="1"${f.geomatch ? html` checked` : ""}> Geomatch: prefer members whose number shares the recipient's country code (and area code for +1 numbers)</label>
  <label class="check"><input type="checkbox" name="is_default" value="1"${f.isDefault ? html` checked` : ""}> Default pool: sends that name neither a pool nor a device go through it</label>
  <fieldset${e.members ? html` aria-describedby="p-members-error"` : ""}>
    <legend>Members</legend>
    ${fieldError("p-members", e.members)}
    <p class="hint">Choose at least one. Limits are optional carrier-plan caps: a member at one is skipped until it resets (UTC).</p>
    ${opts.candidates.map((c) => candidateBox(c, f.members[c.key] ?? emptyMember(), e))}
  </fieldset>
  <p class="actions"><button type="submit">Create pool</button> <a class="button secondary" href="/dashboard/pools">Cancel</a></p>
</form>`;
}

export function poolDeleteBody(opts: { p: PoolView; csrf: string }): Html {
  const { p } = opts;
  return html`<section class="card" aria-labelledby="confirm-title">
  <h2 id="confirm-title">Delete "${p.name}"?</h2>
  <p>Messages already accepted keep the member they were given; later sends that name this pool are refused${
    p.is_default ? ", and sends that name neither a pool nor a device no longer go through a pool" : ""
  }. Its ${p.members.length} member${p.members.length === 1 ? "" : "s"} stay paired.</p>
  <form method="post" action="/dashboard/pools/${p.pool_id}/delete" class="actions">
    <input type="hidden" name="_csrf" value="${opts.csrf}">
    <button class="danger" type="submit">Delete pool</button>
    <a class="button secondary" href="/dashboard/pools">Keep it</a>
  </form>
</section>`;
}
