// Events customers subscribe to. emit() writes the event and one delivery per matching
// subscription in the caller's transaction — the same one as the change that caused it — so a
// crash can never keep the change and lose its event (an outbox). The webhook worker delivers.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { randomBase62 } from "../../lib/tokens";
import { createEventRepository } from "./repository";

export const EVENT_TYPES = [
  "notification.sent",
  "notification.delivered",
  "notification.failed",
  "notification.cancelled",
  "notification.awaiting_approval",
  "notification.approved",
  "message.received",
  "template.status",
  "device.offline",
  "device.online",
  "device.blocked",
  "device.unblocked",
  "device.unhealthy",
  "device.healthy",
  "device.ping",
  "message.mms_downloaded",
  "contact.opted_out",
  "contact.opted_in",
  "pool.member_paused",
  "pool.member_resumed",
] as const;

/** Beside the catalogue: a test event, and an inbound rule's match (sent only to that rule's webhook). */
export type EventType = (typeof EVENT_TYPES)[number] | "webhook.test" | "rule.matched";

export interface PigeonEvent {
  id: string;
  type: EventType;
  created_at: string;
  workspace_id: number;
  data: Record<string, unknown>;
}

export const newEventId = () => `evt_${randomBase62(24)}`;
export const newDeliveryId = () => `dlv_${randomBase62(24)}`;

export function eventEnvelope(
  id: string,
  type: EventType,
  workspaceId: number,
  createdAt: number,
  data: Record<string, unknown>,
): PigeonEvent {
  return { id, type, created_at: new Date(createdAt).toISOString(), workspace_id: workspaceId, data };
}

export function createEventService(storage: Storage, clock: Clock) {
  const repo = createEventRepository(storage);

  async function write(
    workspaceId: number,
    type: EventType,
    data: Record<string, unknown>,
    only: number | null,
  ): Promise<{ eventId: string; deliveryIds: string[] }> {
    const now = clock.now();
    const eventId = newEventId();
    const deliveryIds: string[] = [];
    await storage.transaction(async () => {
      await repo.insertEvent({ id: eventId, workspaceId, type, data: JSON.stringify(data), createdAt: now });
      const targets =
        only !== null ? [only] : (await repo.subscribersOf(workspaceId)).filter((sub) => wants(sub.events, type)).map((sub) => sub.id);
      for (const subscriptionId of targets) {
        const deliveryId = newDeliveryId();
        await repo.insertDelivery(deliveryId, subscriptionId, eventId, now);
        deliveryIds.push(deliveryId);
      }
    });
    return { eventId, deliveryIds };
  }

  /**
   * Several events at once, as emit writes each: their rows and their deliveries in a statement a
   * kind on PostgreSQL, each workspace's subscriptions read once. Call inside the causing unit.
   */
  async function emitMany(list: readonly { workspaceId: number; type: (typeof EVENT_TYPES)[number]; data: Record<string, unknown> }[]) {
    if (list.length === 0) return;
    const now = clock.now();
    const subscribers = new Map<number, { id: number; events: string[] }[]>();
    for (const workspaceId of new Set(list.map((e) => e.workspaceId))) subscribers.set(workspaceId, await repo.subscribersOf(workspaceId));
    const events = list.map((e) => ({
      id: newEventId(),
      workspaceId: e.workspaceId,
      type: e.type,
      data: JSON.stringify(e.data),
      createdAt: now,
    }));
    const deliveries = events.flatMap((e) =>
      subscribers
        .get(e.workspaceId)!
        .filter((sub) => wants(sub.events, e.type))
        .map((sub) => ({ id: newDeliveryId(), subscriptionId: sub.id, eventId: e.id, now })),
    );
    await storage.transaction(async () => {
      await repo.insertEvents(events);
      await repo.insertDeliveries(deliveries);
    });
  }

  return {
    emitMany,
    /** Records an event for every subscription that wants it; call inside the causing transaction. */
    emit: (workspaceId: number, type: (typeof EVENT_TYPES)[number], data: Record<string, unknown>) => write(workspaceId, type, data, null),
    /**
     * As emit, but writes nothing when no subscription wants the event: for frequent ones (a
     * phone's every health report) that would otherwise fill the event log unread.
     */
    async emitIfWanted(workspaceId: number, type: (typeof EVENT_TYPES)[number], data: Record<string, unknown>) {
      if (!(await repo.subscribersOf(workspaceId)).some((sub) => wants(sub.events, type))) return null;
      return write(workspaceId, type, data, null);
    },
    /** An event for one subscription only (an inbound rule's own webhook); inside the causing unit. */
    emitTo: (workspaceId: number, subscriptionId: number, type: "rule.matched", data: Record<string, unknown>) =>
      write(workspaceId, type, data, subscriptionId),
    /** A `webhook.test` event for one subscription. */
    emitTest: (workspaceId: number, subscriptionId: number, data: Record<string, unknown>) =>
      write(workspaceId, "webhook.test", data, subscriptionId),
  };
}

export function wants(events: string[], type: string): boolean {
  return events.includes("*") || events.includes(type);
}

export type EventService = ReturnType<typeof createEventService>;
