// The group commit of the send path, on the storage seam: synchronous jobs submitted in the same
// turn of the event loop share one transaction with every other unit of work of that turn, each in
// its own savepoint, so concurrent writers share one fsync. Kept while the code still on
// synchronous repositories moves to the async ones (src/db/sqlite-storage.ts's submitSync).
import type { SqliteStorage } from "./sqlite-storage";

export function createGroupCommit(storage: SqliteStorage) {
  return {
    /** Runs `job` in the next shared transaction; resolves with what it returned once committed. */
    submit<T>(job: () => T): Promise<T> {
      return storage.submitSync(job);
    },

    /** From inside a job: run `callback` once the batch has committed, if this job succeeded. */
    afterCommit(callback: () => void) {
      if (!storage.inTransaction) throw new Error("afterCommit is only for a job running under submit");
      storage.afterCommit(callback);
    },
  };
}

export type GroupCommit = ReturnType<typeof createGroupCommit>;
