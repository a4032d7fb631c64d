// Several servers on one PostgreSQL database. Each has an id and renews a lease on it (a `lease`
// row named `server:<id>`) every tick; the claims it makes on work (a notification `dispatching`,
// a webhook delivery `delivering`) carry that id, so a server starting, or the leader every few
// seconds, recovers only the claims of servers whose lease has run out: never a live server's
// calls in flight. One of them also holds the `leader` lease and runs the cluster's periodic
// tasks (expiry, failover, retries, catch-up, syncs) so each runs once per tick; when it stops
// renewing, another takes the lease over once it expires.
//
// On SQLite one server owns the data directory (pigeon.lock), so it is alone: it always leads,
// writes no lease, and at start recovers every claim, as before.
import { randomUUID } from "node:crypto";
import type { Clock } from "../clock";
import type { Storage } from "../db/storage";
import type { Cluster } from "../core/cluster";
import { abandonedClaim, createLeaseRepository } from "./lease-repository";

/** A lease not renewed for this long is another server's to take. */
export const LEASE_MS = 10_000;

export function createCluster(
  storage: Storage,
  clock: Clock,
  options: { shared?: boolean; log?: (message: string) => void } = {},
): Cluster {
  const id = randomUUID();
  const shared = options.shared ?? storage.dialect === "postgres";
  const mine = `server:${id}`;
  const leases = createLeaseRepository(storage);
  /** Until when the leader's lease is ours, by our clock (0: not ours). */
  let leadingUntil = 0;

  return {
    id,
    shared,
    abandoned: (column) => abandonedClaim(column, shared),
    async heartbeat() {
      if (!shared) return;
      const now = clock.now();
      await leases.renew(mine, id, now + LEASE_MS);
      const leading = await leases.take("leader", id, now + LEASE_MS, now);
      // A margin under the lease: we stop leading before another server may start.
      const was = leadingUntil > now;
      leadingUntil = leading ? now + LEASE_MS - 2_000 : 0;
      if (was !== leading)
        options.log?.(
          was ? "this server no longer leads the cluster's periodic tasks" : "this server now leads the cluster's periodic tasks",
        );
    },
    isLeader: () => !shared || clock.now() < leadingUntil,
    async resign() {
      if (!shared) return;
      leadingUntil = 0;
      await leases.release(id);
    },
  };
}
