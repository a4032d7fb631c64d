// The notifications module: its repository (shared with the sending path, the channels and the
// worker), the month's SMS count the plans check (usage), the state machine every report goes
// through, the service behind the notification routes and the expiry task, built here once.
import type { DeviceKind } from "../../core/kinds";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { CreditService } from "../credits/service";
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
}) {
  const { clock } = deps;
  const repository = createNotificationRepository(deps.storage, deps.dispatchedRoutes);
  const state = createNotificationState(deps.storage, clock, deps.credits);
  return {
    repository,
    usage: createUsageRepository(deps.storage),
    state,
    service: createNotificationService(deps.storage, repository, state, clock, deps.asksDevice),
    expiry: createExpiry({ clock, notifications: repository, state, offlineAfterMs: deps.offlineAfterMs }),
  };
}

export const notificationsModule: ModuleDescriptor = {
  name: "notifications",
  routes: (s) => ({ api: [notificationRoutes(s)] }),
  tasks: (s) => [
    { name: "notifications:expire", everySeconds: s.config.workerIntervalSeconds, run: () => s.expiry.expireDue() },
    // PostgreSQL's hourly count changes, folded in (nothing to do on SQLite, whose triggers upsert).
    ...(s.storage.dialect === "postgres"
      ? [{ name: "notifications:fold-hourly", everySeconds: 5, run: () => s.channelCore.notifications.foldHourly() }]
      : []),
  ],
  // Every state change is an event; the channel carrying a notification hears of what happens to it.
  listeners: (s) => notificationListeners({ notifications: s.state, events: s.events, channelOf: s.channelOf }),
};
