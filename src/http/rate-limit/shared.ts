// The limits of types.ts counted in the database, so that they hold for every server sharing it
// (PostgreSQL). The rules are memory.ts's: a key's sliding minute is the current second and the
// 60 before it, its day the UTC day; AUTH_FAILURES_PER_MINUTE failed authentications per client
// address; SIGN_IN_ATTEMPTS_PER_MINUTE sign-in attempts per address and per email. Checking and
// counting are one call (rate-counter-repository.ts), so two servers admitting at once never pass
// a limit together.
import type { Clock } from "../../clock";
import type { Executor } from "../../db/storage";
import { createBatcher } from "../../lib/batcher";
import { DAY } from "../../lib/time";
import { AppError } from "../../core/errors";
import { createRateCounterRepository, type Admission, type Window } from "./rate-counter-repository";
import { authThrottled, limited } from "./refusals";
import {
  AUTH_FAILURES_PER_MINUTE,
  type KeyHolder,
  type Limits,
  MINUTE_SLOTS,
  type RateDecision,
  type RateLimiter,
  SIGN_IN_ATTEMPTS_PER_MINUTE,
  SIGN_IN_WINDOW_MS,
  type SignInThrottle,
  SLOT_MS as SECOND,
} from "./types";
import type { Freshness } from "../../core/caller";

/** The sign-in throttle's minute in slots: an attempt is forgotten once a minute has passed since its second. */
const SIGN_IN_SLOTS = SIGN_IN_WINDOW_MS / SECOND;

/**
 * A minute of one-second slots: MINUTE_SLOTS by default (strict: no 60-second span holds more than
 * the limit); the sign-in throttle's SIGN_IN_SLOTS forget an attempt once a minute has passed since its second.
 */
function minuteWindow(bucket: string, now: number, limit: number, slots = MINUTE_SLOTS): Window {
  const slot = Math.floor(now / SECOND);
  return { bucket, slot, since: slot - (slots - 1), limit, expiresAt: (slot + slots) * SECOND };
}

/** When a minute window whose oldest counted second is `oldest` next grows (that second leaves it). */
const freeAt = (oldest: number | null, now: number, slots = MINUTE_SLOTS) => (oldest === null ? now : (oldest + slots) * SECOND);

/** An address's failed authentications in the last minute. */
const failureWindow = (address: string, now: number) => minuteWindow(`auth:${address}`, now, AUTH_FAILURES_PER_MINUTE);

/** The shared limiter and the dashboard's shared sign-in throttle, over one counter repository. */
export function createSharedLimits(db: Executor, clock: Clock): Limits {
  const counters = createRateCounterRepository(db);
  return {
    rateLimiter: sharedRateLimiter(counters, clock),
    signInThrottle: sharedSignInThrottle(counters, () => clock.now()),
  };
}

type Counters = ReturnType<typeof createRateCounterRepository>;

