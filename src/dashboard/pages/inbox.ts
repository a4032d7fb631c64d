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

/** Where the dashboard serves a thread message's attachment, under the session's workspace. */
export const dashboardAttachmentPath = (threadId: number, messageId: number, attachmentId: number) =>
  `/dashboard/inbox/${threadId}/message/${messageId}/attachment/${attachmentId}`;

/** A picture's text alternative: who sent it, and its name when it has one. */
const pictureAlt = (sender: string, name: string | null) => `Picture from ${sender}${name ? `: ${name}` : ""}`;

export function inboxBody(opts: {
  list: ThreadList;
  unreadOnly: boolean;
  page: number;
  pages: number;
  /** The first picture of a thread's newest message, by thread id. */
  pictures: Map<number, { id: number; threadMessageId: number; name: string | null }>;
}): Html {
  const { threads } = opts.list;
  const thumb = (t: ThreadList["threads"][number]) => {
    const p = opts.pictures.get(t.thread_id);
    return p
      ? html`<img class="thumb" src="${dashboardAttachmentPath(t.thread_id, p.threadMessageId, p.id)}" alt="${pictureAlt(t.peer_name ?? t.contact?.name ?? t.peer, p.name)}" width="48" height="48" loading="lazy">`
      : "";
  };
  return html`<p class="actions">
  <a class="button${opts.unreadOnly ? " secondary" : ""}" href="/dashboard/inbox"${opts.unreadOnly ? "" : html` aria-current="page"`}>All</a>
  <a class="button${opts.unreadOnly ? "" : " secondary"}" href="/dashboard/inbox?unread=1"${opts.unreadOnly ? html` aria-current="page"` : ""}>Unread</a>
</p>
${
  threads.length === 0
    ? html`<p class="empty">${opts.unreadOnly ? "Nothing unread." : "No conversations yet: replies and received messages appear here."}</p>`
    : html`<ul class="threads">${threads.map(
        (t) => html`<li class="card${t.unread_count > 0 ? " unread" : ""}"><a href="/dashboard/inbox/${t.thread_id}">${thumb(t)}
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
      m.mms ? html`<br><span class="hint">MMS${m.mms.subject ? `: ${m.mms.subject}` : ""}</span>${attachmentsOf(t, m)}` : ""
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

/**
 * A received MMS's parts in its bubble: pictures shown (from the dashboard's own route, the same
 * bytes and headers as the API's), every other part a download link, and the parts not kept named
 * with why.
 */
function attachmentsOf(t: Conversation["thread"], m: Conversation["messages"][number]): Html {
  const sender = t.peer_name ?? t.contact?.name ?? t.peer;
  const parts = m.attachments.map((a) => {
    const src = dashboardAttachmentPath(t.thread_id, m.message_id, a.attachment_id);
    return a.served_as.startsWith("image/")
      ? html`<img class="attachment" src="${src}" alt="${pictureAlt(sender, a.name)}" loading="lazy">`
      : html`<a class="attachment" href="${src}" download>${a.name ?? `attachment ${a.attachment_id}`} (${a.content_type}, ${a.size} bytes)</a>`;
  });
  const dropped = m.attachments_dropped.map((d) => `${d.name ?? d.content_type} (${d.reason.replace(/_/g, " ")})`);
  return html`${parts.length ? html`<span class="attachments">${parts}</span>` : ""}${
    dropped.length ? html`<br><span class="hint">Not kept: ${dropped.join(", ")}</span>` : ""
  }`;
}

/** One input per variable of the chosen template (chat-app templates number them). */
export function replyVariables(template: TemplateRow | null, vars: Record<string, string>): Html {
  if (!template) return html``;
  return html`<p class="hint">${template.body}</p>${template.variables.map(
    (v) => html`<label for="rv-${v}">Variable ${v}</label><input id="rv-${v}" name="var_${v}" required value="${vars[v] ?? ""}">`,
  )}`;
}
