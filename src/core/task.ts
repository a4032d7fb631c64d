// A periodic task as modules and channels declare them; the worker's scheduler runs them.

export interface Task {
  /** domain:verb */
  name: string;
  /** Seconds between runs (default 1). */
  everySeconds?: number;
  run: () => unknown;
  /**
   * Runs on every server sharing the database (its own claims, its own phones' streams); the
   * others run only on the cluster's leader, once per tick for the whole cluster.
   */
  everyServer?: boolean;
}
