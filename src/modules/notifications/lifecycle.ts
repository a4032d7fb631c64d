// What follows a notification's changes, in one place: every state change is an event (written in
// the transition's transaction: the outbox), and the channel carrying it hears of its acceptance,
// its state changes and its cancellation (a paired phone is woken or told to drop it).
import type { DeviceKind } from "../../core/kinds";
import type { EventService } from "../events/service";
import type { ModuleListeners } from "../listeners";
import type { Accepted } from "../sending/types";
import { presentNotification } from "./service";
import type { MoveTo, NotificationRecord, NotificationState } from "./state";

/** What the channel carrying a notification hears of it (each channel's runtime may implement these). */
export interface NotificationHooks {
  /** After commit: notifications accepted for one of its devices. */
  accepted?(accepted: Accepted[]): void | Promise<void>;
  /** Inside the transition's transaction: one of its notifications changed state. */
  transitioned?(before: NotificationRecord, to: MoveTo): void | Promise<void>;
  /** After commit: notifications that awaited approval were approved (now pending, due at their schedule or now). */
  approved?(approved: NotificationRecord[]): void | Promise<void>;
  /** After commit: one of its notifications was cancelled through the API, or its cancel asked of its device. */
  cancelled?(n: NotificationRecord): void | Promise<void>;
  /**
   * Inside a cancel's unit of work, for a pending notification its device downloaded: whether the
   * device can be told to drop it and its answer will come (the cancel then waits for it).
   */
  asksDevice?(n: NotificationRecord): Promise<boolean>;
}

export interface LifecycleDeps {
  notifications: Pick<NotificationState, "getMany">;
  events: EventService;
  /** The channel carrying a route (device kind), if any. */
  channelOf: (kind: DeviceKind) => NotificationHooks | undefined;
}

/** What the notifications module hears of each change: the outbox's event, then the channel's hook. */
export function notificationListeners({ notifications, events, channelOf }: LifecycleDeps): ModuleListeners {
  return {
    // The event first, so a channel's reaction never runs for a change the outbox missed.
    transitions: async (changes) => {
      const after = new Map((await notifications.getMany(changes.map((c) => c.before.id))).map((n) => [n.id, n]));
      await events.emitMany(
        changes.map(({ before, to }) => ({
          workspaceId: before.workspaceId,
          type: `notification.${to}` as const,
          data: presentNotification(after.get(before.id)!),
        })),
      );
    },
    transition: async (before, to) => {
      await channelOf(before.route)?.transitioned?.(before, to);
    },
    cancelled: async (n) => {
      await channelOf(n.route)?.cancelled?.(n);
    },
    // A send stored awaiting approval is an event of its own, in the send's unit of work.
    stored: async (accepted) => {
      const awaiting = accepted.filter((a) => a.prepared.awaitingApproval);
      if (awaiting.length === 0) return;
      const rows = await notifications.getMany(awaiting.map((a) => a.notificationId));
      await events.emitMany(
        rows.map((n) => ({ workspaceId: n.workspaceId, type: "notification.awaiting_approval" as const, data: presentNotification(n) })),
      );
    },
    accepted: async (accepted) => {
      const byKind = new Map<DeviceKind, typeof accepted>();
      for (const a of accepted) byKind.set(a.prepared.device.kind, [...(byKind.get(a.prepared.device.kind) ?? []), a]);
      for (const [kind, own] of byKind) await channelOf(kind)?.accepted?.(own);
    },
  };
}

const DEVICE_DELETED = { errorCode: "device_deleted", reason: "the device was deleted before the message was sent" } as const;

/**
 * A deleted device's waiting notifications can never go out: they fail (refunding their credits).
 * Runs when devices are deleted (for `pendingOnDevices`), and in the worker for work due on a
 * device already gone.
 */
export async function failForDeletedDevice(state: NotificationState, notificationIds: number[]): Promise<void> {
  for (const id of notificationIds) await state.transition(id, "failed", DEVICE_DELETED);
}
