// Inbound rules: the rules in the order they are tried (what each matches, on which channels, what
// it does, when it holds, how often it matched) with buttons to move, enable or disable and delete
// one; the "would this match?" tester, whose result htmx replaces as a message is typed; the form
// for a new rule; and the delete confirmation.
import type { RuleOutcome, RuleService } from "../../modules/rules/service";
import { html, type Html } from "../html";
import { errorBox, utcTime } from "../layout";

export type RuleView = Awaited<ReturnType<RuleService["get"]>>;

export const MATCH_TYPES = ["keyword", "regex", "any"] as const;
export const CHANNELS = [
  { value: "sms", label: "SMS" },
  { value: "chatapp", label: "Chat app" },
] as const;
export const DAYS = [
  { value: "mon", label: "Mon" },
  { value: "tue", label: "Tue" },
  { value: "wed", label: "Wed" },
  { value: "thu", label: "Thu" },
  { value: "fri", label: "Fri" },
  { value: "sat", label: "Sat" },
  { value: "sun", label: "Sun" },
] as const;

/** The new-rule form as typed: every field a string or a list of the boxes ticked. */
export interface RuleForm {
  name: string;
  matchType: (typeof MATCH_TYPES)[number];
  matchValue: string;
  caseSensitive: boolean;
  channels: string[];
  replyText: string;
  webhookUrl: string;
  forwardTo: string;
  tag: string;
  /** Addresses to email the message to, separated by commas. */
  emailTo: string;
  continueAfter: boolean;
  hoursStart: string;
  hoursEnd: string;
  days: string[];
}

/** Errors by form field; "hours" is the start and end together, "other" sits above the form. */
export type RuleErrors = Partial<
  Record<
    | "name"
    | "match"
    | "channels"
    | "action"
    | "reply"
    | "webhook"
    | "forward"
    | "tag"
    | "email"
    | "hoursStart"
    | "hoursEnd"
    | "hours"
    | "days"
    | "other",
    string
  >
>;

export interface TestForm {
  body: string;
  from: string;
  channel: string;
}

/** What the tester found: the rules set off, a keyword that no rule hears, or why it could not test. */
export type TestResult =
  | { kind: "empty" }
  | { kind: "error"; message: string }
  | { kind: "keyword"; keyword: "opt_out" | "opt_in" | "help" }
  | { kind: "matches"; at: string; matches: RuleOutcome[] };

export const emptyRuleForm = (): RuleForm => ({
  name: "",
  matchType: "keyword",
  matchValue: "",
  caseSensitive: false,
  channels: CHANNELS.map((c) => c.value),
  replyText: "",
  webhookUrl: "",
  forwardTo: "",
  tag: "",
  emailTo: "",
  continueAfter: false,
  hoursStart: "",
  hoursEnd: "",
  days: ["mon", "tue", "wed", "thu", "fri"],
});
export const emptyTestForm = (): TestForm => ({ body: "", from: "", channel: "sms" });

const fieldError = (id: string, message: string | undefined) =>
  message ? html`<p class="error" id="${id}-error" role="alert">${message}</p>` : "";
const describedBy = (id: string, hint: string | null, message: string | undefined) => {
  const ids = [hint, message ? `${id}-error` : null].filter(Boolean).join(" ");
  return html`${ids ? html` aria-describedby="${ids}"` : ""}${message ? html` aria-invalid="true"` : ""}`;
};
const checked = (on: boolean) => (on ? html` checked` : "");
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** What a rule matches, in words. */
export function matchText(match: Record<string, unknown>): Html {
  if (match.any) return html`Any message`;
  if (match.keyword !== undefined) {
    const words = Array.isArray(match.keyword) ? (match.keyword as string[]) : [String(match.keyword)];
    return words.length === 1
      ? html`First word <code>${words[0]}</code>`
      : html`First word one of ${words.map((w, i) => html`${i ? ", " : ""}<code>${w}</code>`)}`;
  }
  return html`Pattern <code>${String(match.regex)}</code>${match.case_sensitive ? " (case-sensitive)" : ""}`;
}

export const channelsText = (channels: string[] | null) =>
  channels === null ? "Every channel" : channels.map((c) => CHANNELS.find((k) => k.value === c)?.label ?? c).join(", ");

