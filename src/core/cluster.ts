// What a server knows of the others sharing its database (src/worker/cluster.ts builds it):
// services ask `shared`, never the SQL dialect, whether other servers may hold work.

export interface Cluster {
  /** This server's id, written on the claims it makes. */
  readonly id: string;
  /** Whether other servers may share the database (PostgreSQL). */
  readonly shared: boolean;
  /**
   * SQL that is true for a claim (`column` holds its server's id) that no live server holds;
   * its parameter is `now`.
   */
  abandoned(column: string): string;
  /** Renews this server's lease and tries for the leader's (nothing on SQLite, which has no leases). */
  heartbeat(): Promise<void>;
  /** Whether this server runs the cluster's periodic tasks now. */
  isLeader(): boolean;
  /** Gives up this server's leases at a clean stop, so another leads at once. */
  resign(): Promise<void>;
}