function sharedRateLimiter(counters: Counters, clock: Clock): RateLimiter {
  /**
   * A key's requests admitted together (src/lib/batcher.ts): those of one key, second and limits
   * that arrive while an admission of theirs is in flight take one call the next time, counting as
   * many in the key's minute and day and checking each one's address (`windows`: the address's
   * failures, then the key's minute and day). When the key lacks room for all of them, each is
   * admitted alone, in order, as if they had come one by one; so is a request that comes alone.
   */
  const admitTogether = createBatcher<Window[], Admission>(async (asks) => {
    if (asks.length > 1) {
      const addresses = [...new Map(asks.map((w) => [w[0].bucket, w[0]])).values()];
      const [, minute, day] = asks[0];
      const n = asks.length;
      const all = await counters.admit([...addresses, minute, day], [...addresses.map(() => 0), n, n]);
      if (all.admitted) {
        const at = addresses.length;
        // Each request is told what was left after it, as if they had been counted in turn.
        return asks.map((w, i) => {
          const own = addresses.findIndex((a) => a.bucket === w[0].bucket);
          const before = n - 1 - i;
          return {
            admitted: true,
            used: [all.used[own], all.used[at] - before, all.used[at + 1] - before],
            oldest: [all.oldest[own], all.oldest[at], all.oldest[at + 1]],
            generation: all.generation,
          };
        });
      }
    }
    const one: Admission[] = [];
    for (const w of asks) one.push(await counters.admit(w, [false, true, true]));
    return one;
  });

  /** The newest cache generation an admission has read here (src/lib/generation-cache.ts). */
  let newest: number | undefined;
  function keyWindows(keyId: number, perMinute: number, perDay: number, now: number): Window[] {
    const day = Math.floor(now / DAY);
    return [
      minuteWindow(`key:${keyId}:m`, now, perMinute),
      { bucket: `key:${keyId}:d`, slot: day, since: day, limit: perDay, expiresAt: (day + 1) * DAY + SECOND },
    ];
  }

  /** The rate headers of a key's request, or its 429; the key's minute and day are `admission`'s windows from `at`. */
  function keyDecision(admission: Admission, at: number, windows: Window[], perMinute: number, perDay: number, now: number): RateDecision {
    const { admitted, used, oldest } = admission;
    if (!admitted) {
      if (used[at + 1] >= perDay) throw limited(perDay, (windows[at + 1].slot + 1) * DAY, now, `Daily request limit of ${perDay} reached`);
      throw limited(perMinute, freeAt(oldest[at], now), now, `Rate limit of ${perMinute} requests per minute reached`);
    }
    return {
      headers: {
        "x-ratelimit-limit": String(perMinute),
        "x-ratelimit-remaining": String(Math.min(perMinute - used[at], perDay - used[at + 1])),
        "x-ratelimit-reset": String(Math.ceil(freeAt(oldest[at], now) / 1000)),
      },
    };
  }

  async function checkAuthFailures(address: string): Promise<void> {
    const now = clock.now();
    const { admitted, oldest } = await counters.admit([failureWindow(address, now)], false);
    if (!admitted) throw authThrottled(freeAt(oldest[0], now), now);
  }

  async function recordAuthFailure(address: string): Promise<void> {
    const w = failureWindow(address, clock.now());
    await counters.count(w.bucket, w.slot, w.expiresAt);
  }

  return {
    /** Counts one request of a key; throws rate_limited (429) when its minute or its day is full. */
    async hit(keyId: number, perMinute: number, perDay: number): Promise<RateDecision> {
      const now = clock.now();
      const windows = keyWindows(keyId, perMinute, perDay, now);
      return keyDecision(await counters.admit(windows, true), 0, windows, perMinute, perDay, now);
    },

    /**
     * The address's throttle and the key's count in one call once the key is known: its failed
     * authentications are checked (not counted) beside the key's minute and day. A failed
     * authentication is counted, or refused with 429 when the address is already over, as in
     * guardAuth.
     */
    async admitKey<A extends KeyHolder>(address: string, authenticate: (freshness?: Freshness) => A | Promise<A>) {
      /** The caller, a failed authentication counted against the address (or refused when it is over). */
      const caller = async (freshness: Freshness) => {
        try {
          return await authenticate(freshness);
        } catch (error) {
          if (error instanceof AppError && error.code === "unauthorized") {
            const now = clock.now();
            const { admitted, oldest } = await counters.admit([failureWindow(address, now)], true);
            if (!admitted) throw authThrottled(freeAt(oldest[0], now), now);
          }
          throw error;
        }
      };
      // A record kept in memory is a first guess: the admission says whether it is still current.
      let auth = await caller({ known: newest });
      const now = clock.now();
      const { requestsPerMinute: perMinute, requestsPerDay: perDay } = auth.plan;
      const windows = [failureWindow(address, now), ...keyWindows(auth.keyId, perMinute, perDay, now)];
      const [, minute, day] = windows;
      const admission = await admitTogether(`${minute.bucket}|${minute.slot}|${minute.limit}|${day.slot}|${day.limit}`, windows);
      if (!admission.admitted && admission.used[0] >= AUTH_FAILURES_PER_MINUTE) throw authThrottled(freeAt(admission.oldest[0], now), now);
      const seen = admission.generation;
      newest = Math.max(newest ?? 0, seen);
      // Changed since it was read (a key disabled or rotated, a plan changed through any server):
      // read again before anything is done for it. It was counted under its old limits; the
      // answer below is the one the limits it was counted under gave.
      if (auth.generation !== undefined && auth.generation < seen) auth = await caller({ atLeast: seen, known: seen });
      auth.cacheGeneration = seen;
      return { auth, decision: keyDecision(admission, 1, windows, perMinute, perDay, now) };
    },

    /** What a key has left in its minute, without counting a request. */
    async peek(keyId: number, perMinute: number, perDay: number) {
      const now = clock.now();
      const { used, oldest } = await counters.admit(keyWindows(keyId, perMinute, perDay, now), false);
      return { remaining: Math.max(0, Math.min(perMinute - used[0], perDay - used[1])), resetAt: freeAt(oldest[0], now) };
    },

    checkAuthFailures,
    recordAuthFailure,

    /** One sign-in step under the throttle: refused while `address` is over, a 401 counts against it. */
    async guardAuth<T>(address: string, step: () => T): Promise<Awaited<T>> {
      await checkAuthFailures(address);
      try {
        return await step();
      } catch (error) {
        if (error instanceof AppError && error.code === "unauthorized") await recordAuthFailure(address);
        throw error;
      }
    },

    /** Forgets the windows that have passed (the leader, every minute). */
    prune: () => counters.prune(clock.now()),
  };
}

/** The dashboard's sign-in throttle (memory.ts's createSignInThrottle), shared by every server. */
function sharedSignInThrottle(counters: Counters, now: () => number): SignInThrottle {
  const limit = SIGN_IN_ATTEMPTS_PER_MINUTE;
  return {
    /** Records an attempt; the seconds to wait when any of `keys` is over the limit, else 0. */
    async attempt(keys: string[]): Promise<number> {
      const at = now();
      const { admitted, used, oldest } = await counters.admit(
        keys.map((key) => minuteWindow(`signin:${key}`, at, limit, SIGN_IN_SLOTS)),
        true,
      );
      if (admitted) return 0;
      let wait = 0;
      for (let i = 0; i < keys.length; i++)
        if (used[i] >= limit) wait = Math.max(wait, Math.ceil((freeAt(oldest[i], at, SIGN_IN_SLOTS) - at) / 1000));
      return Math.max(1, wait);
    },
  };
}