type ActionKind = RuleOutcome["actions"][number]["action"];
const ACTION_ORDER: ActionKind[] = ["reply", "webhook", "forward", "tag", "email"];

/** Each thing a rule does, in words; a template reply by the template's name when it is known. */
export function actionTexts(action: Record<string, unknown>, templateName: (id: number) => string | undefined) {
  const a = action as {
    reply?: { text?: string; template_id?: number };
    webhook?: { url: string };
    forward?: { to: string; channel?: string };
    tag?: string;
    email?: { to: string[] };
  };
  const out: Partial<Record<ActionKind, Html>> = {};
  if (a.reply?.text !== undefined) out.reply = html`Replies “${a.reply.text}”`;
  else if (a.reply?.template_id !== undefined)
    out.reply = html`Replies with template ${templateName(a.reply.template_id) ?? `#${a.reply.template_id}`}`;
  if (a.webhook) out.webhook = html`Posts to <code>${a.webhook.url}</code>`;
  if (a.forward) out.forward = html`Forwards to ${a.forward.to}${a.forward.channel === "chatapp" ? " (chat app)" : ""}`;
  if (a.tag !== undefined) out.tag = html`Tags the sender <code>${a.tag}</code>`;
  if (a.email) out.email = html`Emails ${a.email.to.join(", ")}`;
  return out;
}

/** When a rule holds: always, or outside the open hours on the open days. */
export function whenText(when: Record<string, unknown> | null, zone: string): string {
  const hours = (when as { outside_hours?: { start: string; end: string; days: string[] } } | null)?.outside_hours;
  if (!hours) return "Any time";
  const days = DAYS.filter((d) => hours.days.includes(d.value)).map((d) => d.label);
  return `Outside ${hours.start}–${hours.end} on ${days.join(", ")} (${zone}); all day on other days`;
}

/** A small form that posts one change of a rule. */
function ruleButton(r: RuleView, path: string, label: string, style: string, csrf: string, hidden: Record<string, string> = {}): Html {
  return html`<form class="inline" method="post" action="/dashboard/rules/${r.rule_id}/${path}">
<input type="hidden" name="_csrf" value="${csrf}">${Object.entries(hidden).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<button class="${style}" type="submit" aria-label="${label} rule ${r.name}">${label}</button></form>`;
}

function ruleRow(r: RuleView, i: number, count: number, zone: string, templateName: (id: number) => string | undefined, csrf: string) {
  const does = actionTexts(r.action, templateName);
  return html`<tr>
  <td data-label="Order">${i + 1}</td>
  <td data-label="Rule"><span><strong>${r.name}</strong><br>${r.enabled ? html`<span class="badge active">enabled</span>` : html`<span class="badge disabled">disabled</span>`}</span></td>
  <td data-label="Matches"><span>${matchText(r.match)}<br><span class="hint">${channelsText(r.channels)}</span></span></td>
  <td data-label="Does"><span>${ACTION_ORDER.flatMap((k) => {
    const text = does[k];
    return text ? [html`${text}<br>`] : [];
  })}<span class="hint">${
    r.continue ? "Then the next matching rule may act too." : "Then stops: later rules are skipped."
  }</span></span></td>
  <td data-label="When">${whenText(r.when, zone)}</td>
  <td data-label="Matched"><span>${plural(r.matched_count, "time")}${r.last_matched_at ? html`<br><span class="hint">last ${utcTime(r.last_matched_at)} UTC</span>` : ""}</span></td>
  <td data-label="Actions"><div class="actions">
    ${i > 0 ? ruleButton(r, "move", "Move up", "secondary", csrf, { direction: "up" }) : ""}
    ${i < count - 1 ? ruleButton(r, "move", "Move down", "secondary", csrf, { direction: "down" }) : ""}
    ${r.enabled ? ruleButton(r, "enabled", "Disable", "secondary", csrf, { enabled: "0" }) : ruleButton(r, "enabled", "Enable", "", csrf, { enabled: "1" })}
    <a class="button danger" href="/dashboard/rules/${r.rule_id}/delete" aria-label="Delete rule ${r.name}">Delete</a>
  </div></td>
</tr>`;
}

