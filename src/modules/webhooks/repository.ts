// Webhook subscriptions, their deliveries and the attempts of each. Subscriptions change rarely and
// go through drizzle; the delivery outbox is polled every few seconds and written on every
// attempt, so its statements are prepared once, with columns aliased to the schema's names so the
// row types still come from the drizzle tables.
import type { Database, Statement } from "bun:sqlite";
import { and, asc, count, eq, isNull } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "../../db/schema";
import { type event, type webhookAttempt, type webhookDelivery, webhookSubscription } from "../../db/schema";

export type SubscriptionRow = typeof webhookSubscription.$inferSelect;
type SubscriptionChange = Partial<
  Pick<SubscriptionRow, "url" | "events" | "description" | "secret" | "status" | "consecutiveFailures" | "failingSince">
> &
  Pick<SubscriptionRow, "updatedAt">;

/** A delivery with what its call needs: the subscription's address and secret, and the event. */
export type DueDelivery = Pick<typeof webhookDelivery.$inferSelect, "id" | "subscriptionId" | "eventId" | "attempts"> &
  Pick<SubscriptionRow, "url" | "secret" | "format" | "externalId" | "smsgateEvent" | "smsgateDeviceId"> &
  Pick<typeof event.$inferSelect, "workspaceId" | "type"> & { data: string; eventCreatedAt: number };

export type DeliveryListRow = Pick<
  typeof webhookDelivery.$inferSelect,
  "id" | "eventId" | "status" | "attempts" | "nextAttemptAt" | "createdAt" | "deliveredAt"
> &
  Pick<typeof event.$inferSelect, "type">;
export type AttemptRow = Omit<typeof webhookAttempt.$inferSelect, "id" | "deliveryId">;

