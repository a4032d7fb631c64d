// Reading notifications, and cancelling one that has not reached its channel yet.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { ROUTE_NAMES, type DeliveryType } from "../../core/kinds";
import { AppError } from "../../core/errors";
import { toE164 } from "../../lib/phone";
import { iso } from "../../lib/time";
import type { NotificationRepository } from "./repository";
import type { ListFilters, LogRecord } from "./model";
import type { NotificationRecord, NotificationState, NotificationStatus } from "./state";

export function presentLog(l: LogRecord) {
  return { at: iso(l.at), event: l.event, status: l.status, error_code: l.errorCode, detail: l.detail };
}

/**
 * The status the API shows: the stored one, or `cancelling` for a pending notification whose
 * cancel was asked of the channel holding it (a paired phone) and waits for its answer.
 */
export function shownStatus(n: Pick<NotificationRecord, "status" | "cancelPending">): NotificationStatus | "cancelling" {
  return n.status === "pending" && n.cancelPending ? "cancelling" : n.status;
}

export function presentNotification(n: NotificationRecord) {
  return {
    notification_id: n.id,
    status: shownStatus(n),
    delivery_type: n.deliveryType,
    route: n.route,
    routes: n.routes ? n.routes.map((k) => ROUTE_NAMES[k]) : null,
    template_id: n.templateId,
    template_vars: n.templateVars,
    message: n.message,
    ...(n.dataMessage ? { data_message: n.dataMessage } : {}),
    recipient: n.recipient,
    recipient_name: n.recipientName,
    device_id: n.deviceId,
    schedule_time: iso(n.scheduleAt),
    timezone: n.timezone,
    attempts: n.attempts,
    segments: n.segments,
    cost: n.cost,
    provider_message_id: n.externalId,
    error_code: n.errorCode,
    error_reason: n.errorReason,
    created_at: iso(n.createdAt),
    updated_at: iso(n.updatedAt),
    sent_at: iso(n.sentAt),
    delivered_at: iso(n.deliveredAt),
    failed_at: iso(n.failedAt),
    cancelled_at: iso(n.cancelledAt),
    sim_number: n.simNumber,
    priority: n.priority,
    with_delivery_report: n.withDeliveryReport,
    valid_until: iso(n.validUntil),
    encrypted: n.encrypted,
    api_key_id: n.apiKeyId,
    agent_session: n.agentSession,
    approval_reason: n.approvalReason,
    approved_at: iso(n.approvedAt),
    rejected_at: iso(n.rejectedAt),
    decided_by: n.decidedBy,
  };
}

function parseInstant(value: string | undefined, field: string, endOfDay: boolean): number | undefined {
  if (value === undefined || value === "") return undefined;
  // A bare date means the whole day (UTC): from its start, to its end.
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const ms = Date.parse(dateOnly ? `${value}T00:00:00.000Z` : value);
  if (Number.isNaN(ms)) {
    throw new AppError("validation_error", `Invalid query field '${field}': must be an ISO 8601 date or date-time`, {
      field,
      location: "query",
      reason: "must be an ISO 8601 date or date-time",
    });
  }
  return dateOnly && endOfDay ? ms + 86_399_999 : ms;
}

/**
 * Asked inside a cancel's unit of work about a pending notification its device has downloaded:
 * whether the channel can tell the device to drop it and will hear its answer (then the cancel
 * waits for that answer).
 */
export type CancelAsk = (n: NotificationRecord) => Promise<boolean>;

