// The outbox writes: an event row and one pending delivery per subscription that wants it, on
// every state change of every notification.
import { insertRows, type Executor } from "../../db/storage";

/** A subscription that may receive deliveries, with its event list parsed. */
export interface Subscriber {
  id: number;
  events: string[];
}

export interface NewEvent {
  id: string;
  workspaceId: number;
  type: string;
  /** The event's data as JSON text. */
  data: string;
  createdAt: number;
}

const SQL = {
  insertEvent: "INSERT INTO event (id, workspace_id, type, data, created_at, seq) VALUES (?, ?, ?, ?, ?, ?)",
  // Failing subscriptions keep receiving deliveries: they wait, paused, until it is re-enabled.
  subscribers:
    "SELECT id, events FROM webhook_subscription WHERE workspace_id = ? AND status IN ('active', 'failing') AND deleted_at IS NULL",
  insertDelivery:
    "INSERT INTO webhook_delivery (id, subscription_id, event_id, status, attempts, next_attempt_at, created_at, seq) VALUES (?, ?, ?, 'pending', 0, ?, ?, ?)",
};

const INSERT_EVENTS = "INSERT INTO event (id, workspace_id, type, data, created_at, seq) VALUES";
const INSERT_DELIVERIES =
  "INSERT INTO webhook_delivery (id, subscription_id, event_id, status, attempts, next_attempt_at, created_at, seq) VALUES";

/**
 * An event's or a delivery's place in insertion order: strictly increasing within this process, and starting
 * from the wall clock in microseconds so that a restarted server carries on above the last one.
 * Only rows of one millisecond are told apart by it, so replicas need no shared counter.
 */
let lastSeq = 0;
function nextSeq(): number {
  lastSeq = Math.max(lastSeq + 1, Date.now() * 1000);
  return lastSeq;
}

export function createEventRepository(db: Executor) {
  return {
    insertEvent: async (e: NewEvent) => void (await db.run(SQL.insertEvent, [e.id, e.workspaceId, e.type, e.data, e.createdAt, nextSeq()])),
    /** Several events at once, in their order (one statement on PostgreSQL). */
    insertEvents: async (events: readonly NewEvent[]) =>
      void (await insertRows(db, INSERT_EVENTS, events, (e) => [e.id, e.workspaceId, e.type, e.data, e.createdAt, nextSeq()])),
    /** Several pending deliveries at once, due at once. */
    insertDeliveries: async (rows: readonly { id: string; subscriptionId: number; eventId: string; now: number }[]) =>
      void (await insertRows(db, INSERT_DELIVERIES, rows, (d) => [d.id, d.subscriptionId, d.eventId, d.now, d.now, nextSeq()], {
        row: "(?, ?, ?, 'pending', 0, ?, ?, ?)",
      })),
    /** The workspace's subscriptions that receive deliveries (active or failing, not deleted). */
    subscribersOf: async (workspaceId: number): Promise<Subscriber[]> =>
      (await db.all<{ id: number; events: string }>(SQL.subscribers, [workspaceId])).map((r) => ({
        id: r.id,
        events: JSON.parse(r.events) as string[],
      })),
    /** A pending delivery, due at once. */
    insertDelivery: async (id: string, subscriptionId: number, eventId: string, now: number) =>
      void (await db.run(SQL.insertDelivery, [id, subscriptionId, eventId, now, now, nextSeq()])),
  };
}

export type EventRepository = ReturnType<typeof createEventRepository>;