export function createWebhookRepository(sqlite: Database) {
  const db = drizzle({ client: sqlite, schema });
  const live = (workspaceId: number) => and(eq(webhookSubscription.workspaceId, workspaceId), isNull(webhookSubscription.deletedAt));

  const DELIVERY_COLUMNS = `d.id, d.subscription_id AS subscriptionId, d.event_id AS eventId, d.attempts, s.url, s.secret,
      s.format, s.external_id AS externalId, s.smsgate_event AS smsgateEvent, s.smsgate_device_id AS smsgateDeviceId,
      e.workspace_id AS workspaceId, e.type, e.data, e.created_at AS eventCreatedAt
    FROM webhook_delivery d JOIN webhook_subscription s ON s.id = d.subscription_id JOIN event e ON e.id = d.event_id`;
  const due: Statement<DueDelivery, [number, number]> = sqlite.prepare(`
    SELECT ${DELIVERY_COLUMNS}
    WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND s.status = 'active' AND s.deleted_at IS NULL
    ORDER BY d.next_attempt_at, d.created_at LIMIT ?`);
  const oneDelivery: Statement<DueDelivery, [string]> = sqlite.prepare(`SELECT ${DELIVERY_COLUMNS} WHERE d.id = ?`);
  const claim = sqlite.prepare<never, [string]>(
    "UPDATE webhook_delivery SET status = 'delivering', attempts = attempts + 1 WHERE id = ? AND status = 'pending'",
  );
  const insertAttempt = sqlite.prepare<never, [string, number, number | null, number, string | null]>(
    "INSERT INTO webhook_attempt (delivery_id, at, status_code, latency_ms, error) VALUES (?, ?, ?, ?, ?)",
  );
  const markDelivered = sqlite.prepare<never, [number, number | null, string]>(
    "UPDATE webhook_delivery SET status = 'delivered', delivered_at = ?, last_status_code = ?, last_error = NULL WHERE id = ?",
  );
  const markRetry = sqlite.prepare<never, [number, number | null, string | null, string]>(
    "UPDATE webhook_delivery SET status = 'pending', next_attempt_at = ?, last_status_code = ?, last_error = ? WHERE id = ?",
  );
  const markGivenUp = sqlite.prepare<never, [number | null, string | null, string]>(
    "UPDATE webhook_delivery SET status = 'failed', last_status_code = ?, last_error = ? WHERE id = ?",
  );
  const subscriptionOk = sqlite.prepare<never, [number]>("UPDATE webhook_subscription SET consecutive_failures = 0 WHERE id = ?");
  const subscriptionFailed = sqlite.prepare<never, [number]>(
    "UPDATE webhook_subscription SET consecutive_failures = consecutive_failures + 1 WHERE id = ?",
  );
  const subscriptionFailing = sqlite.prepare<never, [number, number, number]>(
    "UPDATE webhook_subscription SET status = 'failing', failing_since = ?, updated_at = ? WHERE id = ? AND status = 'active'",
  );
  const delivering: Statement<Pick<DueDelivery, "id">, []> = sqlite.prepare("SELECT id FROM webhook_delivery WHERE status = 'delivering'");
  const backToPending = sqlite.prepare<never, []>("UPDATE webhook_delivery SET status = 'pending' WHERE status = 'delivering'");
  const dropPending = sqlite.prepare<never, [number]>(
    "UPDATE webhook_delivery SET status = 'failed', last_error = 'subscription deleted' WHERE subscription_id = ? AND status IN ('pending', 'delivering')",
  );
  const resume = sqlite.prepare<never, [number, number]>(
    "UPDATE webhook_delivery SET next_attempt_at = ? WHERE subscription_id = ? AND status = 'pending'",
  );
  const deliveriesOf: Statement<DeliveryListRow, [number, number, number]> = sqlite.prepare(`
    SELECT d.id, d.event_id AS eventId, e.type, d.status, d.attempts, d.next_attempt_at AS nextAttemptAt, d.created_at AS createdAt, d.delivered_at AS deliveredAt
    FROM webhook_delivery d JOIN event e ON e.id = d.event_id
    WHERE d.subscription_id = ? ORDER BY d.created_at DESC, d.rowid DESC LIMIT ? OFFSET ?`);
  const deliveryCount: Statement<{ n: number }, [number]> = sqlite.prepare(
    "SELECT count(*) AS n FROM webhook_delivery WHERE subscription_id = ?",
  );
  const attemptsOf: Statement<AttemptRow, [string]> = sqlite.prepare(
    "SELECT at, status_code AS statusCode, latency_ms AS latencyMs, error FROM webhook_attempt WHERE delivery_id = ? ORDER BY id",
  );

  return {
    // Subscriptions (deleted ones stay as rows, hidden from everything here).
    subscription(workspaceId: number, id: number): SubscriptionRow | null {
      return (
        db
          .select()
          .from(webhookSubscription)
          .where(and(live(workspaceId), eq(webhookSubscription.id, id)))
          .get() ?? null
      );
    },
    subscriptions(workspaceId: number): SubscriptionRow[] {
      return db.select().from(webhookSubscription).where(live(workspaceId)).orderBy(asc(webhookSubscription.id)).all();
    },
    countSubscriptions(workspaceId: number): number {
      return db.select({ n: count() }).from(webhookSubscription).where(live(workspaceId)).get()!.n;
    },
    insertSubscription(
      row: Pick<SubscriptionRow, "workspaceId" | "url" | "events" | "description" | "secret" | "createdAt" | "updatedAt"> &
        Partial<Pick<SubscriptionRow, "format" | "externalId" | "smsgateEvent" | "smsgateDeviceId">>,
    ): SubscriptionRow {
      return db
        .insert(webhookSubscription)
        .values({ ...row, status: "active" })
        .returning()
        .get();
    },
    updateSubscription(id: number, change: SubscriptionChange): void {
      db.update(webhookSubscription).set(change).where(eq(webhookSubscription.id, id)).run();
    },
    markSubscriptionDeleted(id: number, now: number): void {
      db.update(webhookSubscription).set({ deletedAt: now, updatedAt: now }).where(eq(webhookSubscription.id, id)).run();
    },
    subscriptionSucceeded: (id: number) => void subscriptionOk.run(id),
    subscriptionFailedOnce: (id: number) => void subscriptionFailed.run(id),
    /** Pauses an active subscription; one already failing or disabled keeps its state. */
    markSubscriptionFailing: (id: number, now: number) => void subscriptionFailing.run(now, now, id),

    // Deliveries, the outbox the worker polls.
    dueDeliveries: (now: number, limit: number): DueDelivery[] => due.all(now, limit),
    delivery: (id: string): DueDelivery | null => oneDelivery.get(id) ?? null,
    /** Marks a pending delivery `delivering` and counts the attempt; false when another took it. */
    claimDelivery: (id: string): boolean => claim.run(id).changes === 1,
    insertAttempt(deliveryId: string, attempt: AttemptRow): void {
      insertAttempt.run(deliveryId, attempt.at, attempt.statusCode, attempt.latencyMs, attempt.error);
    },
    markDelivered: (id: string, at: number, statusCode: number | null) => void markDelivered.run(at, statusCode, id),
    markRetry: (id: string, nextAttemptAt: number, statusCode: number | null, error: string | null) =>
      void markRetry.run(nextAttemptAt, statusCode, error, id),
    markGivenUp: (id: string, statusCode: number | null, error: string | null) => void markGivenUp.run(statusCode, error, id),
    deliveringIds: (): string[] => delivering.all().map((r) => r.id),
    /** Every `delivering` delivery back to `pending`. */
    releaseDelivering: () => void backToPending.run(),
    failPendingOf: (subscriptionId: number) => void dropPending.run(subscriptionId),
    resumePendingOf: (subscriptionId: number, now: number) => void resume.run(now, subscriptionId),
    deliveriesOf: (subscriptionId: number, limit: number, offset: number): DeliveryListRow[] =>
      deliveriesOf.all(subscriptionId, limit, offset),
    countDeliveriesOf: (subscriptionId: number): number => deliveryCount.get(subscriptionId)!.n,
    attemptsOf: (deliveryId: string): AttemptRow[] => attemptsOf.all(deliveryId),

    /** Runs `fn` in one synchronous transaction (no await inside). */
    transaction<T>(fn: () => T): T {
      return sqlite.transaction(fn)();
    },
  };
}

export type WebhookRepository = ReturnType<typeof createWebhookRepository>;
