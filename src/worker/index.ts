// The background worker: what runs on each tick, in one place. main starts it; tests call tick().
import type { Services } from "../services";
import { startScheduler } from "./scheduler";
import type { Task } from "../core/task";

/**
 * Sends added to their threads per unit of work of the worker's catch-up, kept small: the sends
 * whose units share the catch-up's commit wait for it (1,000 took the send's p99 past 30 ms; on
 * the async storage seam 200 measured a p99 of 25–30 ms, 50 one of 17–23 ms; bench/NOTES.md).
 */
const THREAD_CATCH_UP_CHUNK = 50;

export function workerTasks(s: Services): Task[] {
  return [
    {
      name: "notifications:dispatch",
      everySeconds: s.config.workerIntervalSeconds,
      run: () => s.dispatcher.dispatchDue(),
      everyServer: true,
    },
    { name: "notifications:expire", everySeconds: s.config.workerIntervalSeconds, run: () => s.expiry.expireDue() },
    {
      name: "notifications:failover",
      everySeconds: s.config.workerIntervalSeconds,
      run: () => s.sending.failoverStranded(s.config.failoverGraceSeconds * 1000),
    },
    // Sends reach their threads in chunks, letting requests in between (each read also catches up first).
    {
      name: "threads:catch-up",
      everySeconds: s.config.workerIntervalSeconds,
      run: async () => {
        while ((await s.threads.catchUp(THREAD_CATCH_UP_CHUNK)) === THREAD_CATCH_UP_CHUNK)
          await new Promise((resolve) => setImmediate(resolve));
      },
    },
    { name: "webhooks:deliver", everySeconds: s.config.workerIntervalSeconds, run: () => s.webhooks.deliverDue() },
    // Twilio-style status callbacks and incoming-message posts (src/modules/twilio/posts.ts).
    { name: "twilio:posts", everySeconds: s.config.workerIntervalSeconds, run: () => s.twilio.posts.deliverDue() },
    { name: "idempotency:prune", everySeconds: 3600, run: () => s.idempotency.prune() },
    // Verify's sends and finished verifications past any limit's or check's need.
    { name: "verify:prune", everySeconds: 3600, run: () => s.verify.prune() },
    // Pool members whose pause after carrier failures has ended are announced (pool.member_resumed).
    { name: "pools:resume", everySeconds: 30, run: () => s.pools.resumeDue() },
    // PIGEON_RETENTION_DAYS: what finished longer ago than that, removed in pieces (off at 0).
    ...(s.retention.days > 0 ? [{ name: "retention:prune", everySeconds: 3600, run: () => s.retention.tick() }] : []),
    // Scheduled backups (SQLite, PIGEON_BACKUP_DIR): checked every second, taken when due.
    ...(s.backups ? [{ name: "backups:schedule", everySeconds: 1, run: () => s.backups?.tick() }] : []),
    // PostgreSQL's hourly count changes, folded in (nothing to do on SQLite, whose triggers upsert).
    ...(s.storage.dialect === "postgres"
      ? [
          { name: "notifications:fold-hourly", everySeconds: 5, run: () => s.channelCore.notifications.foldHourly() },
          // The shared request limits' passed windows.
          { name: "limits:prune", everySeconds: 60, run: () => s.rateLimiter.prune?.() },
        ]
      : []),
    // Each channel's own periodic work, given its service.
    ...s.builtChannels.flatMap(({ channel, runtime }) => channel.tasks(runtime.service, s.config)),
  ];
}

/** Attempts and deliveries that a stopped server left claimed go back to the queue. */
async function recover(s: Services): Promise<void> {
  await s.dispatcher.recoverInterrupted();
  const cutOff = await s.webhooks.recoverInterrupted();
  if (cutOff > 0) s.logger.warn(`${cutOff} webhook deliveries were cut off mid-call by a stop and will be sent again`);
  const posts = await s.twilio.posts.recoverInterrupted();
  if (posts > 0) s.logger.warn(`${posts} Twilio-style posts were cut off mid-call by a stop and will be made again`);
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
      s.webhooks.stop();
      s.twilio.posts.stop();
      s.retention.stop();
      scheduler.stop();
      const idle = await scheduler.idle(graceMs);
      // Claims still held after the grace are then another server's to recover at once.
      await s.cluster.resign().catch((error) => s.log("could not give up the cluster leases", error));
      await s.signals.stop();
      return idle;
    },
  };
}
