// The resources an agent reads and subscribes to: a conversation as text (pigeon://threads/{id}),
// a template (pigeon://templates/{id}) and one sent message's status (pigeon://messages/{id}, so an
// agent learns when an approval was decided). Read through the API like the tools; what changed is
// told by a resource's fingerprint, compared by whoever watches it (watch.ts).
import { ProtocolError, ResourceNotFoundError } from "@modelcontextprotocol/server";
import { dataOr, isRefusal, type Refusal } from "./kit";
import type { ApiCall } from "./port";

export const RESOURCE_KINDS = ["threads", "templates", "messages"] as const;
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

/** The kind and id a pigeon:// URI names, or null when it names none of ours. */
export function parseResourceUri(uri: string): { kind: ResourceKind; id: number } | null {
  const m = /^pigeon:\/\/(threads|templates|messages)\/([1-9][0-9]{0,15})$/.exec(uri);
  return m ? { kind: m[1] as ResourceKind, id: Number(m[2]) } : null;
}

/** A refusal as the protocol error a failed resources/read is (the resource's absence as its own). */
function readFailure(uri: string, refusal: Refusal): ProtocolError {
  if (refusal.status === 404) return new ResourceNotFoundError(uri, refusal.message);
  return new ProtocolError(-32602, `${refusal.error_code}: ${refusal.message}`, { error_code: refusal.error_code, status: refusal.status });
}

interface ThreadMessage {
  message_id: number;
  direction: string;
  body: string;
  at: string;
  status: string | null;
}

/** A conversation as text, oldest first: one line a message, its time, direction and (for a send) its status. */
export function threadText(data: Record<string, unknown>): string {
  const thread = data.thread as {
    thread_id: number;
    channel: string;
    peer: string;
    peer_name: string | null;
    contact: { name: string } | null;
  };
  const who = thread.contact?.name ?? thread.peer_name ?? null;
  const lines = [`Conversation ${thread.thread_id} (${thread.channel}) with ${who ? `${who} ` : ""}${thread.peer}`];
  const messages = [...((data.messages ?? []) as ThreadMessage[])].reverse();
  for (const m of messages) {
    const arrow = m.direction === "inbound" ? "<-" : "->";
    const status = m.direction === "inbound" ? "" : ` [${m.status ?? "unknown"}]`;
    lines.push(`${m.at} ${arrow} ${m.body}${status}`);
  }
  const total = (data.pagination as { total: number } | undefined)?.total ?? messages.length;
  if (total > messages.length) lines.push(`(${total - messages.length} older message(s) not shown; read_thread pages through them)`);
  return lines.join("\n");
}

/** How many messages of a thread its resource shows. */
const THREAD_TEXT_MESSAGES = 50;

/** Reads one resource through the API: its text and type. */
export async function readResource(api: ApiCall, uri: string): Promise<{ uri: string; mimeType: string; text: string }> {
  const parsed = parseResourceUri(uri);
  if (!parsed) throw new ResourceNotFoundError(uri, `${uri} is not a Pigeon resource`);
  if (parsed.kind === "threads") {
    const data = await dataOr(api("GET", `/v1/api/thread/${parsed.id}/messages`, { query: { limit: THREAD_TEXT_MESSAGES } }));
    if (isRefusal(data)) throw readFailure(uri, data);
    return { uri, mimeType: "text/plain", text: threadText(data) };
  }
  if (parsed.kind === "templates") {
    const data = await dataOr(api("GET", `/v1/api/template/${parsed.id}`));
    if (isRefusal(data)) throw readFailure(uri, data);
    const variables = (data.variables as string[] | undefined) ?? [];
    const text = `${data.name} (${data.channel}, ${data.status}; template_id ${data.template_id})\nvariables: ${variables.join(", ") || "none"}\n\n${data.body}`;
    return { uri, mimeType: "text/plain", text };
  }
  const data = await dataOr(api("GET", `/v1/api/notification/${parsed.id}`));
  if (isRefusal(data)) throw readFailure(uri, data);
  const { logs, ...message } = data;
  return {
    uri,
    mimeType: "application/json",
    text: JSON.stringify({ ...message, awaiting_approval: message.status === "awaiting_approval", logs }),
  };
}

/** What tells a change of a resource when read through the API (for `pigeon mcp`, which has no other way). */
export async function fingerprintVia(api: ApiCall, uri: string): Promise<string | null> {
  const parsed = parseResourceUri(uri);
  if (!parsed) return null;
  if (parsed.kind === "threads") {
    const data = await dataOr(api("GET", `/v1/api/thread/${parsed.id}/messages`, { query: { limit: 1 } }));
    if (isRefusal(data)) return null;
    const top = (data.messages as ThreadMessage[])[0];
    return `${(data.pagination as { total: number }).total}:${top?.message_id ?? 0}`;
  }
  const path = parsed.kind === "templates" ? `/v1/api/template/${parsed.id}` : `/v1/api/notification/${parsed.id}`;
  const data = await dataOr(api("GET", path));
  if (isRefusal(data)) return null;
  return `${data.status}:${data.updated_at}`;
}

/** A page of each kind for resources/list: the recent threads, the templates, the recent messages. */
export async function listResources(api: ApiCall, kind: ResourceKind) {
  if (kind === "threads") {
    const data = await dataOr(api("GET", "/v1/api/thread/list", { query: { limit: 50 } }));
    if (isRefusal(data)) return [];
    return (data.threads as { thread_id: number; peer: string; peer_name: string | null; contact: { name: string } | null }[]).map(
      (th) => ({
        uri: `pigeon://threads/${th.thread_id}`,
        name: `Conversation with ${th.contact?.name ?? th.peer_name ?? th.peer}`,
        mimeType: "text/plain",
      }),
    );
  }
  if (kind === "templates") {
    const data = await dataOr(api("GET", "/v1/api/template/list", { query: { limit: 100 } }));
    if (isRefusal(data)) return [];
    return (data.templates as { template_id: number; name: string }[]).map((tp) => ({
      uri: `pigeon://templates/${tp.template_id}`,
      name: `Template ${tp.name}`,
      mimeType: "text/plain",
    }));
  }
  const data = await dataOr(api("GET", "/v1/api/notification/list", { query: { limit: 20 } }));
  if (isRefusal(data)) return [];
  return (data.notifications as { notification_id: number; recipient: string; status: string }[]).map((n) => ({
    uri: `pigeon://messages/${n.notification_id}`,
    name: `Message ${n.notification_id} to ${n.recipient} (${n.status})`,
    mimeType: "application/json",
  }));
}
