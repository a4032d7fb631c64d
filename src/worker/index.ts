// The background worker: what runs on each tick, in one place. main starts it; tests call tick().
import type { Services } from "../services";
import { startScheduler, type Task } from "./scheduler";

export function workerTasks(s: Services): Task[] {
  return [
    { name: "notifications:dispatch", everySeconds: s.config.workerIntervalSeconds, run: () => s.dispatcher.dispatchDue() },
    { name: "phones:announce-due", everySeconds: s.config.workerIntervalSeconds, run: () => s.mobile.announceDue() },
    { name: "webhooks:deliver", everySeconds: s.config.workerIntervalSeconds, run: () => s.webhooks.deliverDue() },
    { name: "devices:watch-presence", everySeconds: 15, run: () => s.mobile.watchPresence() },
    { name: "chatapp:recheck-templates", everySeconds: 3600, run: () => s.chatapp.recheckPaused() },
    { name: "chatapp:prune-backlog", everySeconds: 3600, run: () => s.chatapp.pruneBacklog() },
    { name: "chatapp:sync-templates", everySeconds: 6 * 3600, run: () => s.chatapp.syncAll() },
    { name: "idempotency:prune", everySeconds: 3600, run: () => s.idempotency.prune() },
  ];
}

export function startWorker(s: Services) {
  s.dispatcher.recoverInterrupted();
  const cutOff = s.webhooks.recoverInterrupted();
  if (cutOff > 0) s.log(`${cutOff} webhook deliveries were cut off mid-call by the last stop and will be sent again`);
  const scheduler = startScheduler(workerTasks(s), s.log);
  return {
    /**
     * Graceful stop: nothing new is claimed or started, and the channel and webhook calls in flight
     * finish and are recorded, waiting at most `graceMs`. True when everything finished in time;
     * what did not is recovered at the next start as an interrupted attempt.
     */
    async stop(graceMs: number): Promise<boolean> {
      s.dispatcher.stop();
      s.webhooks.stop();
      scheduler.stop();
      return scheduler.idle(graceMs);
    },
  };
}