export function createNotificationService(
  storage: Storage,
  repo: NotificationRepository,
  state: NotificationState,
  clock: Clock,
  asksDevice: CancelAsk = async () => false,
  keyName: (keyId: number) => Promise<string | null> = async () => null,
) {
  async function require(workspaceId: number, id: number): Promise<NotificationRecord> {
    const n = await repo.get(workspaceId, id);
    if (!n) throw new AppError("not_found", `notification ${id} not found`);
    return n;
  }

  const cancelListeners: ((n: NotificationRecord) => void | Promise<void>)[] = [];

  return {
    require,

    /** A notification of the workspace as stored, or null. */
    find: (workspaceId: number, id: number): Promise<NotificationRecord | null> => repo.get(workspaceId, id),
    /** A page of the workspace's notifications as stored, newest first, with the total. */
    records: (workspaceId: number, filters: ListFilters, offset: number, limit: number) => repo.list(workspaceId, filters, offset, limit),
    /** Every attempt and change recorded for a notification (as read with find), oldest first. */
    logs: (n: NotificationRecord) => repo.logs(n),
    /** How many of the workspace's notifications match (from the hourly rollup). */
    count: (workspaceId: number, filters: Parameters<NotificationRepository["count"]>[1]) => repo.count(workspaceId, filters),

    async detail(workspaceId: number, id: number) {
      const n = await require(workspaceId, id);
      const key_name = n.apiKeyId === null ? null : await keyName(n.apiKeyId);
      return { ...presentNotification(n), key_name, logs: (await repo.logs(n)).map(presentLog) };
    },

    async list(
      workspaceId: number,
      q: {
        status?: NotificationStatus;
        delivery_type?: DeliveryType;
        recipient?: string;
        from?: string;
        to?: string;
        page?: number;
        limit?: number;
      },
    ) {
      const page = q.page ?? 1;
      const limit = q.limit ?? 20;
      const filters: ListFilters = { status: q.status, deliveryType: q.delivery_type };
      if (q.recipient) {
        const phone = toE164(q.recipient);
        if (!phone)
          throw new AppError("invalid_phone_number", `Invalid phone number "${q.recipient}" in recipient`, { field: "recipient" });
        filters.recipient = phone;
      }
      filters.from = parseInstant(q.from, "from", false);
      filters.to = parseInstant(q.to, "to", true);
      const { rows, total } = await repo.list(workspaceId, filters, (page - 1) * limit, limit);
      return { notifications: rows.map(presentNotification), pagination: { page, limit, total } };
    },

    /**
     * Cancels a pending notification that no channel has taken yet (a phone has not reported it
     * processed; a provider has not been called). One a paired phone has downloaded but not taken
     * up, whose app can be told to drop it (1.67 and later), goes to `cancelling` instead: the
     * phone is told, and its answer decides (Cancelled: cancelled and refunded; Processed, Sent,
     * Delivered or Failed: what it did). Asking again while it is cancelling changes nothing.
     * Otherwise 409 not_cancellable. `cancelling` in the result says which.
     */
    async cancel(workspaceId: number, id: number) {
      const result = await storage.transaction(async () => {
        const n = await require(workspaceId, id);
        if (n.status === "pending" && n.cancelPending) return { n, asked: false };
        if (n.status === "awaiting_approval") {
          // No channel has it: cancelled at once, its credits refunded; false when a decision came first.
          if (
            await state.transition(n.id, "cancelled", {
              reason: "cancelled by API request",
              detail: "cancelled by API request before approval",
            })
          )
            return { n, asked: false };
          throw new AppError("not_cancellable", `notification ${id} was decided meanwhile and can no longer be cancelled here`, {
            status: (await require(workspaceId, id)).status,
          });
        }
        if (n.status !== "pending" || n.stage !== "queued") {
          throw new AppError(
            "not_cancellable",
            n.status === "pending"
              ? `notification ${id} is already with its channel and can no longer be cancelled`
              : `notification ${id} is ${n.status} and can no longer be cancelled`,
            { status: n.status },
          );
        }
        if (n.dispatchedAt !== null && (await asksDevice(n)) && (await repo.requestCancel(n.id, clock.now()))) {
          await state.log(n.id, "cancel_requested", {
            status: "cancelling",
            detail: "cancel requested by API; the phone has downloaded it and decides: it drops it, or reports what it did",
          });
          return { n, asked: true };
        }
        await state.transition(n.id, "cancelled", { reason: "cancelled by API request", detail: "cancelled by API request" });
        // A device that downloaded it and cannot be asked may still send it: its report then wins.
        if (n.dispatchedAt !== null) await repo.markCancelUnconfirmed(n.id);
        return { n, asked: true };
      });
      if (result.asked) for (const listener of cancelListeners) await listener(result.n);
      const after = presentNotification(await require(workspaceId, id));
      return { ...after, cancelling: after.status === "cancelling" };
    },

    onCancelled(listener: (n: NotificationRecord) => void | Promise<void>) {
      cancelListeners.push(listener);
    },
  };
}

export type NotificationService = ReturnType<typeof createNotificationService>;