const HELD: Record<ActionKind, string> = { reply: "Reply", webhook: "Webhook", forward: "Forward", tag: "Tag", email: "Email" };
const KEYWORD_TEXT = { opt_out: "an opt-out keyword", opt_in: "an opt-in keyword", help: "a help keyword" } as const;

/** The tester's answer, swapped into its live region as the message is typed. */
export function testResult(result: TestResult, rules: RuleView[], templateName: (id: number) => string | undefined): Html {
  if (result.kind === "empty") return html`<p class="hint">Type a message to see which rules it would set off.</p>`;
  if (result.kind === "error") return html`<p class="error">${result.message}</p>`;
  if (result.kind === "keyword")
    return html`<p><strong>No rule hears it:</strong> this is ${KEYWORD_TEXT[result.keyword]}, which Safe sending answers by itself.</p>`;
  if (result.matches.length === 0)
    return html`<p><strong>No rule matches.</strong> <span class="hint">Tested as if it came in at ${utcTime(result.at)} UTC.</span></p>`;
  const byId = new Map(rules.map((r) => [r.rule_id, r]));
  return html`<p><strong>${plural(result.matches.length, "rule")} would act</strong>, in this order. <span class="hint">Tested as if it came in at ${utcTime(result.at)} UTC; nothing was sent.</span></p>
<ol>${result.matches.map((m) => {
    const rule = byId.get(m.rule_id);
    const does = rule ? actionTexts(rule.action, templateName) : {};
    const acts = m.actions.slice().sort((a, b) => ACTION_ORDER.indexOf(a.action) - ACTION_ORDER.indexOf(b.action));
    return html`<li><strong>${m.name}</strong><ul>${acts.map((a) =>
      a.done
        ? html`<li>${does[a.action] ?? a.action}</li>`
        : html`<li><span class="error-text">${HELD[a.action]} held back: ${a.reason}.</span></li>`,
    )}</ul></li>`;
  })}</ol>`;
}

function testSection(opts: {
  form: TestForm;
  result: TestResult;
  rules: RuleView[];
  templateName: (id: number) => string | undefined;
  csrf: string;
}): Html {
  const f = opts.form;
  return html`<section class="card after-table" aria-labelledby="test-title">
  <h2 id="test-title">Would this match?</h2>
  <p class="hint">Type a message as a customer would send it: the rules it would set off, and what each would do, show below as you type. Nothing is sent and nothing is counted. Disabled rules are skipped.</p>
  <form id="rule-test" method="post" action="/dashboard/rules/test#test-title" hx-post="/dashboard/rules/test" hx-trigger="input changed delay:300ms, submit" hx-target="#test-result" hx-swap="innerHTML">
    <input type="hidden" name="_csrf" value="${opts.csrf}">
    <label for="t-body">Message</label>
    <input id="t-body" name="body" maxlength="4096" autocomplete="off" value="${f.body}">
    <div class="row">
      <div>
        <label for="t-from">Sender (optional)</label>
        <input id="t-from" name="from" type="tel" maxlength="32" autocomplete="off" placeholder="+14155550100" value="${f.from}" aria-describedby="t-from-hint">
      </div>
      <div>
        <label for="t-channel">Channel</label>
        <select id="t-channel" name="channel">${CHANNELS.map((c) => html`<option value="${c.value}"${c.value === f.channel ? html` selected` : ""}>${c.label}</option>`)}</select>
      </div>
    </div>
    <p class="hint" id="t-from-hint">With a sender, replies held back for it (an opt-out, the reply limits) say so.</p>
    <p><button type="submit">Test</button></p>
  </form>
  <div id="test-result" aria-live="polite">${testResult(opts.result, opts.rules, opts.templateName)}</div>
</section>`;
}

