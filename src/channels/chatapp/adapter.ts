// The chat-app channel's sender: builds the platform's message body (text, or a template with its
// header and body parameters), posts it, and sorts the answer into our outcome classes. A template
// the platform no longer knows (132001) is healed once: re-fetch the templates, retry once.
import type { DeviceRow } from "../../modules/devices/model";
import type { NotificationRecord } from "../../modules/notifications/state";
import type { TemplateRow } from "../../modules/templates/model";
import type { ChannelAdapter, DispatchOutcome } from "../types";
import { classifyPlatformCode } from "./errors";
import { GraphError, GraphUnreachable, type GraphClient } from "./graph";

export interface ChatappConfig {
  phoneNumberId: string;
  businessAccountId: string;
  accessToken: string;
  displayPhoneNumber: string;
  verifiedName: string | null;
  /** When the number was last relinked: a blocked number may send again to prove it is fixed. */
  relinkedAt: number | null;
}

export function chatappConfigOf(config: unknown): ChatappConfig | null {
  const c = config as Partial<ChatappConfig> | null;
  if (!c || typeof c.phoneNumberId !== "string" || typeof c.accessToken !== "string" || typeof c.businessAccountId !== "string")
    return null;
  return {
    phoneNumberId: c.phoneNumberId,
    businessAccountId: c.businessAccountId,
    accessToken: c.accessToken,
    displayPhoneNumber: c.displayPhoneNumber ?? "",
    verifiedName: c.verifiedName ?? null,
    relinkedAt: c.relinkedAt ?? null,
  };
}

export interface HeaderMedia {
  type: "image" | "video" | "document";
  link: string;
  filename?: string;
}

interface Component {
  type: string;
  format?: string;
  text?: string;
}

const placeholders = (text: string | undefined) => new Set([...(text ?? "").matchAll(/\{\{(\d+)\}\}/g)].map((m) => m[1])).size;

/** How many of a template's numbered values go to its text header (the rest fill the body). */
export function headerParamCount(components: unknown[] | null): number {
  const header = (components as Component[] | null)?.find((c) => c.type.toUpperCase() === "HEADER");
  return header && (header.format ?? "TEXT").toUpperCase() === "TEXT" ? placeholders(header.text) : 0;
}

/** The platform body for a notification: a template with its parameters, or freeform text. */
export function messageBody(n: NotificationRecord, template: TemplateRow | null): Record<string, unknown> {
  const base = { messaging_product: "whatsapp", recipient_type: "individual", to: n.recipient };
  if (!template) return { ...base, type: "text", text: { body: n.message, preview_url: false } };
  const vars = n.templateVars ?? {};
  const values = Object.keys(vars)
    .sort((a, b) => Number(a) - Number(b))
    .map((k) => vars[k]);
  const headerCount = headerParamCount(template.components);
  const components: Record<string, unknown>[] = [];
  const header = (template.components as Component[] | null)?.find((c) => c.type.toUpperCase() === "HEADER");
  const media = ((n.channelPayload as { media?: HeaderMedia } | null)?.media ?? null) as HeaderMedia | null;
  if (headerCount > 0) {
    components.push({ type: "header", parameters: values.slice(0, headerCount).map((text) => ({ type: "text", text })) });
  } else if (header && media && ["IMAGE", "VIDEO", "DOCUMENT"].includes((header.format ?? "").toUpperCase())) {
    const object = { link: media.link, ...(media.type === "document" && media.filename ? { filename: media.filename } : {}) };
    components.push({ type: "header", parameters: [{ type: media.type, [media.type]: object }] });
  }
  const bodyValues = values.slice(headerCount);
  if (bodyValues.length > 0) components.push({ type: "body", parameters: bodyValues.map((text) => ({ type: "text", text })) });
  return {
    ...base,
    type: "template",
    template: { name: template.name, language: { code: template.language ?? "en_US" }, ...(components.length ? { components } : {}) },
  };
}

