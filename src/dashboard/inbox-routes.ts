// The Inbox: conversations of both channels, one conversation (opening it marks it read), and a
// reply through the same send path as the API — on the chat-app channel a template once the
// 24-hour window has closed.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import type { SendInput } from "../modules/sending/types";
import { attachmentHeaders } from "../modules/threads/attachments";
import type { TemplateRow } from "../modules/templates/model";
import type { Services } from "../services-type";
import type { Kit, Signed } from "./kit";
import { conversationBody, inboxBody, replyVariables } from "./pages/inbox";
import { formOf, fragment, HIDDEN, redirect } from "./web";

const PAGE_SIZE = 30;

/** What these routes use of the services. */
export type DashboardInboxRoutesDeps = Pick<Services, "accounts" | "sending" | "storage" | "templates" | "threads">;

export function dashboardInboxRoutes(s: DashboardInboxRoutesDeps, kit: Kit) {
  /** A chat-app conversation's usable templates: active (approved) ones of its business number's workspace. */
  async function approvedTemplates(ws: number, channel: string): Promise<TemplateRow[]> {
    if (channel !== "chatapp") return [];
    return (await s.templates.records(ws, { channel: "chatapp", offset: 0, limit: 500 })).rows.filter((t) => t.status === "active");
  }

  async function conversation(
    who: Signed,
    id: number,
    status = 200,
    reply: { template?: string; vars?: Record<string, string>; text?: string; error?: string } = {},
  ) {
    const ws = who.session.workspaceId;
    const conv = await s.threads.messages(ws, id, 1, 50);
    const templates = await approvedTemplates(ws, conv.thread.channel);
    const chosen = templates.find((t) => String(t.id) === reply.template) ?? null;
    const title = conv.thread.peer_name ?? conv.thread.contact?.name ?? conv.thread.peer;
    const body = conversationBody({
      conv,
      csrf: who.viewer.csrf,
      templates,
      chosen,
      vars: reply.vars ?? {},
      text: reply.text ?? "",
      error: reply.error,
    });
    return kit.shell(who, title, "/dashboard/inbox", body, status);
  }

  return new Elysia({ name: "pigeon-dashboard-inbox" })
    .use(declaredAuth())
    .get(
      "/dashboard/inbox",
      kit.withSession(async ({ request }, who) => {
        const q = new URL(request.url).searchParams;
        const unreadOnly = q.get("unread") === "1";
        const requested = Number(q.get("page") ?? "1");
        const page = Number.isSafeInteger(requested) && requested >= 1 ? requested : 1;
        const list = await s.threads.list(who.session.workspaceId, unreadOnly ? { unread: true } : {}, page, PAGE_SIZE);
        const pages = Math.max(1, Math.ceil(list.pagination.total / PAGE_SIZE));
        const pictures = await s.threads.newestPictures(
          who.session.workspaceId,
          list.threads.map((t) => t.thread_id),
        );
        return kit.shell(who, "Inbox", "/dashboard/inbox", inboxBody({ list, unreadOnly, page, pages, pictures }));
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/inbox/:id",
      kit.withSession(async ({ params }, who) => {
        const id = Number(params?.id);
        // Reading it is what marks it read (404 for another workspace's thread).
        await s.threads.markRead(who.session.workspaceId, id);
        return conversation(who, id);
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/inbox/:id/message/:message_id/attachment/:attachment_id",
      kit.withSession(async ({ params }, who) => {
        // The same bytes and headers as the API's route, under the session's workspace (404 for another's).
        const ids = [params?.id, params?.message_id, params?.attachment_id].map((p) => (/^[1-9]\d{0,15}$/.test(String(p)) ? Number(p) : 0));
        if (ids.includes(0)) throw new AppError("not_found", "attachment not found");
        const a = await s.threads.attachment(who.session.workspaceId, ids[0], ids[1], ids[2]);
        return new Response(a.data, { headers: attachmentHeaders(a) });
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/inbox/:id/template",
      kit.withSession(async ({ params, request }, who) => {
        const ws = who.session.workspaceId;
        const thread = (await s.threads.messages(ws, Number(params?.id), 1, 1)).thread;
        const chosen =
          (await approvedTemplates(ws, thread.channel)).find((t) => String(t.id) === new URL(request.url).searchParams.get("template")) ??
          null;
        return fragment(replyVariables(chosen, {}));
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/inbox/:id/reply",
      kit.withSession(async ({ params, body }, who) => {
        const ws = who.session.workspaceId;
        const id = Number(params?.id);
        const thread = (await s.threads.messages(ws, id, 1, 1)).thread;
        const form = formOf(body);
        const vars: Record<string, string> = {};
        for (const [k, v] of Object.entries(form)) if (k.startsWith("var_")) vars[k.slice(4)] = v;
        const closed = thread.window !== null && !thread.window.open;
        const input: SendInput = {
          channel: thread.channel,
          recipient: thread.peer,
          message: closed ? null : (form.message ?? ""),
          templateId: closed ? form.template || null : null,
          variables: closed ? vars : null,
          recipientName: thread.peer_name,
          deviceId: thread.device_id,
        };
        try {
          if (closed && !input.templateId) throw new AppError("use_template", "The 24-hour window is closed: choose an approved template");
          const caller = await s.accounts.callerFor(ws);
          const prepared = await s.sending.prepare(caller, input);
          const [result] = await s.storage.transaction(() => s.sending.accept(caller, [prepared]));
          if (!result.ok) throw result.error;
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          return conversation(who, id, error.status, { template: form.template, vars, text: form.message, error: error.message });
        }
        return redirect(`/dashboard/inbox/${id}`);
      }),
      { auth: "session", ...HIDDEN },
    );
}