function ruleForm(f: RuleForm, e: RuleErrors, csrf: string): Html {
  const channelsError = e.channels;
  const hoursIds = e.hours ? "r-hours-hint r-hours-error" : "r-hours-hint";
  return html`<section class="card" aria-labelledby="new-title">
  <h2 id="new-title">New rule</h2>
  ${errorBox(e.other)}
  <form method="post" action="/dashboard/rules">
    <input type="hidden" name="_csrf" value="${csrf}">
    <label for="r-name">Name</label>
    <input id="r-name" name="name" required maxlength="100" value="${f.name}"${describedBy("r-name", null, e.name)}>
    ${fieldError("r-name", e.name)}
    <fieldset>
      <legend>What it matches</legend>
      <div class="row">
        <div>
          <label for="r-match-type">Match</label>
          <select id="r-match-type" name="match_type">
            <option value="keyword"${f.matchType === "keyword" ? html` selected` : ""}>Keywords</option>
            <option value="regex"${f.matchType === "regex" ? html` selected` : ""}>Regular expression</option>
            <option value="any"${f.matchType === "any" ? html` selected` : ""}>Any message</option>
          </select>
        </div>
        <div>
          <label for="r-match-value">Keywords or pattern</label>
          <input id="r-match-value" name="match_value" maxlength="500" autocomplete="off" value="${f.matchValue}"${describedBy("r-match-value", "r-match-hint", e.match)}>
        </div>
      </div>
      <p class="hint" id="r-match-hint">Keywords: the message's first word is one of these (separate them with spaces or commas); any case, punctuation around them ignored ("PRICE" matches "price?"). Regular expression: found anywhere in the message; RE2 syntax, no backreferences or lookaround. Any message: leave it empty.</p>
      ${fieldError("r-match-value", e.match)}
      <label class="check"><input type="checkbox" name="case_sensitive" value="1"${checked(f.caseSensitive)}> The pattern is case-sensitive</label>
    </fieldset>
    <fieldset${channelsError ? html` aria-describedby="r-channels-error"` : ""}>
      <legend>Channels it hears</legend>
      ${fieldError("r-channels", channelsError)}
      <div class="checks">${CHANNELS.map((c) => html`<label class="check"><input type="checkbox" name="channel:${c.value}" value="1"${checked(f.channels.includes(c.value))}> ${c.label}</label>`)}</div>
    </fieldset>
    <fieldset${e.action ? html` aria-describedby="r-action-error"` : ""}>
      <legend>What it does</legend>
      ${fieldError("r-action", e.action)}
      <p class="hint">One or more of these.</p>
      <label for="r-reply">Reply with</label>
      <textarea id="r-reply" name="reply_text" rows="2" maxlength="1600"${describedBy("r-reply", "r-reply-hint", e.reply)}>${f.replyText}</textarea>
      <p class="hint" id="r-reply-hint">Sent back through the device and SIM the message came in on; at most one per sender per rule in 10 minutes, never to an opted-out sender.</p>
      ${fieldError("r-reply", e.reply)}
      <label for="r-webhook">Post it to a webhook URL</label>
      <input id="r-webhook" name="webhook_url" type="url" maxlength="2048" placeholder="https://example.com/hooks/rule" value="${f.webhookUrl}"${describedBy("r-webhook", "r-webhook-hint", e.webhook)}>
      <p class="hint" id="r-webhook-hint">Signed like every Pigeon webhook; its secret is shown once, when the rule is created.</p>
      ${fieldError("r-webhook", e.webhook)}
      <label for="r-forward">Forward it to a staff number</label>
      <input id="r-forward" name="forward_to" type="tel" maxlength="32" autocomplete="off" placeholder="+14155550100" value="${f.forwardTo}"${describedBy("r-forward", "r-forward-hint", e.forward)}>
      <p class="hint" id="r-forward-hint">An SMS saying who wrote and what.</p>
      ${fieldError("r-forward", e.forward)}
      <label for="r-tag">Tag the sender's contact</label>
      <input id="r-tag" name="tag" maxlength="50" autocomplete="off" value="${f.tag}"${describedBy("r-tag", "r-tag-hint", e.tag)}>
      <p class="hint" id="r-tag-hint">The contact is created if there is none.</p>
      ${fieldError("r-tag", e.tag)}
      <label for="r-email">Email it to</label>
      <input id="r-email" name="email_to" maxlength="2000" autocomplete="off" placeholder="frontdesk@shop.example" value="${f.emailTo}"${describedBy("r-email", "r-email-hint", e.email)}>
      <p class="hint" id="r-email-hint">Addresses separated by commas; sent through the server's mail relay (PIGEON_SMTP_RELAY_URL), with a Reply-To that answers by SMS when the workspace has a reply domain.</p>
      ${fieldError("r-email", e.email)}
      <label class="check"><input type="checkbox" name="continue" value="1"${checked(f.continueAfter)}> Then let the next matching rule act too (else later rules are skipped)</label>
    </fieldset>
    <fieldset>
      <legend>Only outside business hours (optional)</legend>
      <p class="hint" id="r-hours-hint">For a "we are closed" reply: the rule holds before opening, from closing on, and all day on days not ticked, in the workspace's time zone. Leave the times empty for a rule that always holds.</p>
      <div class="row">
        <div>
          <label for="r-hours-start">Open from</label>
          <input id="r-hours-start" name="hours_start" type="time" value="${f.hoursStart}"${describedBy("r-hours-start", hoursIds, e.hoursStart)}>
        </div>
        <div>
          <label for="r-hours-end">Open until</label>
          <input id="r-hours-end" name="hours_end" type="time" value="${f.hoursEnd}"${describedBy("r-hours-end", hoursIds, e.hoursEnd)}>
        </div>
      </div>
      ${fieldError("r-hours-start", e.hoursStart)}
      ${fieldError("r-hours-end", e.hoursEnd)}
      ${fieldError("r-hours", e.hours)}
      <fieldset${e.days ? html` aria-describedby="r-days-error"` : ""}>
        <legend>Open days</legend>
        ${fieldError("r-days", e.days)}
        <div class="checks">${DAYS.map((d) => html`<label class="check"><input type="checkbox" name="day:${d.value}" value="1"${checked(f.days.includes(d.value))}> ${d.label}</label>`)}</div>
      </fieldset>
    </fieldset>
    <p><button type="submit">Create rule</button></p>
  </form>
</section>`;
}

