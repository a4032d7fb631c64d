// Pausing and resuming pool members: a member whose carrier fails its pool's threshold in a row is
// paused for a back-off that doubles each time until a message of it goes out; a person pauses and
// resumes by hand. Every pause and every resume is announced once, saying who or what did it.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { iso } from "../../lib/time";
import type { MemberRow, PoolRepository } from "./repository";

/**
 * Who or what paused or resumed a pool member, as its events say: an API key, a dashboard user,
 * the member's carrier failures (a pause), or the end of their back-off (a resume).
 */
export type PoolActor =
  | { type: "api_key"; key_id: number | null; key_name: string }
  | { type: "dashboard_user"; user_id: number; email: string }
  | { type: "carrier_failures" }
  | { type: "backoff_ended" };

/** Failures that say nothing about the member's carrier: they do not count toward its pause. */
const NOT_THE_CARRIER = new Set(["recipient_opted_out", "expired", "quota_exhausted", "device_deleted", "device_offline", "cancelled"]);

export interface PauseDeps {
  storage: Storage;
  clock: Clock;
  repo: PoolRepository;
  /** Whether a device is any pool's member (a message's outcome matters to pools only then). */
  isMemberDevice: (deviceId: number) => Promise<boolean>;
  /** pool.member_paused and pool.member_resumed, in the caller's unit of work. */
  emit: (workspaceId: number, type: "pool.member_paused" | "pool.member_resumed", data: Record<string, unknown>) => Promise<void>;
}

export function createPauses({ storage, clock, repo, isMemberDevice, emit }: PauseDeps) {
  /** Whether a member is skipped for a pause: by hand, or after carrier failures until a time still ahead. */
  const pausedAt = (m: MemberRow, now: number) => m.paused || (m.pausedUntil !== null && m.pausedUntil > now);

  /** The pauses and resumes a pool update made, each announced once with who made it. */
  async function announceHandChanges(workspaceId: number, before: MemberRow[], after: MemberRow[], by: PoolActor) {
    const now = clock.now();
    const key = (m: MemberRow) => `${m.deviceId}:${m.simNumber ?? ""}`;
    const old = new Map(before.map((m) => [key(m), m]));
    for (const m of after) {
      const was = old.get(key(m));
      if (!was) continue;
      const base = { pool_id: m.poolId, member_id: m.id, device_id: m.deviceId, sim_number: m.simNumber };
      if (!was.paused && m.paused)
        await emit(workspaceId, "pool.member_paused", {
          ...base,
          failures: null,
          last_error_code: null,
          paused_until: null,
          backoff_seconds: null,
          by,
        });
      else if (pausedAt(was, now) && !pausedAt(m, now)) await emit(workspaceId, "pool.member_resumed", { ...base, by });
    }
  }

  /**
   * A message's outcome, inside the unit of work that records it: a carrier failure counts against
   * the pool members on its device (and SIM); at the pool's threshold a member is paused for its
   * back-off (doubled each time until a message of it goes out) and pool.member_paused is emitted.
   * A message that went out clears the count.
   */
  async function outcome(
    n: { workspaceId: number; deviceId: number | null; simNumber: number | null },
    to: string,
    errorCode: string | null,
  ) {
    if (n.deviceId === null || !(await isMemberDevice(n.deviceId))) return;
    const failed = to === "failed" && !NOT_THE_CARRIER.has(errorCode ?? "");
    if (!failed && to !== "sent" && to !== "delivered") return;
    const members = (await repo.membersOnDevice(n.workspaceId, n.deviceId)).filter(
      (m) => m.simNumber === null || m.simNumber === n.simNumber,
    );
    if (!failed) return repo.succeeded(members.map((m) => m.id));
    const now = clock.now();
    for (const m of members) {
      const count = await repo.failed(m.id);
      const p = await repo.get(n.workspaceId, m.poolId);
      if (!p || count < p.failureThreshold) continue;
      const backoff = m.backoffSeconds === null ? p.failureBackoffSeconds : Math.min(m.backoffSeconds * 2, 30 * 86_400);
      const until = now + backoff * 1000;
      await repo.pause(m.id, until, backoff);
      await emit(n.workspaceId, "pool.member_paused", {
        pool_id: p.id,
        member_id: m.id,
        device_id: m.deviceId,
        sim_number: m.simNumber,
        failures: count,
        last_error_code: errorCode,
        paused_until: iso(until),
        backoff_seconds: backoff,
        by: { type: "carrier_failures" } satisfies PoolActor,
      });
    }
  }

  /** pools:resume: members whose pause has ended are announced (pool.member_resumed); the choice already takes them again. */
  async function resumeDue(): Promise<number> {
    return storage.transaction(async () => {
      const resumed = await repo.resumeDue(clock.now());
      // A member also paused by hand is not taken again: its resume is announced when a person resumes it.
      for (const m of resumed.filter((r) => !r.paused))
        await emit(m.workspaceId, "pool.member_resumed", {
          pool_id: m.poolId,
          member_id: m.id,
          device_id: m.deviceId,
          sim_number: m.simNumber,
          by: { type: "backoff_ended" } satisfies PoolActor,
        });
      return resumed.length;
    });
  }

  return { announceHandChanges, outcome, resumeDue };
}
