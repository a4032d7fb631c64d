// API keys: name, key, status, limits (scopes, recipients, daily cap, expiry: docs/keys.md), created, last used; create (the secret shown once, with a copy
// button), rotate (the old secret stops working at once), disable and enable, and whether its sends
// need approval (docs/approval.md). Disabled keys stay.
// For owners, the key SMSGate-format webhooks are signed with (the SMSGate API never returns it), and
// the Twilio-compatible credentials: the account SID, the auth token made or rotated here (shown
// once), and the incoming-message URL; and the SMPP credentials (the password shown once).
import { KEY_SCOPES, SCOPE_DESCRIPTIONS, type KeyScope } from "../../core/scopes";
import { html, type Html } from "../html";
import { errorBox, utcTime } from "../layout";

export interface KeyView {
  id: number;
  name: string;
  key: string;
  status: "active" | "disabled";
  secretHint: string;
  createdAt: number;
  lastUsedAt: number | null;
  /** Its sends wait for a person's approval (the Approvals page). */
  needsApproval: boolean;
  /** null: every scope. */
  scopes: KeyScope[] | null;
  /** anyone, contacts, tag:<tag>, or the numbers with commas. */
  recipients: string;
  dailyCap: number | null;
  expiresAt: number | null;
  /** Past its expiry, by the server's clock. */
  expired: boolean;
}

/** What the limits form holds: a key's limits, or what was typed when it was refused. */
export interface LimitsForm {
  scopes: KeyScope[] | null;
  recipients: string;
  dailyCap: string;
  expires: string;
  needsApproval: boolean;
}

/** A key's limits as the form shows them. */
export function limitsFormOf(k: KeyView): LimitsForm {
  return {
    scopes: k.scopes,
    recipients: k.recipients,
    dailyCap: k.dailyCap === null ? "" : String(k.dailyCap),
    expires: k.expiresAt === null ? "never" : new Date(k.expiresAt).toISOString(),
    needsApproval: k.needsApproval,
  };
}

/** The form field of a scope's checkbox. */
export const scopeField = (scope: KeyScope) => `scope_${scope.replace(":", "_")}`;

/** The fields that set a key's limits, on the create form and the edit page. */
function limitsFields(id: string, f: LimitsForm): Html {
  const has = (scope: KeyScope) => f.scopes === null || f.scopes.includes(scope);
  return html`<input type="hidden" name="limits" value="on">
  <fieldset class="limits">
    <legend>What the key may do</legend>
    ${KEY_SCOPES.map(
      (scope) =>
        html`<label class="check"><input type="checkbox" name="${scopeField(scope)}" value="on"${has(scope) ? " checked" : ""}> <code>${scope}</code> — ${SCOPE_DESCRIPTIONS[scope]}</label>`,
    )}
  </fieldset>
  <div class="row">
    <div><label for="${id}-recipients">Recipients</label><input id="${id}-recipients" name="recipients" maxlength="2000" value="${f.recipients}" aria-describedby="${id}-recipients-hint"></div>
    <div><label for="${id}-cap">Daily send cap</label><input id="${id}-cap" name="daily_cap" inputmode="numeric" pattern="[0-9]*" maxlength="9" value="${f.dailyCap}" placeholder="none" aria-describedby="${id}-cap-hint"></div>
    <div><label for="${id}-expires">Expires</label><input id="${id}-expires" name="expires" maxlength="40" value="${f.expires}" aria-describedby="${id}-expires-hint"></div>
  </div>
  <p class="hint" id="${id}-recipients-hint">Recipients: <code>anyone</code>, <code>contacts</code> (the workspace's contacts only), <code>tag:customers</code>, or numbers separated by commas.</p>
  <p class="hint" id="${id}-cap-hint">Daily send cap: messages a UTC day; empty for none.</p>
  <p class="hint" id="${id}-expires-hint">Expires: a date (2027-01-31), a span (30d, 12h) or <code>never</code>.</p>
  <label class="check"><input type="checkbox" name="needs_approval" value="on"${f.needsApproval ? " checked" : ""}> Its sends wait for a person's approval (Sending › Approvals)</label>`;
}

/** A key's limits in a few words, for the list. */
function limitsSummary(k: KeyView): Html {
  const scopes = k.scopes === null ? "every scope" : k.scopes.join(", ");
  return html`${scopes}<br><span class="hint">to ${k.recipients}; ${k.dailyCap === null ? "no daily cap" : `${k.dailyCap} a day`}; ${
    k.expiresAt === null ? "never expires" : `${k.expired ? "expired" : "expires"} ${utcTime(k.expiresAt)} UTC`
  }</span>`;
}

