// A message that was not sent in time must not go out late: once its valid_until (from the send's
// ttl or valid_until) passes, whatever still waits for it fails with `expired`, its credits
// refunded and its events emitted by the usual transition. The channels never hand it out after
// that instant either (the dispatcher's claim and a phone's download both skip it).
import type { Clock } from "../../clock";
import type { NotificationRepository } from "./repository";
import type { NotificationState } from "./state";

/** At most this many expire per run; the next tick takes the rest. */
const BATCH = 500;

export function createExpiry(deps: {
  clock: Clock;
  notifications: NotificationRepository;
  state: NotificationState;
  offlineAfterMs: number;
}) {
  const { clock, notifications, state, offlineAfterMs } = deps;

  /**
   * notifications:expire — fails the pending notifications past their valid_until. A message a
   * paired phone already took up is given the phone's offline threshold to report its own
   * "TTL expired" (or that it was sent just in time) first.
   */
  async function expireDue(): Promise<number> {
    const ids = await notifications.expiredWaiting(clock.now(), offlineAfterMs, BATCH);
    let failed = 0;
    for (const id of ids) {
      // One that waited for its sender pool's caps to reset says so (src/modules/pools).
      const held = await notifications.hasLogEvent(id, "pool_held");
      const moved = await state.transition(
        id,
        "failed",
        held
          ? {
              errorCode: "quota_exhausted",
              reason: "every member of its sender pool was at a cap until after its valid_until (ttl)",
              detail: "quota exhausted: its time to live passed while every pool member was at a cap",
            }
          : {
              errorCode: "expired",
              reason: "not sent before its valid_until (ttl)",
              detail: "expired: its time to live passed before it was sent",
            },
      );
      if (moved) failed++;
    }
    return failed;
  }

  return { expireDue };
}

export type Expiry = ReturnType<typeof createExpiry>;
