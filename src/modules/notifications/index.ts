// The notifications module: its repository (shared with the sending path, the channels and the
// worker), the month's SMS count the plans check (usage), the state machine every report goes
// through, the service behind the notification routes and the expiry task, built here once.
import type { DeviceKind } from "../../core/kinds";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { CreditService } from "../credits/service";
import { createApproval } from "./approval";
import { createApprovalRepository } from "./approval-repository";
import { approvalRoutes } from "./approval-routes";
import type { NotificationRecord } from "./model";
import { createUsageRepository } from "./usage-repository";
import { createExpiry } from "./expiry";
import { createNotificationRepository } from "./repository";
import { type CancelAsk, createNotificationService } from "./service";
import { createNotificationState } from "./state";
import type { ModuleDescriptor } from "../../services-type";
import { notificationListeners } from "./lifecycle";
import { notificationRoutes } from "./routes";

export function createNotificationsModule(deps: {
  storage: Storage;
  clock: Clock;
  credits: CreditService;
  /** The routes the worker dispatches (the rest are fetched by their devices). */
  dispatchedRoutes: DeviceKind[];
  offlineAfterMs: number;
  /** Whether the channel holding a downloaded notification can be asked to drop it (see CancelAsk). */
  asksDevice?: CancelAsk;
  /** An API key's name, for a notification's detail (who sent it). */
  keyName?: (keyId: number) => Promise<string | null>;
  /** PIGEON_APPROVAL_TTL_SECONDS: how long a message may await approval. */
  approvalTtlSeconds?: number;
  /** Writes an event (the events module's emit), inside the caller's unit of work. */
  emit?: (workspaceId: number, type: "notification.approved", data: Record<string, unknown>) => Promise<void>;
  /** After an approval's commit: the channel carrying each approved message hears of it. */
  announceApproved?: (approved: NotificationRecord[]) => void;
}) {
  const { clock } = deps;
  const repository = createNotificationRepository(deps.storage, deps.dispatchedRoutes);
  const state = createNotificationState(deps.storage, clock, deps.credits);
  const keyName = deps.keyName ?? (async () => null);
  const approval = createApproval({
    storage: deps.storage,
    clock,
    repo: createApprovalRepository(deps.storage),
    notifications: repository,
    state,
    ttlMs: () => (deps.approvalTtlSeconds ?? 86_400) * 1000,
    keyName,
    emitApproved: async (n, data) => deps.emit?.(n.workspaceId, "notification.approved", data),
    announce: (approved) => deps.announceApproved?.(approved),
  });
  return {
    approval,
    repository,
    usage: createUsageRepository(deps.storage),
    state,
    service: createNotificationService(deps.storage, repository, state, clock, deps.asksDevice, deps.keyName),
    expiry: createExpiry({ clock, notifications: repository, state, offlineAfterMs: deps.offlineAfterMs }),
  };
}

export const notificationsModule: ModuleDescriptor = {
  name: "notifications",
  routes: (s) => ({ api: [notificationRoutes(s), approvalRoutes(s)] }),
  tasks: (s) => [
    // What awaited approval too long fails approval_expired (on the leader only, like the others).
    { name: "approval:expire", everySeconds: Math.min(30, s.config.workerIntervalSeconds), run: () => s.approval.expireDue() },
    { name: "notifications:expire", everySeconds: s.config.workerIntervalSeconds, run: () => s.expiry.expireDue() },
    // PostgreSQL's hourly count changes, folded in (nothing to do on SQLite, whose triggers upsert).
    ...(s.storage.dialect === "postgres"
      ? [{ name: "notifications:fold-hourly", everySeconds: 5, run: () => s.channelCore.notifications.foldHourly() }]
      : []),
  ],
  // Every state change is an event; the channel carrying a notification hears of what happens to it.
  listeners: (s) => notificationListeners({ notifications: s.state, events: s.events, channelOf: s.channelOf }),
};
