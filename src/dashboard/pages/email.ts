// The email bridge's page: how mail becomes SMS (the part sent, the default country), who may write
// without signing in (the allowlist, the secret address), where received messages are forwarded
// and with which Reply-To domain, the delivery notices, and the latest forwards.
import { html, type Html } from "../html";
import { errorBox } from "../layout";

/** The settings form as typed (or as saved). */
export interface EmailForm {
  content: string;
  defaultCountry: string;
  /** One per line. */
  senders: string;
  forwardTo: string;
  replyDomain: string;
  dsn: boolean;
  forwardFailures: boolean;
}

export type EmailErrors = Partial<Record<"content" | "defaultCountry" | "senders" | "forwardTo" | "replyDomain" | "other", string>>;

export interface EmailPage {
  form: EmailForm;
  errors?: EmailErrors;
  secretHint: string | null;
  listener: { smtp: number | null; smtps: number | null };
  relay: boolean;
  forwards: { id: number; to: string; subject: string; status: string; attempts: number; lastError: string | null; at: string }[];
  csrf: string;
}

const CONTENTS = [
  { value: "body", label: "The body (the subject when the body is empty)" },
  { value: "subject", label: "The subject" },
  { value: "both", label: "The subject, then the body" },
];

const fieldError = (id: string, message: string | undefined) =>
  message ? html`<p class="error" id="${id}-error" role="alert">${message}</p>` : "";
const describedBy = (id: string, hint: string, message: string | undefined) =>
  html` aria-describedby="${[hint, message ? `${id}-error` : null].filter(Boolean).join(" ")}"${message ? html` aria-invalid="true"` : ""}`;
const checked = (on: boolean) => (on ? html` checked` : "");

function listenerText(p: EmailPage): Html {
  const ports = [
    p.listener.smtp !== null ? `SMTP on port ${p.listener.smtp}` : null,
    p.listener.smtps !== null ? `SMTPS on port ${p.listener.smtps}` : null,
  ].filter(Boolean);
  const listening = ports.length
    ? html`The server takes mail: ${ports.join(", ")}.`
    : html`The server takes no mail: set <code>PIGEON_SMTP_PORT</code> to turn the listener on.`;
  const relay = p.relay
    ? html`Forwards go out through <code>PIGEON_SMTP_RELAY_URL</code>.`
    : html`No mail relay is set (<code>PIGEON_SMTP_RELAY_URL</code>): nothing is forwarded.`;
  return html`<p>${listening} ${relay}</p>`;
}

function forwardsTable(p: EmailPage): Html {
  if (p.forwards.length === 0) return html`<p class="hint">No forwards yet.</p>`;
  return html`<table>
  <caption>The latest forwards by email</caption>
  <thead><tr><th scope="col">Queued</th><th scope="col">To</th><th scope="col">Subject</th><th scope="col">State</th><th scope="col">Tries</th><th scope="col">Relay's last answer</th></tr></thead>
  <tbody>${p.forwards.map(
    (f) =>
      html`<tr><td>${f.at}</td><td>${f.to}</td><td>${f.subject}</td><td>${f.status}</td><td>${String(f.attempts)}</td><td>${f.lastError ?? ""}</td></tr>`,
  )}</tbody>
</table>`;
}

