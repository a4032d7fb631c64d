// The background worker: what runs on each tick, in one place. main starts it; tests call tick().
import type { Services } from "../services";
import { startScheduler } from "./scheduler";
import type { Task } from "../core/task";

/** What the worker runs: its own dispatch and the HTTP layer's pruning, each module's tasks, each channel's. */
export function workerTasks(s: Services): Task[] {
  return [
    {
      name: "notifications:dispatch",
      everySeconds: s.config.workerIntervalSeconds,
      run: () => s.dispatcher.dispatchDue(),
      everyServer: true,
    },
    { name: "idempotency:prune", everySeconds: 3600, run: () => s.idempotency.prune() },
    // The shared request limits' passed windows (PostgreSQL; SQLite's one server counts in memory).
    ...(s.cluster.shared ? [{ name: "limits:prune", everySeconds: 60, run: () => s.rateLimiter.prune?.() }] : []),
    ...s.modules.flatMap((m) => m.tasks?.(s) ?? []),
    // Each channel's own periodic work, given its service.
    ...s.builtChannels.flatMap(({ channel, runtime }) => channel.tasks(runtime.service, s.config)),
  ];
}

/** Attempts and deliveries that a stopped server left claimed go back to the queue. */
async function recover(s: Services): Promise<void> {
  await s.dispatcher.recoverInterrupted();
  for (const module of s.modules) {
    const warning = await module.recover?.(s);
    if (warning) s.logger.warn(warning);
  }
}

/**
 * The tasks as one server runs them: with several servers on one database, each renews its lease
 * every few seconds, recovers what servers that died left claimed while it leads, and runs the
 * leader's tasks only while it leads (src/worker/cluster.ts).
 */
function clusterTasks(s: Services): Task[] {
  const tasks = workerTasks(s);
  if (!s.cluster.shared) return tasks;
  return [
    {
      name: "cluster:heartbeat",
      everySeconds: Math.min(2, s.config.workerIntervalSeconds),
      run: () => s.cluster.heartbeat(),
      everyServer: true,
    },
    { name: "cluster:recover", everySeconds: 5, run: () => recover(s) },
    ...tasks,
  ].map((task) => (task.everyServer ? task : { ...task, run: () => (s.cluster.isLeader() ? task.run() : undefined) }));
}

export async function startWorker(s: Services) {
  // The lease first: from here on, this server's claims are its own, not a dead server's.
  await s.cluster.heartbeat();
  await s.signals.start();
  if (s.cluster.shared) s.log(`this server's id in the cluster is ${s.cluster.id} (its lease: server:${s.cluster.id})`);
  await recover(s);
  const scheduler = startScheduler(clusterTasks(s), s.log);
  return {
    /**
     * Graceful stop: nothing new is claimed or started, and the channel and webhook calls in flight
     * finish and are recorded, waiting at most `graceMs`. True when everything finished in time;
     * what did not is recovered at the next start as an interrupted attempt.
     */
    async stop(graceMs: number): Promise<boolean> {
      s.dispatcher.stop();
      for (const module of s.modules) module.stop?.(s);
      scheduler.stop();
      const idle = await scheduler.idle(graceMs);
      // Claims still held after the grace are then another server's to recover at once.
      await s.cluster.resign().catch((error) => s.log("could not give up the cluster leases", error));
      await s.signals.stop();
      return idle;
    },
  };
}
