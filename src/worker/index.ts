// The background worker: what runs on each tick, in one place. main starts it; tests call tick().
import type { Services } from "../services";
import { startScheduler, type Task } from "./scheduler";

export function workerTasks(s: Services): Task[] {
  return [
    { name: "notifications:dispatch", everySeconds: s.config.workerIntervalSeconds, run: () => s.dispatcher.dispatchDue() },
    { name: "notifications:expire", everySeconds: s.config.workerIntervalSeconds, run: () => s.expiry.expireDue() },
    { name: "notifications:failover", everySeconds: s.config.workerIntervalSeconds, run: () => s.sending.failoverStranded(s.config.failoverGraceSeconds * 1000) },
    { name: "webhooks:deliver", everySeconds: s.config.workerIntervalSeconds, run: () => s.webhooks.deliverDue() },
    { name: "idempotency:prune", everySeconds: 3600, run: () => s.idempotency.prune() },
    // Each channel's own periodic work, given its service.
    ...s.builtChannels.flatMap(({ channel, runtime }) => channel.tasks(runtime.service, s.config)),
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