export interface ChatappAdapterDeps {
  graph: GraphClient;
  templateById: (id: number) => Promise<TemplateRow | null>;
  templatesByIds: (ids: readonly number[]) => Promise<TemplateRow[]>;
  /** Re-fetches a business account's templates (the 132001 self-heal). */
  refreshTemplates: (device: DeviceRow) => Promise<void>;
  /** An outcome decided without calling the platform (a blocked number), or null to go ahead. */
  preflight: (device: DeviceRow) => DispatchOutcome | null;
}

export function outcomeOfGraphError(error: unknown): DispatchOutcome {
  if (error instanceof GraphUnreachable) {
    // A send cut off mid-call may have reached the platform, which cannot be asked afterwards.
    return error.timedOut
      ? { kind: "uncertain", reason: error.message }
      : { kind: "retryable", code: "network_error", reason: error.message };
  }
  if (!(error instanceof GraphError)) return { kind: "uncertain", reason: String(error) };
  if (error.code === null) {
    return error.status >= 500
      ? { kind: "retryable", code: `http_${error.status}`, reason: error.message }
      : { kind: "permanent", code: `http_${error.status}`, reason: error.message };
  }
  const info = classifyPlatformCode(error.code);
  const reason = `${info.title}${error.details ? `: ${error.details}` : ""}`;
  const code = String(error.code);
  switch (info.cls) {
    case "retry":
      return { kind: "retryable", code, reason };
    case "throttle":
      return { kind: "throttled", reason: `${code} ${reason}` };
    case "block":
      return { kind: "permanent", code, reason, block: true };
    default:
      return { kind: "permanent", code, reason };
  }
}

export function createChatappAdapter(deps: ChatappAdapterDeps): ChannelAdapter {
  // The templates of a claimed batch's calls, read in one statement before them (prepare), each
  // taken by its call's first try; a call finding none, and a second try, read their own.
  const prepared = new Map<number, TemplateRow>();

  async function post(n: NotificationRecord, device: DeviceRow, kept?: TemplateRow): Promise<DispatchOutcome> {
    const config = chatappConfigOf(device.config);
    if (!config) return { kind: "permanent", code: "device_not_configured", reason: `chat-app device ${device.id} is not connected` };
    const template = n.templateId === null ? null : kept?.id === n.templateId ? kept : await deps.templateById(n.templateId);
    try {
      const r = await deps.graph.sendMessage(config.accessToken, config.phoneNumberId, messageBody(n, template));
      const wamid = r.messages?.[0]?.id;
      if (!wamid) return { kind: "uncertain", reason: "the platform answered without a message id" };
      const held = r.messages?.[0]?.message_status === "held_for_quality_assessment" ? " (held for quality assessment)" : "";
      return { kind: "accepted", externalId: wamid, detail: `platform accepted as ${wamid}${held}` };
    } catch (error) {
      return outcomeOfGraphError(error);
    }
  }

  return {
    async prepare(batch) {
      const ids = [...new Set(batch.flatMap((n) => (n.templateId === null ? [] : [n.templateId])))];
      const found = new Map((await deps.templatesByIds(ids)).map((t) => [t.id, t]));
      // Calls that never came (a stop released them) leave theirs behind: a bound on what is kept.
      if (prepared.size > 10_000) prepared.clear();
      for (const n of batch) if (n.templateId !== null && found.has(n.templateId)) prepared.set(n.id, found.get(n.templateId)!);
    },
    async send(n, device) {
      const kept = prepared.get(n.id);
      prepared.delete(n.id);
      const refused = deps.preflight(device);
      if (refused) return refused;
      const first = await post(n, device, kept);
      if (first.kind === "permanent" && first.code === "132001" && n.templateId !== null) {
        // The platform does not know the template (renamed, re-approved in another language):
        // fetch the templates again and try once more.
        try {
          await deps.refreshTemplates(device);
        } catch {
          return first;
        }
        const second = await post(n, device);
        if (second.kind === "accepted") return { ...second, detail: `${second.detail} after re-fetching the templates (132001)` };
        return second;
      }
      return first;
    },
  };
}
