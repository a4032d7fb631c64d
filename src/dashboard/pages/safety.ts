// Safe sending: one form for a workspace's quiet hours, its opt-out, opt-in and help keywords with
// their replies, and the default failover order of routes; each error sits beside its field.
import { html, type Html } from "../html";
import { errorBox } from "../layout";

/** The form as typed (or as saved): every field a string. */
export interface SafetyForm {
  quietOff: boolean;
  quietStart: string;
  quietEnd: string;
  optOutKeywords: string;
  optInKeywords: string;
  helpKeywords: string;
  optOutReply: string;
  optInReply: string;
  helpReply: string;
  /** Route names, first to third; "" for none. */
  routes: [string, string, string];
  /** End-to-end encrypted sends allowed. */
  encryptedSends: boolean;
  /** ISO 3166 two letters, or "" for none. */
  defaultCountry: string;
}

/** Errors by form field: the names below, "quiet" for the pair, "routes" for the order, "other". */
export type SafetyErrors = Partial<
  Record<
    | "quietStart"
    | "quietEnd"
    | "quiet"
    | "optOutKeywords"
    | "optInKeywords"
    | "helpKeywords"
    | "optOutReply"
    | "optInReply"
    | "helpReply"
    | "routes"
    | "defaultCountry"
    | "other",
    string
  >
>;

const fieldError = (id: string, message: string | undefined) =>
  message ? html`<p class="error" id="${id}-error" role="alert">${message}</p>` : "";
const describedBy = (id: string, hint: string | null, message: string | undefined) => {
  const ids = [hint, message ? `${id}-error` : null].filter(Boolean).join(" ");
  return html`${ids ? html` aria-describedby="${ids}"` : ""}${message ? html` aria-invalid="true"` : ""}`;
};

function keywordField(
  id: string,
  name: string,
  label: string,
  value: string,
  defaults: readonly string[],
  error: string | undefined,
): Html {
  return html`<label for="${id}">${label}</label>
  ${fieldError(id, error)}
  <textarea id="${id}" name="${name}" rows="2" autocomplete="off"${describedBy(id, `${id}-hint`, error)}>${value}</textarea>
  <p class="hint" id="${id}-hint">Default: ${defaults.join(", ")}.</p>`;
}

function replyField(id: string, name: string, label: string, value: string, error: string | undefined): Html {
  return html`<label for="${id}">${label}</label>
  ${fieldError(id, error)}
  <textarea id="${id}" name="${name}" rows="3" maxlength="640"${describedBy(id, "s-reply-hint", error)}>${value}</textarea>`;
}

