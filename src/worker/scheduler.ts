// Named periodic tasks on croner. `protect` keeps a slow tick from overlapping the next; `catch`
// keeps one failing tick from stopping the schedule. Jobs start when constructed, so only main
// builds them, never createApp.
import { Cron } from "croner";

export interface Task {
  /** domain:verb */
  name: string;
  /** Seconds between runs (default 1). */
  everySeconds?: number;
  run: () => unknown;
}

export function startScheduler(tasks: Task[], log: (message: string, error?: unknown) => void) {
  const jobs = tasks.map(
    (task) =>
      new Cron(
        "* * * * * *",
        {
          name: task.name,
          protect: true,
          interval: task.everySeconds ?? 1,
          catch: (error: unknown) => log(`task ${task.name} failed`, error),
        },
        async () => {
          await task.run();
        },
      ),
  );
  return {
    stop() {
      for (const job of jobs) job.stop();
    },
  };
}
