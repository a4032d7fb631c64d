// An inbound message on either channel: into its thread, and out as a message.received event, in
// the caller's transaction.
import type { DeliveryType } from "../../core/kinds";
import type { DataMessage } from "../../lib/data-sms";
import type { ThreadMeta } from "./schema";
import { iso } from "../../lib/time";
import type { EventService } from "../events/service";
import type { ThreadStore } from "./ports";

export interface Inbound {
  workspaceId: number;
  channel: DeliveryType;
  /** The device it arrived on; chat-app threads are per business number. */
  deviceId: number;
  from: string;
  fromName?: string | null;
  body: string;
  externalId: string | null;
  at: number;
  /** An inbound MMS's headers and attachments, or a data SMS's bytes, kept with the message. */
  meta?: ThreadMeta | null;
  /** A data SMS (its body is empty): no keyword matches it, and only rules that match any message. */
  dataMessage?: DataMessage | null;
  /** The SIM of a paired phone it arrived on, when the app says (sender pools keep the sender on it). */
  simNumber?: number | null;
  /** A phone re-posting its inbox: the same sender, time and text is the same message. */
  sameContentIsDuplicate?: boolean;
  /** Extra fields for the event (e.g. the chat-app message type). */
  extra?: Record<string, unknown>;
}

/**
 * What happens to a new inbound message before it is announced (the opt-out keywords), given the
 * thread message it became. Runs in the caller's transaction.
 */
export type InboundHook = (m: Inbound, stored: { threadId: number; messageId: number }) => Promise<void>;

/**
 * Stores the message unless the channel delivered it before; if new, hands it to the hook (the
 * keywords are matched before anything else hears of it), then announces it. Answers where it
 * was stored, or null for a repeat.
 */
export async function recordInbound(
  threads: ThreadStore,
  events: EventService,
  m: Inbound,
  hook?: InboundHook,
): Promise<{ threadId: number; messageId: number } | null> {
  const added = await threads.add({
    workspaceId: m.workspaceId,
    channel: m.channel,
    threadDeviceId: m.channel === "chatapp" ? m.deviceId : 0,
    peer: m.from,
    peerName: m.fromName ?? null,
    direction: "inbound",
    body: m.body,
    deviceId: m.deviceId,
    externalId: m.externalId,
    meta: m.meta ?? null,
    sameContentIsDuplicate: m.sameContentIsDuplicate,
    at: m.at,
  });
  if (!added) return null;
  await hook?.(m, { threadId: added.thread.id, messageId: added.messageId });
  await events.emit(m.workspaceId, "message.received", {
    thread_id: added.thread.id,
    message_id: added.messageId,
    channel: m.channel,
    from: m.from,
    ...(m.fromName !== undefined ? { from_name: m.fromName } : {}),
    body: m.body,
    ...m.extra,
    received_at: iso(m.at),
    device_id: m.deviceId,
    contact_id: added.thread.contactId,
  });
  return { threadId: added.thread.id, messageId: added.messageId };
}