export function emailBody(p: EmailPage): Html {
  const f = p.form;
  const e = p.errors ?? {};
  return html`<section class="card" aria-labelledby="email-status">
  <h2 id="email-status">Mail in and out</h2>
  ${listenerText(p)}
  <p class="hint">Write to <code>+15551234567@your-domain</code> (a contact's name or <code>tag-NAME</code> work too), signed in with an API key as the user name and its secret as the password. See docs/email.md.</p>
</section>
<form class="card" method="post" action="/dashboard/email">
  ${errorBox(e.other)}
  <input type="hidden" name="_csrf" value="${p.csrf}">
  <fieldset>
    <legend>Email to SMS</legend>
    <p class="hint" id="e-content-hint">Which part of a mail is the text message.</p>
    ${fieldError("e-content", e.content)}
    ${CONTENTS.map(
      (c) =>
        html`<label class="check"><input type="radio" name="content" value="${c.value}"${checked(f.content === c.value)} aria-describedby="e-content-hint"> ${c.label}</label>`,
    )}
    <label for="e-country">Default country</label>
    <input id="e-country" name="default_country" maxlength="2" autocomplete="off" placeholder="US" value="${f.defaultCountry}"${describedBy("e-country", "e-country-hint", e.defaultCountry)}>
    <p class="hint" id="e-country-hint">Two letters (US, GB, DE): national numbers in addresses are read in this country. Empty: the workspace's default country (Safe sending), if it has one.</p>
    ${fieldError("e-country", e.defaultCountry)}
    <label for="e-senders">Senders allowed without signing in</label>
    <textarea id="e-senders" name="senders" rows="3" autocomplete="off"${describedBy("e-senders", "e-senders-hint", e.senders)}>${f.senders}</textarea>
    <p class="hint" id="e-senders-hint">One address per line, or @domain for a whole domain: they may write to the secret address below and reply to forwards. At most 100.</p>
    ${fieldError("e-senders", e.senders)}
  </fieldset>
  <fieldset>
    <legend>SMS to email</legend>
    <label for="e-forward">Forward every received message to</label>
    <textarea id="e-forward" name="forward_to" rows="2" autocomplete="off"${describedBy("e-forward", "e-forward-hint", e.forwardTo)}>${f.forwardTo}</textarea>
    <p class="hint" id="e-forward-hint">One address per line, at most 20. Empty: nothing is forwarded.</p>
    ${fieldError("e-forward", e.forwardTo)}
    <label for="e-reply">Reply domain</label>
    <input id="e-reply" name="reply_domain" maxlength="200" autocomplete="off" placeholder="sms.example.com" value="${f.replyDomain}"${describedBy("e-reply", "e-reply-hint", e.replyDomain)}>
    <p class="hint" id="e-reply-hint">A domain whose mail reaches this server's listener: each forward's Reply-To is an address there, and a reply from an allowed sender goes back to the customer by SMS. Empty: forwards have no Reply-To.</p>
    ${fieldError("e-reply", e.replyDomain)}
    <label class="check"><input type="checkbox" name="forward_failures" value="yes"${checked(f.forwardFailures)}> Also email these addresses when a message fails</label>
    <label class="check"><input type="checkbox" name="dsn" value="yes"${checked(f.dsn)}> Tell a mail's sender when a text it asked for could not be delivered</label>
  </fieldset>
  <p><button type="submit">Save email settings</button></p>
</form>
<section class="card" aria-labelledby="email-secret">
  <h2 id="email-secret">Secret address</h2>
  <p>For a device that cannot sign in (an alarm panel, a printer): mail to <code>TOKEN+15551234567@your-domain</code> from an allowed sender is sent without a password.</p>
  ${
    p.secretHint
      ? html`<p>A secret address is set; its token ends in <code>${p.secretHint}</code>.</p>`
      : html`<p>There is no secret address.</p>`
  }
  <form class="inline" method="post" action="/dashboard/email/secret">
    <input type="hidden" name="_csrf" value="${p.csrf}">
    <button type="submit">${p.secretHint ? "Replace the secret address" : "Make a secret address"}</button>
  </form>
  ${
    p.secretHint
      ? html`<form class="inline" method="post" action="/dashboard/email/secret/remove">
    <input type="hidden" name="_csrf" value="${p.csrf}">
    <button class="danger" type="submit">Remove it</button>
  </form>`
      : ""
  }
</section>
<section class="card" aria-labelledby="email-forwards">
  <h2 id="email-forwards">Forwards</h2>
  ${forwardsTable(p)}
</section>`;
}
