// The page shell: head with the embedded assets, the top bar (workspace, user, sign out), the
// navigation and a skip link; and the bare shell of the signed-out pages.
import { ASSETS } from "./assets";
import { html, type Html } from "./html";

export interface Viewer {
  email: string;
  role: "owner" | "member";
  workspaceName: string;
  /** The account's workspaces, for the switcher (shown when there is more than one). */
  workspaces: { id: number; name: string; current: boolean }[];
  csrf: string;
}

export interface NavLink {
  path: string;
  label: string;
}
export interface NavGroup {
  label: string;
  items: NavLink[];
}

/** The navigation: Overview, then groups that open as a menu (one row on a desktop; behind a Menu button on a phone). */
export const NAV: (NavLink | NavGroup)[] = [
  { path: "/dashboard", label: "Overview" },
  {
    label: "Sending",
    items: [
      { path: "/dashboard/send", label: "Send" },
      { path: "/dashboard/messages", label: "Messages" },
      { path: "/dashboard/approvals", label: "Approvals" },
      { path: "/dashboard/inbox", label: "Inbox" },
      { path: "/dashboard/templates", label: "Templates" },
    ],
  },
  {
    label: "Audience",
    items: [
      { path: "/dashboard/contacts", label: "Contacts" },
      { path: "/dashboard/optouts", label: "Opt-outs" },
      { path: "/dashboard/safety", label: "Safe sending" },
      { path: "/dashboard/rules", label: "Rules" },
    ],
  },
  {
    label: "Devices",
    items: [
      { path: "/dashboard/devices", label: "Devices" },
      { path: "/dashboard/pools", label: "Pools" },
    ],
  },
  {
    label: "Settings",
    items: [
      { path: "/dashboard/keys", label: "API keys" },
      { path: "/dashboard/webhooks", label: "Webhooks" },
      { path: "/dashboard/email", label: "Email" },
      { path: "/dashboard/credits", label: "Credits" },
      { path: "/dashboard/account", label: "Account" },
    ],
  },
];

const navLink = (item: NavLink, current: string) =>
  html`<li><a href="${item.path}"${item.path === current ? html` aria-current="page"` : ""}>${item.label}</a></li>`;

/**
 * Each group is a disclosure (details/summary, one open at a time), so it opens without a script;
 * app.js adds the phone's Menu button (hidden until then), and Escape, a click elsewhere or focus
 * moving on closes an open group.
 */
function nav(current: string): Html {
  return html`<nav class="main" aria-label="Main">
  <button type="button" class="nav-toggle secondary" aria-expanded="false" aria-controls="nav-menu" hidden>Menu</button>
  <ul id="nav-menu">${NAV.map((entry) =>
    "items" in entry
      ? html`<li class="group"><details name="nav-group"><summary>${entry.label}</summary><ul>${entry.items.map((item) => navLink(item, current))}</ul></details></li>`
      : navLink(entry, current),
  )}</ul>
</nav>`;
}

function head(title: string, csrf: string | null): Html {
  return html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content='{"allowEval":false,"includeIndicatorStyles":false,"allowScriptTags":false}'>
${csrf ? html`<meta name="csrf-token" content="${csrf}">` : ""}
<title>${title} · Pigeon</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS.css.path}">
<script src="${ASSETS.htmx.path}" defer></script>
<script src="${ASSETS.app.path}" defer></script>
</head>`;
}

export function layout(opts: { title: string; current: string; viewer: Viewer; body: Html }): Html {
  const { title, current, viewer, body } = opts;
  return html`<html lang="en">
${head(title, viewer.csrf)}
<body>
<a class="skip" href="#content">Skip to content</a>
<header class="top">
  <a class="brand" href="/dashboard">Pigeon</a>
  <span class="who">${viewer.workspaceName} · ${viewer.email} (${viewer.role})</span>
  ${
    viewer.workspaces.length > 1
      ? html`<form class="inline switcher" method="post" action="/dashboard/workspace">
    <input type="hidden" name="_csrf" value="${viewer.csrf}">
    <label class="visually-hidden" for="ws-switch">Workspace</label>
    <select id="ws-switch" name="workspace_id">${viewer.workspaces.map((w) => html`<option value="${w.id}"${w.current ? html` selected` : ""}>${w.name}</option>`)}</select>
    <button class="secondary" type="submit">Switch</button>
  </form>`
      : ""
  }
  <form class="inline" method="post" action="/dashboard/sign-out">
    <input type="hidden" name="_csrf" value="${viewer.csrf}">
    <button class="link" type="submit">Sign out</button>
  </form>
</header>
${nav(current)}
<main id="content">
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
}

/** Sign-in, setup and error pages: no navigation. */
export function bare(title: string, body: Html): Html {
  return html`<html lang="en">
${head(title, null)}
<body>
<main id="content" class="narrow">
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
}

export const errorBox = (message: string | null | undefined) => (message ? html`<p class="error" role="alert">${message}</p>` : "");

/** Links to the page before and after this one, where there is one. */
export function pager(
  page: number,
  pages: number,
  link: (page: number) => string,
  labels: [before: string, after: string] = ["Previous page", "Next page"],
): Html {
  return html`<nav aria-label="Pages" class="actions">
  ${page > 1 ? html`<a class="button secondary" href="${link(page - 1)}">${labels[0]}</a>` : ""}
  ${page < pages ? html`<a class="button secondary" href="${link(page + 1)}">${labels[1]}</a>` : ""}
</nav>`;
}

/** A time as pages show it, in UTC: "YYYY-MM-DD HH:MM" (with seconds if asked); "" for none. */
export function utcTime(t: number | string | null | undefined, seconds = false): string {
  if (t === null || t === undefined) return "";
  const iso = typeof t === "number" ? new Date(t).toISOString() : t;
  return iso.replace("T", " ").slice(0, seconds ? 19 : 16);
}
