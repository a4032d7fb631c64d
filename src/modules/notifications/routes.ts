import { Elysia } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { errorResponses, models, ok } from "../../http/envelope";
import type { Services } from "../../services-type";
import {
  CancelBody,
  MessageStatusResponse,
  NotificationDetailResponse,
  NotificationIdParams,
  NotificationListQuery,
  NotificationListResponse,
  NotificationResponse,
} from "./model";
import { presentNotification } from "./service";

/** What these routes use of the services. */
export type NotificationRoutesDeps = Pick<Services, "notifications">;

export function notificationRoutes(s: NotificationRoutesDeps) {
  const { notifications } = s;
  return new Elysia({ tags: ["Notifications"] })
    .use(declaredAuth())
    .use(models)
    .get(
      "/v1/api/notification/list",
      async ({ auth, query }) => ok(await notifications.list(auth.workspaceId, query), "Notifications fetched"),
      {
        query: NotificationListQuery,
        response: { 200: NotificationListResponse, ...errorResponses() },
        auth: "apiKey",
        scope: "messages:read",
        detail: {
          operationId: "listNotifications",
          summary: "List notifications",
          description:
            "Newest first. Filters: `status`, `delivery_type`, `recipient` (E.164), `from`/`to` on the creation time (ISO 8601). `limit` is at most 100.",
        },
      },
    )
    .post(
      "/v1/api/notification/cancel",
      async ({ auth, body, set }) => {
        const { cancelling, ...n } = await notifications.cancel(auth.workspaceId, body.notification_id);
        if (!cancelling) return ok(n, "Notification cancelled");
        set.status = 202;
        return { ...ok(n, "Cancel requested: the phone that downloaded it decides"), status_id: 202 };
      },
      {
        parse: "json",
        body: CancelBody,
        response: { 200: NotificationResponse, 202: NotificationResponse, ...errorResponses(404, 409) },
        auth: "apiKey",
        scope: "send",
        detail: {
          operationId: "cancelNotification",
          summary: "Cancel a notification",
          description:
            "Cancels a `pending` notification that its channel has not taken yet (scheduled, queued, or waiting for the phone to pick it up): " +
            "200, its status `cancelled` (our addition to the spec's states) and any credits refunded. " +
            "One a paired phone has downloaded but not taken up, when its app is 1.67.0 or later: 202, status `cancelling`; the phone is told " +
            "(MessageCancelled on its event stream, the `Cancelling` state on its next download) and its answer decides: it dropped it " +
            "(`cancelled`, refunded) or it had already taken it up (`sent`, `delivered` or `failed`, as it reports; the log says the cancel came too late). " +
            "Asking again meanwhile answers 202 and changes nothing. An older app cannot drop what it downloaded: 200 `cancelled`, and if the phone " +
            "sends it anyway its report wins. Once the phone reported it Processed, or it is sent, delivered or failed: 409 `not_cancellable`.",
        },
      },
    )
    .get(
      "/v1/api/notification/:notification_id",
      async ({ auth, params }) => ok(await notifications.detail(auth.workspaceId, params.notification_id), "Notification fetched"),
      {
        params: NotificationIdParams,
        response: { 200: NotificationDetailResponse, ...errorResponses(404) },
        auth: "apiKey",
        scope: "messages:read",
        detail: {
          operationId: "getNotification",
          summary: "Get a notification",
          description:
            "Status, delivery type, template and variables, final text, recipient, device, schedule, attempts, timestamps, and `logs`: every attempt and state change with the carrier's or platform's reason.",
        },
      },
    )
    .get(
      "/v1/messages/:notification_id",
      async ({ auth, params }) => {
        const n = presentNotification(await notifications.require(auth.workspaceId, params.notification_id));
        return ok(
          {
            messageId: String(n.notification_id),
            status: n.status,
            to: n.recipient,
            message: n.message,
            channel: n.delivery_type,
            error_code: n.error_code,
            error_reason: n.error_reason,
            created_at: n.created_at,
            updated_at: n.updated_at,
          },
          "Message status",
        );
      },
      {
        params: NotificationIdParams,
        response: { 200: MessageStatusResponse, ...errorResponses(404) },
        auth: "apiKey",
        scope: "messages:read",
        detail: {
          operationId: "getMessageStatus",
          summary: "Message delivery status (overview form)",
          description: "The overview's delivery-status route; `messageId` is the notification id.",
        },
      },
    );
}
