// Reading notifications, and cancelling one that has not reached its channel yet.
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

export function presentNotification(n: NotificationRecord) {
  return {
    notification_id: n.id,
    status: n.status,
    delivery_type: n.deliveryType,
    route: n.route,
    routes: n.routes ? n.routes.map((k) => ROUTE_NAMES[k]) : null,
    template_id: n.templateId,
    template_vars: n.templateVars,
    message: n.message,
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

export function createNotificationService(storage: Storage, repo: NotificationRepository, state: NotificationState) {
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
      return { ...presentNotification(n), logs: (await repo.logs(n)).map(presentLog) };
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
     * processed; a provider has not been called). Otherwise 409 not_cancellable.
     */
    async cancel(workspaceId: number, id: number) {
      const result = await storage.transaction(async () => {
        const n = await require(workspaceId, id);
        if (n.status !== "pending" || n.stage !== "queued") {
          throw new AppError(
            "not_cancellable",
            n.status === "pending"
              ? `notification ${id} is already with its channel and can no longer be cancelled`
              : `notification ${id} is ${n.status} and can no longer be cancelled`,
            { status: n.status },
          );
        }
        await state.transition(n.id, "cancelled", { reason: "cancelled by API request", detail: "cancelled by API request" });
        return n;
      });
      for (const listener of cancelListeners) await listener(result);
      return presentNotification(await require(workspaceId, id));
    },

    onCancelled(listener: (n: NotificationRecord) => void | Promise<void>) {
      cancelListeners.push(listener);
    },
  };
}

export type NotificationService = ReturnType<typeof createNotificationService>;
