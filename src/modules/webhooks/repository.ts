// Webhook subscriptions, their deliveries (the outbox the worker polls) and the attempts of each,
// on the storage seam: the SQL is here, and rows become records in the domain's shape (camelCase,
// the event list parsed) before they leave this file.
import type { Executor } from "../../db/storage";
import type { DueDelivery, Subscription } from "./model";

type SubscriptionChange = Partial<
  Pick<Subscription, "url" | "events" | "description" | "secret" | "status" | "consecutiveFailures" | "failingSince">
> &
  Pick<Subscription, "updatedAt">;

export interface DeliveryListRow {
  id: string;
  eventId: string;
  type: string;
  status: "pending" | "delivering" | "delivered" | "failed";
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  deliveredAt: number | null;
}

export interface AttemptRow {
  at: number;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

interface SubscriptionDbRow {
  id: number;
  workspace_id: number;
  url: string;
  events: string;
  description: string;
  secret: string;
  status: Subscription["status"];
  consecutive_failures: number;
  failing_since: number | null;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
  format: Subscription["format"];
  external_id: string | null;
  smsgate_event: string | null;
  smsgate_device_id: number | null;
}

interface DeliveryDbRow {
  id: string;
  subscription_id: number;
  event_id: string;
  attempts: number;
  url: string;
  secret: string;
  format: Subscription["format"];
  external_id: string | null;
  smsgate_event: string | null;
  smsgate_device_id: number | null;
  workspace_id: number;
  type: string;
  data: string;
  event_created_at: number;
}

const toSubscription = (r: SubscriptionDbRow): Subscription => ({
  id: r.id,
  workspaceId: r.workspace_id,
  url: r.url,
  events: JSON.parse(r.events) as string[],
  description: r.description,
  secret: r.secret,
  status: r.status,
  consecutiveFailures: r.consecutive_failures,
  failingSince: r.failing_since,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deletedAt: r.deleted_at,
  format: r.format,
  externalId: r.external_id,
  smsgateEvent: r.smsgate_event,
  smsgateDeviceId: r.smsgate_device_id,
});

const toDelivery = (r: DeliveryDbRow): DueDelivery => ({
  id: r.id,
  subscriptionId: r.subscription_id,
  eventId: r.event_id,
  attempts: r.attempts,
  url: r.url,
  secret: r.secret,
  format: r.format,
  externalId: r.external_id,
  smsgateEvent: r.smsgate_event,
  smsgateDeviceId: r.smsgate_device_id,
  workspaceId: r.workspace_id,
  type: r.type,
  data: JSON.parse(r.data) as Record<string, unknown>,
  eventCreatedAt: r.event_created_at,
});

const SUBSCRIPTION =
  "SELECT id, workspace_id, url, events, description, secret, status, consecutive_failures, failing_since, created_at, " +
  "updated_at, deleted_at, format, external_id, smsgate_event, smsgate_device_id FROM webhook_subscription";
const DELIVERY =
  "SELECT d.id, d.subscription_id, d.event_id, d.attempts, s.url, s.secret, s.format, s.external_id, s.smsgate_event, " +
  "s.smsgate_device_id, e.workspace_id, e.type, e.data, e.created_at AS event_created_at " +
  "FROM webhook_delivery d JOIN webhook_subscription s ON s.id = d.subscription_id JOIN event e ON e.id = d.event_id";

/** The columns a subscription change may set, by the record's field name. */
const CHANGEABLE: Record<keyof SubscriptionChange, string> = {
  url: "url",
  events: "events",
  description: "description",
  secret: "secret",
  status: "status",
  consecutiveFailures: "consecutive_failures",
  failingSince: "failing_since",
  updatedAt: "updated_at",
};

const SQL = {
  // Deleted subscriptions stay as rows, hidden from everything here.
  subscription: `${SUBSCRIPTION} WHERE workspace_id = ? AND deleted_at IS NULL AND id = ?`,
  subscriptions: `${SUBSCRIPTION} WHERE workspace_id = ? AND deleted_at IS NULL ORDER BY id`,
  countSubscriptions: "SELECT count(*) AS n FROM webhook_subscription WHERE workspace_id = ? AND deleted_at IS NULL",
  insertSubscription:
    "INSERT INTO webhook_subscription (workspace_id, url, events, description, secret, status, created_at, updated_at, format, " +
    "external_id, smsgate_event, smsgate_device_id) VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?) RETURNING id",
  markSubscriptionDeleted: "UPDATE webhook_subscription SET deleted_at = ?, updated_at = ? WHERE id = ?",
  subscriptionSucceeded: "UPDATE webhook_subscription SET consecutive_failures = 0 WHERE id = ?",
  subscriptionFailedOnce: "UPDATE webhook_subscription SET consecutive_failures = consecutive_failures + 1 WHERE id = ?",
  markSubscriptionFailing:
    "UPDATE webhook_subscription SET status = 'failing', failing_since = ?, updated_at = ? WHERE id = ? AND status = 'active'",
  dueDeliveries:
    `${DELIVERY} WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND s.status = 'active' AND s.deleted_at IS NULL ` +
    "ORDER BY d.next_attempt_at, d.created_at, d.seq LIMIT ?",
  delivery: `${DELIVERY} WHERE d.id = ?`,
  claimDelivery:
    "UPDATE webhook_delivery SET status = 'delivering', attempts = attempts + 1, claimed_by = ? WHERE id = ? AND status = 'pending'",
  insertAttempt: "INSERT INTO webhook_attempt (delivery_id, at, status_code, latency_ms, error) VALUES (?, ?, ?, ?, ?)",
  markDelivered: "UPDATE webhook_delivery SET status = 'delivered', delivered_at = ?, last_status_code = ?, last_error = NULL WHERE id = ?",
  markRetry: "UPDATE webhook_delivery SET status = 'pending', next_attempt_at = ?, last_status_code = ?, last_error = ? WHERE id = ?",
  markGivenUp: "UPDATE webhook_delivery SET status = 'failed', last_status_code = ?, last_error = ? WHERE id = ?",
  deliveringIds: "SELECT id FROM webhook_delivery WHERE status = 'delivering'",
  releaseDelivering: "UPDATE webhook_delivery SET status = 'pending' WHERE id = ? AND status = 'delivering'",
  failPendingOf:
    "UPDATE webhook_delivery SET status = 'failed', last_error = 'subscription deleted' WHERE subscription_id = ? AND status IN ('pending', 'delivering')",
  resumePendingOf: "UPDATE webhook_delivery SET next_attempt_at = ? WHERE subscription_id = ? AND status = 'pending'",
  // Newest first; seq (insertion order) breaks ties within a millisecond.
  deliveriesOf:
    "SELECT d.id, d.event_id, e.type, d.status, d.attempts, d.next_attempt_at, d.created_at, d.delivered_at " +
    "FROM webhook_delivery d JOIN event e ON e.id = d.event_id WHERE d.subscription_id = ? ORDER BY d.created_at DESC, d.seq DESC LIMIT ? OFFSET ?",
  countDeliveriesOf: "SELECT count(*) AS n FROM webhook_delivery WHERE subscription_id = ?",
  attemptsOf: "SELECT at, status_code, latency_ms, error FROM webhook_attempt WHERE delivery_id = ? ORDER BY id",
};

export function createWebhookRepository(db: Executor) {
  return {
    async subscription(workspaceId: number, id: number): Promise<Subscription | null> {
      const row = await db.get<SubscriptionDbRow>(SQL.subscription, [workspaceId, id]);
      return row ? toSubscription(row) : null;
    },
    subscriptions: async (workspaceId: number): Promise<Subscription[]> =>
      (await db.all<SubscriptionDbRow>(SQL.subscriptions, [workspaceId])).map(toSubscription),
    countSubscriptions: async (workspaceId: number): Promise<number> =>
      (await db.get<{ n: number }>(SQL.countSubscriptions, [workspaceId]))!.n,
    async insertSubscription(
      row: Pick<Subscription, "workspaceId" | "url" | "events" | "description" | "secret" | "createdAt" | "updatedAt"> &
        Partial<Pick<Subscription, "format" | "externalId" | "smsgateEvent" | "smsgateDeviceId">>,
    ): Promise<Subscription> {
      const { id } = (await db.get<{ id: number }>(SQL.insertSubscription, [
        row.workspaceId,
        row.url,
        JSON.stringify(row.events),
        row.description,
        row.secret,
        row.createdAt,
        row.updatedAt,
        row.format ?? "pigeon",
        row.externalId ?? null,
        row.smsgateEvent ?? null,
        row.smsgateDeviceId ?? null,
      ]))!;
      return (await this.subscription(row.workspaceId, id))!;
    },
    async updateSubscription(id: number, change: SubscriptionChange): Promise<void> {
      const fields = Object.keys(change) as (keyof SubscriptionChange)[];
      const values = fields.map((f) => (f === "events" ? JSON.stringify(change.events) : (change[f] as string | number | null)));
      await db.run(`UPDATE webhook_subscription SET ${fields.map((f) => `${CHANGEABLE[f]} = ?`).join(", ")} WHERE id = ?`, [...values, id]);
    },
    markSubscriptionDeleted: async (id: number, now: number) => void (await db.run(SQL.markSubscriptionDeleted, [now, now, id])),
    subscriptionSucceeded: async (id: number) => void (await db.run(SQL.subscriptionSucceeded, [id])),
    subscriptionFailedOnce: async (id: number) => void (await db.run(SQL.subscriptionFailedOnce, [id])),
    /** Pauses an active subscription; one already failing or disabled keeps its state. */
    markSubscriptionFailing: async (id: number, now: number) => void (await db.run(SQL.markSubscriptionFailing, [now, now, id])),

    // Deliveries, the outbox the worker polls.
    dueDeliveries: async (now: number, limit: number): Promise<DueDelivery[]> =>
      (await db.all<DeliveryDbRow>(SQL.dueDeliveries, [now, limit])).map(toDelivery),
    async delivery(id: string): Promise<DueDelivery | null> {
      const row = await db.get<DeliveryDbRow>(SQL.delivery, [id]);
      return row ? toDelivery(row) : null;
    },
    /** Marks a pending delivery `delivering` and counts the attempt; false when another took it. */
    claimDelivery: async (id: string, owner: string): Promise<boolean> => (await db.run(SQL.claimDelivery, [owner, id])).changes === 1,
    insertAttempt: async (deliveryId: string, a: AttemptRow) =>
      void (await db.run(SQL.insertAttempt, [deliveryId, a.at, a.statusCode, a.latencyMs, a.error])),
    markDelivered: async (id: string, at: number, statusCode: number | null) =>
      void (await db.run(SQL.markDelivered, [at, statusCode, id])),
    markRetry: async (id: string, nextAttemptAt: number, statusCode: number | null, error: string | null) =>
      void (await db.run(SQL.markRetry, [nextAttemptAt, statusCode, error, id])),
    markGivenUp: async (id: string, statusCode: number | null, error: string | null) =>
      void (await db.run(SQL.markGivenUp, [statusCode, error, id])),
    /** Deliveries `delivering` for which `abandoned` (SQL over claimed_by, taking `now`) holds. */
    abandonedDeliveries: async (now: number, abandoned: (column: string) => string): Promise<string[]> =>
      (await db.all<{ id: string }>(`${SQL.deliveringIds} AND ${abandoned("claimed_by")}`, [now])).map((r) => r.id),
    /** A `delivering` delivery back to `pending`; false when it was no longer delivering. */
    releaseDelivering: async (id: string): Promise<boolean> => (await db.run(SQL.releaseDelivering, [id])).changes === 1,
    failPendingOf: async (subscriptionId: number) => void (await db.run(SQL.failPendingOf, [subscriptionId])),
    resumePendingOf: async (subscriptionId: number, now: number) => void (await db.run(SQL.resumePendingOf, [now, subscriptionId])),
    deliveriesOf: async (subscriptionId: number, limit: number, offset: number): Promise<DeliveryListRow[]> =>
      (
        await db.all<{
          id: string;
          event_id: string;
          type: string;
          status: DeliveryListRow["status"];
          attempts: number;
          next_attempt_at: number;
          created_at: number;
          delivered_at: number | null;
        }>(SQL.deliveriesOf, [subscriptionId, limit, offset])
      ).map((r) => ({
        id: r.id,
        eventId: r.event_id,
        type: r.type,
        status: r.status,
        attempts: r.attempts,
        nextAttemptAt: r.next_attempt_at,
        createdAt: r.created_at,
        deliveredAt: r.delivered_at,
      })),
    countDeliveriesOf: async (subscriptionId: number): Promise<number> =>
      (await db.get<{ n: number }>(SQL.countDeliveriesOf, [subscriptionId]))!.n,
    attemptsOf: async (deliveryId: string): Promise<AttemptRow[]> =>
      (
        await db.all<{ at: number; status_code: number | null; latency_ms: number; error: string | null }>(SQL.attemptsOf, [deliveryId])
      ).map((r) => ({ at: r.at, statusCode: r.status_code, latencyMs: r.latency_ms, error: r.error })),
  };
}

export type WebhookRepository = ReturnType<typeof createWebhookRepository>;