/** The page that changes one key's limits. */
export function keyLimitsBody(k: KeyView, form: LimitsForm, csrf: string, error?: string | null): Html {
  return html`<section class="card" aria-labelledby="limits-title">
  <h2 id="limits-title">Limits of ${k.name}</h2>
  <p>Key <code>${k.key}</code>. A change holds from the key's next request.</p>
  ${errorBox(error)}
  <form method="post" action="/dashboard/keys/${k.id}/limits">
    <input type="hidden" name="_csrf" value="${csrf}">
    ${limitsFields("edit", form)}
    <div class="actions"><button type="submit">Save limits</button> <a href="/dashboard/keys">Back to the keys</a></div>
  </form>
</section>`;
}

const when = (t: number | null) => (t ? `${utcTime(t)} UTC` : "never");

/**
 * A button's visible text: the start of its label (its first word, or an approval toggle's first
 * two), so the name a screen reader announces begins with what is seen.
 */
const shortLabel = (label: string) =>
  label.startsWith("Require approval") ? "Require approval" : label.startsWith("Stop requiring") ? "Stop requiring" : label.split(" ")[0];

function action(keyId: number, verb: string, label: string, csrf: string, style = "secondary"): Html {
  return html`<form class="inline" method="post" action="/dashboard/keys/${keyId}/${verb}">
<input type="hidden" name="_csrf" value="${csrf}"><button class="${style}" type="submit" aria-label="${label}">${shortLabel(label)}</button></form>`;
}

/** The SMSGate-compatible API's webhook signing key, for its receivers to verify X-Signature. */
function smsgateKeySection(key: string): Html {
  return html`<section class="card" aria-labelledby="smsgate-title">
  <h2 id="smsgate-title">SMSGate webhook signing key</h2>
  <p>Webhooks registered through the SMSGate-compatible API (<code>/3rdparty/v1/webhooks</code>) carry <code>X-Signature</code>: the hex HMAC-SHA256 of the body followed by <code>X-Timestamp</code>, keyed with:</p>
  <p><code id="smsgate-signing-key">${key}</code></p>
  <p class="hint">Change it with <code>PATCH /3rdparty/v1/settings</code> and <code>{"webhooks": {"signing_key": "…"}}</code>; the CLI prints it with <code>pigeon smsgate signing-key</code>.</p>
</section>`;
}

/** The workspace's Twilio-compatible account, for owners. */
export interface TwilioView {
  accountSid: string | null;
  incomingUrl: string | null;
  error?: string | null;
  /** The URL as typed, shown back with its error. */
  typedUrl?: string;
}

function twilioSection(t: TwilioView, csrf: string): Html {
  const rotate = html`<form class="inline" method="post" action="/dashboard/twilio/credentials">
<input type="hidden" name="_csrf" value="${csrf}"><button class="secondary" type="submit">${t.accountSid ? "Rotate auth token" : "Create Twilio credentials"}</button></form>`;
  return html`<section class="card" aria-labelledby="twilio-title">
  <h2 id="twilio-title">Twilio-compatible API</h2>
  <p>Software written for Twilio's Messages API sends through this workspace when pointed at this server with these credentials (<a href="/docs">the API docs</a>, "Twilio compatible").</p>
  ${
    t.accountSid
      ? html`<p>Account SID: <code id="twilio-account-sid">${t.accountSid}</code></p>
  <p class="hint">The auth token was shown once, when made or rotated; <code>pigeon twilio credentials</code> prints it. Rotating stops the old token at once.</p>`
      : html`<p class="empty">No Twilio credentials yet.</p>`
  }
  ${rotate}
  <h3>Incoming messages</h3>
  ${errorBox(t.error)}
  <form method="post" action="/dashboard/twilio/incoming" class="row">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div><label for="twilio-incoming">Incoming-message URL</label><input id="twilio-incoming" name="url" type="url" maxlength="2000" value="${t.typedUrl ?? t.incomingUrl ?? ""}" placeholder="https://example.com/sms/incoming" aria-describedby="twilio-incoming-hint"></div>
    <button type="submit">Save</button>
  </form>
  <p class="hint" id="twilio-incoming-hint">Each received message is posted there as Twilio posts it, signed with the auth token; a TwiML answer is sent back to the sender. Leave it empty to stop.</p>
</section>`;
}

/** The workspace's SMPP credentials, for owners: the system_id (null until issued) and the listener's ports. */
export interface SmppView {
  systemId: string | null;
  port: number | null;
  tlsPort: number | null;
}