export function safetyBody(opts: {
  form: SafetyForm;
  /** Why encrypted sends are off until turned on, shown beside the switch. */
  encryptedReason: string;
  errors?: SafetyErrors;
  /** Route names with what each is, in words. */
  routes: { name: string; about: string }[];
  defaults: { optOut: readonly string[]; optIn: readonly string[]; help: readonly string[] };
  csrf: string;
}): Html {
  const f = opts.form;
  const e = opts.errors ?? {};
  const routeSelect = (i: number) => {
    const id = `s-route-${i + 1}`;
    const label = ["First route", "Second route", "Third route"][i];
    return html`<div><label for="${id}">${label}</label><select id="${id}" name="route_${i + 1}"${describedBy(id, "s-routes-hint", e.routes)}>
      <option value="">None</option>${opts.routes.map((r) => html`<option value="${r.name}"${f.routes[i] === r.name ? html` selected` : ""}>${r.name}: ${r.about}</option>`)}
    </select></div>`;
  };
  return html`<form class="card" method="post" action="/dashboard/safety">
  ${errorBox(e.other)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <fieldset>
    <legend>Quiet hours</legend>
    <p class="hint" id="s-quiet-hint">Texts due between these times wait until the end, in the recipient's local time: their contact's time zone, else their number's country's. Messages with priority 100 or more, or marked transactional, are not held.</p>
    <label class="check"><input type="checkbox" id="s-quiet-off" name="quiet_off" value="yes"${f.quietOff ? html` checked` : ""}> No quiet hours</label>
    <div class="row">
      <div>
        <label for="s-quiet-start">From</label>
        <input id="s-quiet-start" name="quiet_start" type="time" value="${f.quietStart}"${describedBy("s-quiet-start", e.quiet ? "s-quiet-hint s-quiet-error" : "s-quiet-hint", e.quietStart)}>
      </div>
      <div>
        <label for="s-quiet-end">Until</label>
        <input id="s-quiet-end" name="quiet_end" type="time" value="${f.quietEnd}"${describedBy("s-quiet-end", e.quiet ? "s-quiet-hint s-quiet-error" : "s-quiet-hint", e.quietEnd)}>
      </div>
    </div>
    ${fieldError("s-quiet-start", e.quietStart)}
    ${fieldError("s-quiet-end", e.quietEnd)}
    ${fieldError("s-quiet", e.quiet)}
  </fieldset>
  <fieldset>
    <legend>Keywords</legend>
    <p class="hint">A text that is exactly one of these words (any case, spaces ignored) opts its sender out, back in, or asks for help. Separate words with commas or new lines; leave a list empty to turn that rule off. A word can be in one list only.</p>
    ${keywordField("s-optout-words", "opt_out_keywords", "Opt-out words", f.optOutKeywords, opts.defaults.optOut, e.optOutKeywords)}
    ${keywordField("s-optin-words", "opt_in_keywords", "Opt-in words", f.optInKeywords, opts.defaults.optIn, e.optInKeywords)}
    ${keywordField("s-help-words", "help_keywords", "Help words", f.helpKeywords, opts.defaults.help, e.helpKeywords)}
  </fieldset>
  <fieldset>
    <legend>Replies</legend>
    <p class="hint" id="s-reply-hint">Sent back on the channel the keyword came on. At most 640 characters; leave one empty to send no reply.</p>
    ${replyField("s-optout-reply", "opt_out_reply", "Reply to an opt-out", f.optOutReply, e.optOutReply)}
    ${replyField("s-optin-reply", "opt_in_reply", "Reply to an opt-in", f.optInReply, e.optInReply)}
    ${replyField("s-help-reply", "help_reply", "Reply to help", f.helpReply, e.helpReply)}
  </fieldset>
  <fieldset>
    <legend>Default failover</legend>
    <p class="hint" id="s-routes-hint">For sends that name no route and no device: try the first route, and on a failure that another route could avoid, the next. All none: no failover.</p>
    ${fieldError("s-routes", e.routes)}
    <div class="row">${[0, 1, 2].map(routeSelect)}</div>
  </fieldset>
  <fieldset>
    <legend>Numbers</legend>
    <label for="s-country">Default country</label>
    <input id="s-country" name="default_country" maxlength="2" autocomplete="off" placeholder="US" value="${f.defaultCountry}"${describedBy("s-country", "s-country-hint", e.defaultCountry)}>
    <p class="hint" id="s-country-hint">Two letters (US, GB, DE): a number written without its country code is read in this country, on the Send page, in the API, over SMPP and by the email bridge. Empty: numbers need their country code.</p>
    ${fieldError("s-country", e.defaultCountry)}
  </fieldset>
  <fieldset>
    <legend>Encrypted sends</legend>
    <p class="hint" id="s-encrypted-hint">${opts.encryptedReason} Encrypted texts go only through a paired phone, which decrypts them with its passphrase; they join no conversation and no template, rule or failover applies to them.</p>
    <label class="check"><input type="checkbox" id="s-encrypted" name="encrypted_sends" value="yes" aria-describedby="s-encrypted-hint"${f.encryptedSends ? html` checked` : ""}> Allow end-to-end encrypted sends</label>
  </fieldset>
  <p><button type="submit">Save settings</button></p>
</form>`;
}
