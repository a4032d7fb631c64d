// The signed-out pages: sign-in, and the one-time setup that creates the owner's user.
import { html } from "../html";
import { bare, errorBox } from "../layout";
import { PASSWORD_MIN } from "../../modules/users/service";

export function signInPage(opts: { csrf: string; email?: string; error?: string | null; notice?: string | null }) {
  return bare(
    "Sign in",
    html`<form class="card" method="post" action="/dashboard/sign-in">
  ${opts.notice ? html`<p class="notice" role="status">${opts.notice}</p>` : ""}
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${opts.email ?? ""}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <p><button type="submit">Sign in</button></p>
  <p class="hint">Forgot it? On the server run <code>pigeon users set-password --email you@example.com</code>.</p>
</form>`,
  );
}

export function setupPage(opts: { csrf: string; token: string; email?: string; error?: string | null }) {
  return bare(
    "Set up Pigeon",
    html`<form class="card" method="post" action="/dashboard/setup">
  <p>Choose the email and password you will sign in with. You become the owner of this server's account.</p>
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  <input type="hidden" name="token" value="${opts.token}">
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${opts.email ?? ""}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" minlength="${PASSWORD_MIN}" required aria-describedby="password-hint">
  <p class="hint" id="password-hint">At least ${PASSWORD_MIN} characters.</p>
  <label for="confirm">Password again</label>
  <input id="confirm" name="confirm" type="password" autocomplete="new-password" required>
  <p><button type="submit">Create my user</button></p>
</form>`,
  );
}

export function setupInvalidPage() {
  return bare(
    "Setup link not valid",
    html`<div class="card"><p>This setup link has expired or was already used.</p>
<p>Restart the server for a new link (printed while no user exists), or create a user on the server:
<code>pigeon users create --email you@example.com</code>, then <a href="/dashboard/sign-in">sign in</a>.</p></div>`,
  );
}