function smppSection(v: SmppView, csrf: string): Html {
  const ports = [v.port !== null ? `port ${v.port}` : null, v.tlsPort !== null ? `TLS port ${v.tlsPort}` : null].filter(Boolean).join(", ");
  return html`<section class="card" aria-labelledby="smpp-title">
  <h2 id="smpp-title">SMPP</h2>
  <p>SMS platforms, Kannel and other SMPP 3.4 clients bind to this server's SMPP listener with these credentials; their submits are sends through the key named SMPP (<a href="/docs">the API docs</a>, docs/smpp.md).</p>
  ${
    v.systemId
      ? html`<p>system_id: <code id="smpp-system-id">${v.systemId}</code></p>
  <p class="hint">The password was shown once, when issued; issuing a new one unbinds every bind made with the old one. <code>pigeon smpp credentials --rotate</code> does the same.</p>`
      : html`<p class="empty">No SMPP credentials yet.</p>`
  }
  <p class="hint">${ports ? html`The listener is on ${ports}.` : html`The listener is off: set PIGEON_SMPP_PORT (2775 is usual) and restart the server.`}</p>
  <form class="inline" method="post" action="/dashboard/smpp/credentials">
<input type="hidden" name="_csrf" value="${csrf}"><button class="secondary" type="submit">${v.systemId ? "Issue a new SMPP password" : "Create SMPP credentials"}</button></form>
</section>`;
}

/** A new key's form: every scope, anyone, no cap, no expiry, no approval. */
const NO_LIMITS: LimitsForm = { scopes: null, recipients: "anyone", dailyCap: "", expires: "never", needsApproval: false };

export function keysBody(opts: {
  keys: KeyView[];
  csrf: string;
  error?: string | null;
  name?: string;
  smsgateSigningKey?: string | null;
  twilio?: TwilioView | null;
  smpp?: SmppView | null;
  /** What the create form holds (what was typed, when it was refused). */
  limits?: LimitsForm;
}) {
  const { keys, csrf } = opts;
  return html`<section class="card" aria-labelledby="create-title">
  <h2 id="create-title">Create a key</h2>
  ${errorBox(opts.error)}
  <form method="post" action="/dashboard/keys" class="row">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div><label for="key-name">Name</label><input id="key-name" name="name" required maxlength="100" value="${opts.name ?? ""}" placeholder="e.g. Shop website"></div>
    ${limitsFields("new", opts.limits ?? NO_LIMITS)}
    <div class="actions"><button type="submit">Create key</button></div>
  </form>
</section>
<section aria-labelledby="list-title">
  <h2 id="list-title">Keys of this workspace</h2>
  ${
    keys.length === 0
      ? html`<p class="empty">No keys yet — create one above to call the API.</p>`
      : html`<table class="stack"><thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Status</th><th scope="col">Limits</th><th scope="col">Approval</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead><tbody>
  ${keys.map(
    (k) => html`<tr>
    <td data-label="Name">${k.name}</td>
    <td data-label="Key"><code>${k.key}</code><br><span class="hint">secret …${k.secretHint}</span></td>
    <td data-label="Status"><span class="badge ${k.status}">${k.status}</span></td>
    <td data-label="Limits">${limitsSummary(k)}</td>
    <td data-label="Approval">${k.needsApproval ? html`<span class="badge pending">sends need approval</span>` : "not needed"}</td>
    <td data-label="Created">${when(k.createdAt)}</td>
    <td data-label="Last used">${when(k.lastUsedAt)}</td>
    <td data-label="Actions"><div class="actions">
      <a class="button secondary" href="/dashboard/keys/${k.id}/limits" aria-label="Limits of ${k.name}">Limits</a>
      ${action(k.id, "rotate", `Rotate ${k.name}`, csrf)}
      ${
        k.needsApproval
          ? action(k.id, "approval-off", `Stop requiring approval for ${k.name}`, csrf)
          : action(k.id, "approval-on", `Require approval for ${k.name}`, csrf)
      }
      ${k.status === "active" ? action(k.id, "disable", `Disable ${k.name}`, csrf, "danger") : action(k.id, "enable", `Enable ${k.name}`, csrf)}
    </div></td>
  </tr>`,
  )}
  </tbody></table>`
  }
</section>
${opts.smsgateSigningKey ? smsgateKeySection(opts.smsgateSigningKey) : ""}
${opts.twilio ? twilioSection(opts.twilio, csrf) : ""}
${opts.smpp ? smppSection(opts.smpp, csrf) : ""}`;
}
