// Two-factor sign-in's pages: the second step of signing in (a code or a recovery code), the
// account's two-factor page (enrolment with a QR code and the secret as text, or, once on, how
// many recovery codes are left and how to turn it off; an owner's account-wide requirement), and
// the recovery codes, shown the one time they are known.
import { html, trusted, type Html } from "../html";
import { bare, errorBox } from "../layout";

/** The secret in groups of four, easier to type into an app by hand. */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, "$1 ");

const codeField = (label: string, hint: string, error?: string | null) => html`<label for="code">${label}</label>
  <p class="hint" id="code-hint">${hint}</p>
  <input id="code" name="code" type="text" autocomplete="one-time-code" spellcheck="false" autocapitalize="none" maxlength="20" required aria-describedby="code-hint"${error ? html` aria-invalid="true"` : ""}>`;

export function secondStepPage(opts: { csrf: string; error?: string | null }): Html {
  return bare(
    "Two-factor sign-in",
    html`<form class="card" method="post" action="/dashboard/sign-in/code">
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  ${codeField("Code", "The 6 digits your authenticator app shows for Pigeon, or one of your recovery codes.", opts.error)}
  <p><button type="submit">Verify</button></p>
  <p class="hint">Lost the phone and the recovery codes? On the server run <code>pigeon users reset-2fa --email you@example.com</code>. <a href="/dashboard/sign-in">Start again</a></p>
</form>`,
  );
}

export interface TwoFactorView {
  csrf: string;
  email: string;
  owner: boolean;
  enabled: boolean;
  recoveryCodesLeft: number;
  /** Whether the account requires it of every user. */
  required: boolean;
  /** While enrolling: the secret, and the QR code of its otpauth:// URI as SVG. */
  enrolment?: { secret: string; qrSvg: string };
  error?: string | null;
  ownerError?: string | null;
}

function enrolBody(v: TwoFactorView, enrolment: NonNullable<TwoFactorView["enrolment"]>): Html {
  return html`<section class="card" aria-labelledby="enrol-title">
  <h2 id="enrol-title">Turn on two-factor sign-in</h2>
  ${v.required ? html`<p class="notice" role="status">This account requires two-factor sign-in: set it up to go on using the dashboard.</p>` : ""}
  <ol>
    <li>In an authenticator app (any that reads TOTP codes), add an account by scanning this QR code.
      <figure class="qr" role="img" aria-label="QR code for adding ${v.email} to an authenticator app">${trusted(enrolment.qrSvg)}</figure>
    </li>
    <li>Or type this key into the app by hand (time-based, 6 digits, every 30 seconds):
      <code class="secret" id="totp-secret">${grouped(enrolment.secret)}</code>
    </li>
    <li>Enter the code the app shows now, to confirm it works.</li>
  </ol>
  <form method="post" action="/dashboard/account/2fa/confirm">
    ${errorBox(v.error)}
    <input type="hidden" name="_csrf" value="${v.csrf}">
    ${codeField("Code from the app", "6 digits; a new one comes every 30 seconds.", v.error)}
    <p><button type="submit">Turn on</button></p>
  </form>
</section>`;
}

function enabledBody(v: TwoFactorView): Html {
  return html`<section class="card" aria-labelledby="on-title">
  <h2 id="on-title">Two-factor sign-in is on</h2>
  <p id="recovery-left">${v.recoveryCodesLeft} of 10 recovery codes left.${v.recoveryCodesLeft < 3 ? " Turn it off and on again for ten new ones." : ""}</p>
  ${
    v.required
      ? html`<p class="hint">This account requires two-factor sign-in, so it cannot be turned off here.</p>`
      : html`<form method="post" action="/dashboard/account/2fa/disable">
    ${errorBox(v.error)}
    <input type="hidden" name="_csrf" value="${v.csrf}">
    ${codeField("Code from the app", "Turning it off needs a current code; your recovery codes stop working too.", v.error)}
    <p><button type="submit" class="danger">Turn off</button></p>
  </form>`
  }
</section>`;
}

function ownerBody(v: TwoFactorView): Html {
  return html`<section class="card" aria-labelledby="require-title">
  <h2 id="require-title">For every user of the account</h2>
  <p id="require-state">${v.required ? "Two-factor sign-in is required: a user without it is sent to set it up after signing in." : "Two-factor sign-in is optional for the account's users."}</p>
  ${errorBox(v.ownerError)}
  <form method="post" action="/dashboard/account/2fa/require">
    <input type="hidden" name="_csrf" value="${v.csrf}">
    <input type="hidden" name="required" value="${v.required ? "no" : "yes"}">
    <p><button type="submit"${v.required ? html` class="secondary"` : ""}>${v.required ? "Stop requiring it" : "Require it for every user"}</button></p>
  </form>
</section>`;
}

export function twoFactorBody(v: TwoFactorView): Html {
  return html`${v.enabled || !v.enrolment ? enabledBody(v) : enrolBody(v, v.enrolment)}
${v.owner ? ownerBody(v) : ""}
<p><a href="/dashboard/account">Back to the account</a></p>`;
}

export function recoveryCodesBody(codes: string[]): Html {
  return html`<section class="card" aria-labelledby="codes-title">
  <h2 id="codes-title">Your recovery codes</h2>
  <p>Two-factor sign-in is on. If you lose the phone, each of these codes signs you in once instead of a code from the app.
  Store them somewhere safe now: they are shown only this once.</p>
  <ol class="secret" id="recovery-codes">${codes.map((c) => html`<li><code>${c}</code></li>`)}</ol>
  <p class="actions"><button type="button" data-copy="recovery-codes">Copy codes</button> <span id="recovery-codes-status" role="status"></span></p>
  <p><a class="button" href="/dashboard">Continue to the dashboard</a></p>
</section>`;
}
