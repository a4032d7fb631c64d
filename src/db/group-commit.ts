// Group commit: synchronous jobs submitted in the same turn of the event loop share one
// transaction (each in its own savepoint), so concurrent writers share one fsync instead of
// queueing for one each. A lone job is committed on the next turn, alone.
import type { Database } from "bun:sqlite";

interface Entry {
  job: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  afterCommit: (() => void)[];
  result?: unknown;
  error?: unknown;
}

/** `onCommit`: after each batch that committed (the disk took it). */
export function createGroupCommit(sqlite: Database, log?: (message: string, error?: unknown) => void, onCommit?: () => void) {
  const queue: Entry[] = [];
  /** The entry whose job is running now, so afterCommit knows whom a callback belongs to. */
  let running: Entry | null = null;

  function flush() {
    const batch = queue.splice(0);
    try {
      sqlite.transaction(() => {
        for (const entry of batch) {
          running = entry;
          try {
            entry.result = sqlite.transaction(entry.job)();
          } catch (error) {
            entry.error = error;
          } finally {
            running = null;
          }
        }
      })();
    } catch (error) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    onCommit?.();
    for (const entry of batch) entry.error !== undefined ? entry.reject(entry.error) : entry.resolve(entry.result);
    // What follows a commit (waking a phone) must not undo the replies above; a job that failed
    // was rolled back, so what it asked to follow does not happen.
    for (const entry of batch) {
      if (entry.error !== undefined) continue;
      for (const callback of entry.afterCommit) {
        try {
          callback();
        } catch (error) {
          log?.("an after-commit callback failed", error);
        }
      }
    }
  }

  return {
    /** Runs `job` in the next shared transaction; resolves with what it returned once committed. */
    submit<T>(job: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ job, resolve: resolve as (v: unknown) => void, reject, afterCommit: [] });
        if (queue.length === 1) setImmediate(flush);
      });
    },

    /** From inside a job: run `callback` once the batch has committed, if this job succeeded. */
    afterCommit(callback: () => void) {
      if (!running) throw new Error("afterCommit is only for a job running under submit");
      running.afterCommit.push(callback);
    },
  };
}

export type GroupCommit = ReturnType<typeof createGroupCommit>;
