// The outbox writes: an event row and one pending delivery per subscription that wants it. Run on
// every state change of every notification, so the statements are prepared once.
import type { Database, Statement } from "bun:sqlite";
import type { event, webhookSubscription } from "../../db/schema";

/** `events` stays the stored JSON text here; the service decides what a subscriber wants. */
type Subscriber = Pick<typeof webhookSubscription.$inferSelect, "id"> & { events: string };
type EventRow = Omit<typeof event.$inferSelect, "data"> & { data: string };

export function createEventRepository(sqlite: Database) {
  const insertEvent = sqlite.prepare<never, [string, number, string, string, number]>(
    "INSERT INTO event (id, workspace_id, type, data, created_at) VALUES (?, ?, ?, ?, ?)",
  );
  const subscribers: Statement<Subscriber, [number]> = sqlite.prepare(
    // Failing subscriptions keep receiving deliveries: they wait, paused, until it is re-enabled.
    "SELECT id, events FROM webhook_subscription WHERE workspace_id = ? AND status IN ('active', 'failing') AND deleted_at IS NULL",
  );
  const insertDelivery = sqlite.prepare<never, [string, number, string, number, number]>(
    "INSERT INTO webhook_delivery (id, subscription_id, event_id, status, attempts, next_attempt_at, created_at) VALUES (?, ?, ?, 'pending', 0, ?, ?)",
  );

  return {
    insertEvent(row: EventRow): void {
      insertEvent.run(row.id, row.workspaceId, row.type, row.data, row.createdAt);
    },
    /** The workspace's subscriptions that receive deliveries (active or failing, not deleted). */
    subscribersOf: (workspaceId: number): Subscriber[] => subscribers.all(workspaceId),
    /** A pending delivery, due at once. */
    insertDelivery(id: string, subscriptionId: number, eventId: string, now: number): void {
      insertDelivery.run(id, subscriptionId, eventId, now, now);
    },
    /** Runs `fn` in one synchronous transaction (nested in the caller's, if any). */
    transaction<T>(fn: () => T): T {
      return sqlite.transaction(fn)();
    },
  };
}

export type EventRepository = ReturnType<typeof createEventRepository>;