export function rulesBody(opts: {
  rules: RuleView[];
  zone: string;
  templateName: (id: number) => string | undefined;
  csrf: string;
  form: RuleForm;
  errors: RuleErrors;
  test: TestForm;
  result: TestResult;
}): Html {
  const { rules, csrf } = opts;
  // The form is at the foot of the page: a refusal says so at its head too.
  const refused = Object.keys(opts.errors).length > 0;
  return html`${refused ? html`<p class="error">The rule was not created: <a href="#new-title">see the form below</a>.</p>` : ""}
<p>Rules answer messages that come in, on their own: a reply, a webhook, a forward to staff, a tag. They are tried in this order
and the first that matches acts, unless it lets the next one act too. Opt-out, opt-in and help keywords are answered before any rule.</p>
<section aria-labelledby="list-title">
  <h2 id="list-title">Rules, in the order they are tried</h2>
  ${
    rules.length === 0
      ? html`<p class="empty">No rule yet. Create one below, then try a message in "Would this match?".</p>`
      : html`<table class="stack rules"><thead><tr><th scope="col">Order</th><th scope="col">Rule</th><th scope="col">Matches</th><th scope="col">Does</th><th scope="col">When</th><th scope="col">Matched</th><th scope="col">Actions</th></tr></thead><tbody>
  ${rules.map((r, i) => ruleRow(r, i, rules.length, opts.zone, opts.templateName, csrf))}
  </tbody></table>`
  }
</section>
${testSection({ form: opts.test, result: opts.result, rules, templateName: opts.templateName, csrf })}
${ruleForm(opts.form, opts.errors, csrf)}`;
}

export function ruleDeleteBody(opts: { r: RuleView; csrf: string }): Html {
  const { r } = opts;
  return html`<section class="card" aria-labelledby="confirm-title">
  <h2 id="confirm-title">Delete "${r.name}"?</h2>
  <p>Messages that come in are no longer checked against it${r.action.webhook ? ", and its webhook subscription is deleted with it" : ""}. What it already did stays done.</p>
  <form method="post" action="/dashboard/rules/${r.rule_id}/delete" class="actions">
    <input type="hidden" name="_csrf" value="${opts.csrf}">
    <button class="danger" type="submit">Delete rule</button>
    <a class="button secondary" href="/dashboard/rules">Keep it</a>
  </form>
</section>`;
}
