// Inbox: every conversation of both channels, newest first, with unread counts; one conversation
// in order with both directions and each sent message's live status, and a reply box — on the
// chat-app channel a free text only inside the 24-hour window, else the approved templates.
import type { ThreadService } from "../../modules/threads/service";
import type { TemplateRow } from "../../modules/templates/model";
import { html, type Html } from "../html";
import { errorBox, pager, utcTime } from "../layout";

type ThreadList = Awaited<ReturnType<ThreadService["list"]>>;
type Conversation = Awaited<ReturnType<ThreadService["messages"]>>;

const when = (t: string | null) => utcTime(t);

export function inboxBody(opts: { list: ThreadList; unreadOnly: boolean; page: number; pages: number }): Html {
  const { threads } = opts.list;
  return html`<p class="actions">
  <a class="button${opts.unreadOnly ? " secondary" : ""}" href="/dashboard/inbox"${opts.unreadOnly ? "" : html` aria-current="page"`}>All</a>
  <a class="button${opts.unreadOnly ? "" : " secondary"}" href="/dashboard/inbox?unread=1"${opts.unreadOnly ? html` aria-current="page"` : ""}>Unread</a>
</p>
${
  threads.length === 0
    ? html`<p class="empty">${opts.unreadOnly ? "Nothing unread." : "No conversations yet: replies and received messages appear here."}</p>`
    : html`<ul class="threads">${threads.map(
        (t) => html`<li class="card${t.unread_count > 0 ? " unread" : ""}"><a href="/dashboard/inbox/${t.thread_id}">
  <strong>${t.peer_name ?? t.contact?.name ?? t.peer}</strong> <span class="hint">${t.peer} · ${t.channel === "sms" ? "SMS" : "chat-app"}</span>
  ${t.unread_count > 0 ? html`<span class="badge pending">${t.unread_count} unread</span>` : ""}
  <br><span class="hint">${when(t.last_message_at)} UTC · ${t.last_message.direction === "inbound" ? "" : "You: "}${t.last_message.body}</span></a></li>`,
      )}</ul>`
}
${pager(opts.page, opts.pages, (n) => `/dashboard/inbox?page=${n}${opts.unreadOnly ? "&unread=1" : ""}`, ["Newer", "Older"])}`;
}

export function conversationBody(opts: {
  conv: Conversation;
  csrf: string;
  templates: TemplateRow[];
  chosen: TemplateRow | null;
  vars: Record<string, string>;
  text: string;
  error?: string | null;
}): Html {
  const t = opts.conv.thread;
  const messages = [...opts.conv.messages].reverse();
  const closed = t.window !== null && !t.window.open;
  return html`<p class="hint">${t.peer} · ${t.channel === "sms" ? "SMS" : "chat-app"}${
    t.window
      ? t.window.open
        ? ` · the 24-hour window is open until ${when(t.window.expires_at)} UTC`
        : " · the 24-hour window is closed: only an approved template can be sent"
      : ""
  }</p>
<ol class="conversation" data-live aria-label="Messages, oldest first">
${messages.map(
  (m) =>
    html`<li class="bubble ${m.direction}"><span class="visually-hidden">${m.direction === "inbound" ? "They wrote" : "You wrote"}: </span>${m.body}${
      m.mms
        ? html`<br><span class="hint">MMS${m.mms.subject ? `: ${m.mms.subject}` : ""}${m.mms.attachments.length ? ` · ${m.mms.attachments.map((a) => `${a.name ?? a.content_type} (${a.size ?? "?"} bytes)`).join(", ")}` : ""}</span>`
        : ""
    }${
      "data_message" in m && m.data_message
        ? html`<span class="hint">Data SMS to port ${m.data_message.port}: ${m.data_message.data}</span>`
        : ""
    }<br><span class="hint">${when(m.at)} UTC${
      m.direction === "outbound" && m.notification_id !== null
        ? html` · <span class="badge ${m.status ?? ""}" data-status-for="${m.notification_id}">${m.status ?? ""}</span>`
        : ""
    }</span></li>`,
)}
</ol>
<form class="card" method="post" action="/dashboard/inbox/${t.thread_id}/reply" aria-label="Answer this conversation">
  ${errorBox(opts.error)}
  <input type="hidden" name="_csrf" value="${opts.csrf}">
  ${
    closed
      ? html`<label for="reply-template">Approved template</label>
  <select id="reply-template" name="template" hx-get="/dashboard/inbox/${t.thread_id}/template" hx-include="closest form" hx-trigger="change" hx-target="#reply-vars" hx-swap="innerHTML" required>
    <option value="">Choose a template</option>
    ${opts.templates.map((tp) => html`<option value="${tp.id}"${opts.chosen?.id === tp.id ? html` selected` : ""}>${tp.name} (${tp.language ?? ""})</option>`)}
  </select>
  <div id="reply-vars">${replyVariables(opts.chosen, opts.vars)}</div>
  ${opts.templates.length === 0 ? html`<p class="hint">No approved template yet: create one on the platform, then it syncs here.</p>` : ""}`
      : html`<label for="reply-text">Reply</label><textarea id="reply-text" name="message" rows="3" required maxlength="4000">${opts.text}</textarea>`
  }
  <p><button type="submit">Send reply</button></p>
</form>
<p class="actions"><a href="/dashboard/inbox">Back to the inbox</a> <a class="button danger" href="/dashboard/privacy/erase?phone=${encodeURIComponent(t.peer)}&amp;back=/dashboard/inbox/${t.thread_id}">Erase all data about ${t.peer}</a></p>`;
}

/** One input per variable of the chosen template (chat-app templates number them). */
export function replyVariables(template: TemplateRow | null, vars: Record<string, string>): Html {
  if (!template) return html``;
  return html`<p class="hint">${template.body}</p>${template.variables.map(
    (v) => html`<label for="rv-${v}">Variable ${v}</label><input id="rv-${v}" name="var_${v}" required value="${vars[v] ?? ""}">`,
  )}`;
}
