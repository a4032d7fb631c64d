// Named periodic tasks on croner. `protect` keeps a slow tick from overlapping the next; `catch`
// keeps one failing tick from stopping the schedule. Jobs start when constructed, so only main
// builds them, never createApp.
import { Cron } from "croner";
import type { Task } from "../core/task";
import type { LogFn } from "../lib/log";

export function startScheduler(tasks: Task[], log: LogFn) {
  // Runs in progress, so a shutdown can wait for them to record what they did.
  const running = new Set<Promise<unknown>>();
  const jobs = tasks.map(
    (task) =>
      new Cron(
        "* * * * * *",
        {
          name: task.name,
          protect: true,
          interval: task.everySeconds ?? 1,
          catch: (error: unknown) => log(`task ${task.name} failed`, error, { task: task.name }),
        },
        async () => {
          const run = Promise.resolve().then(task.run);
          running.add(run);
          try {
            await run;
          } finally {
            running.delete(run);
          }
        },
      ),
  );
  return {
    /** No run starts after this; runs in progress go on. */
    stop() {
      for (const job of jobs) job.stop();
    },
    /** Waits for the runs in progress, at most `ms`; true when all finished in time. */
    async idle(ms: number): Promise<boolean> {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
      const done = Promise.allSettled([...running]).then(() => true as const);
      const finished = await Promise.race([done, timeout]);
      clearTimeout(timer);
      return finished;
    },
  };
}
