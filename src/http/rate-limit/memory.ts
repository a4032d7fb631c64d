// The limits in memory (types.ts): per-key request limits (spec section 8), a sliding minute and a
// UTC-day window with the numbers taken from the key's plan; a throttle on failed authentications
// per client address; and the dashboard's sign-in throttle. On SQLite's one server the counters
// live in memory: they guard the API, they are not business state, and a restart that forgets them
// errs on the caller's side. Servers sharing a PostgreSQL database count in it instead (shared.ts).
//
// The minute is sliding, not a calendar minute: a calendar window lets a caller spend its whole
// allowance in the last second of one minute and again in the first second of the next. Requests
// are counted in one-second slots, and a request is admitted only if the slots that could hold a
// request from the last 60 s (the current one and the 60 before it) hold fewer than the limit. That
// errs by at most a second on the strict side and guarantees that no 60-second span ever holds more
// than the limit, in 61 counters per key whatever the limit.
import type { Clock } from "../../clock";
import { DAY } from "../../lib/time";
import type { Freshness } from "../../core/caller";
import { AppError } from "../../core/errors";
import { authThrottled, limited } from "./refusals";
import {
  AUTH_FAILURES_PER_MINUTE,
  type KeyHolder,
  MINUTE_SLOTS as SLOTS,
  type RateDecision,
  type RateLimiter,
  SIGN_IN_ATTEMPTS_PER_MINUTE,
  SIGN_IN_WINDOW_MS,
  type SignInThrottle,
  SLOT_MS,
} from "./types";

/** Addresses (or sign-in keys) remembered at most; beyond that the idle ones are forgotten. */
const MAX_TRACKED = 10_000;

/** Requests in the last minute, in one-second slots (a ring indexed by slot number). */
class SlidingMinute {
  private counts = new Uint32Array(SLOTS);
  private stamps = new Float64Array(SLOTS).fill(-Infinity);

  private live(now: number): number[] {
    const current = Math.floor(now / SLOT_MS);
    const out: number[] = [];
    for (let i = 0; i < SLOTS; i++) if (this.counts[i] > 0 && this.stamps[i] > current - SLOTS) out.push(i);
    return out.sort((a, b) => this.stamps[a] - this.stamps[b]);
  }

  count(now: number): number {
    // Every request asks: a sum needs no order (the sort in live() was 2% of a send's time).
    const current = Math.floor(now / SLOT_MS);
    let n = 0;
    for (let i = 0; i < SLOTS; i++) if (this.counts[i] > 0 && this.stamps[i] > current - SLOTS) n += this.counts[i];
    return n;
  }

  add(now: number): void {
    const slot = Math.floor(now / SLOT_MS);
    const i = slot % SLOTS;
    if (this.stamps[i] !== slot) {
      this.stamps[i] = slot;
      this.counts[i] = 0;
    }
    this.counts[i]++;
  }

  /** When the count will have dropped to at most `target` (now if it already has). */
  freeAt(now: number, target: number): number {
    let n = this.count(now);
    if (n <= target) return now;
    for (const i of this.live(now)) {
      n -= this.counts[i];
      if (n <= target) return (this.stamps[i] + SLOTS) * SLOT_MS;
    }
    return now + SLOTS * SLOT_MS;
  }

  /** The last moment anything was counted: after a minute past it, the counter is empty. */
  lastActivity(): number {
    return Math.max(...this.stamps) * SLOT_MS;
  }
}

interface KeyWindow {
  minute: SlidingMinute;
  dayStart: number;
  dayCount: number;
}

/**
 * The in-memory limiter of SQLite's single server. With `generation` (the database's cache
 * generation, read once a request before the key), the caller's record and what the request's
 * caches hold may come from memory, as on PostgreSQL (src/lib/generation-cache.ts).
 */
export function createRateLimiter(clock: Clock, generation?: () => Promise<number>) {
  const windows = new Map<number, KeyWindow>();
  const failures = new Map<string, SlidingMinute>();

  function windowFor(keyId: number, now: number): KeyWindow {
    const dayStart = now - (now % DAY);
    let w = windows.get(keyId);
    if (!w) {
      w = { minute: new SlidingMinute(), dayStart, dayCount: 0 };
      windows.set(keyId, w);
    }
    if (w.dayStart !== dayStart) {
      w.dayStart = dayStart;
      w.dayCount = 0;
    }
    return w;
  }

  /** Counts one request; throws rate_limited (429) when either window is full. */
  function hit(keyId: number, perMinute: number, perDay: number): RateDecision {
    const now = clock.now();
    const w = windowFor(keyId, now);
    const dayReset = w.dayStart + DAY;

    if (w.dayCount >= perDay) {
      throw limited(perDay, dayReset, now, `Daily request limit of ${perDay} reached`);
    }
    if (w.minute.count(now) >= perMinute) {
      throw limited(perMinute, w.minute.freeAt(now, perMinute - 1), now, `Rate limit of ${perMinute} requests per minute reached`);
    }
    w.minute.add(now);
    w.dayCount++;
    const used = w.minute.count(now);
    const remaining = Math.min(perMinute - used, perDay - w.dayCount);
    return {
      headers: {
        "x-ratelimit-limit": String(perMinute),
        "x-ratelimit-remaining": String(remaining),
        // When the allowance next grows: the oldest counted request leaves the window.
        "x-ratelimit-reset": String(Math.ceil(w.minute.freeAt(now, used - 1) / 1000)),
      },
    };
  }

  /** What a key has left in the sliding minute, without counting a request. */
  function peek(keyId: number, perMinute: number, perDay: number) {
    const now = clock.now();
    const w = windowFor(keyId, now);
    const used = w.minute.count(now);
    return {
      remaining: Math.max(0, Math.min(perMinute - used, perDay - w.dayCount)),
      resetAt: w.minute.freeAt(now, Math.max(0, used - 1)),
    };
  }

  /**
   * Before a credential is even looked at: an address that failed authentication too often in the
   * last minute is answered 429, so secrets cannot be guessed at the server's full speed.
   */
  function checkAuthFailures(address: string): void {
    const now = clock.now();
    const counter = failures.get(address);
    if (!counter || counter.count(now) < AUTH_FAILURES_PER_MINUTE) return;
    throw authThrottled(counter.freeAt(now, AUTH_FAILURES_PER_MINUTE - 1), now);
  }

  function recordAuthFailure(address: string): void {
    const now = clock.now();
    let counter = failures.get(address);
    if (counter)
      failures.delete(address); // re-inserted below: the map stays in order of last failure
    else {
      counter = new SlidingMinute();
      if (failures.size >= MAX_TRACKED) evictFailures(now);
    }
    counter.add(now);
    failures.set(address, counter);
  }

  /** Forgets addresses with nothing in the last minute, and the oldest ones if that is not enough. */
  function evictFailures(now: number): void {
    for (const [address, counter] of failures) {
      if (counter.lastActivity() + SLOTS * SLOT_MS > now) break; // ordered by last failure
      failures.delete(address);
    }
    while (failures.size >= MAX_TRACKED) failures.delete(failures.keys().next().value!);
  }

  /**
   * One sign-in step under the throttle: refused while `address` is over, a 401 counts against it.
   * The step may be async (password checks run off the event loop); its rejection counts the same.
   */
  function guardAuth<T>(address: string, step: () => T): T {
    checkAuthFailures(address);
    const count = (error: unknown) => {
      if (error instanceof AppError && error.code === "unauthorized") recordAuthFailure(address);
    };
    try {
      const result = step();
      if (result instanceof Promise) {
        return result.catch((error: unknown) => {
          count(error);
          throw error;
        }) as T;
      }
      return result;
    } catch (error) {
      count(error);
      throw error;
    }
  }

  async function admitKey<A extends KeyHolder>(address: string, authenticate: (freshness?: Freshness) => A | Promise<A>) {
    // Read before the key: a record kept at this generation or later holds every change committed
    // up to now, whichever process made it.
    const seen = generation ? await generation() : undefined;
    const auth = await guardAuth(address, () => authenticate(seen === undefined ? undefined : { atLeast: seen, known: seen }));
    if (seen !== undefined) auth.cacheGeneration = seen;
    return { auth, decision: hit(auth.keyId, auth.plan.requestsPerMinute, auth.plan.requestsPerDay) };
  }

  const limiter = { hit, peek, checkAuthFailures, recordAuthFailure, guardAuth, admitKey } satisfies RateLimiter;
  // Beside the interface: how many addresses the failure throttle remembers (its bound is tested).
  return { ...limiter, trackedAddresses: () => failures.size };
}

/**
 * Sign-in attempts in memory, each remembered for a minute to the millisecond under each of its
 * keys (the client's address, the email).
 */
export function createSignInThrottle(now: () => number) {
  const attempts = new Map<string, number[]>();

  function recent(key: string, at: number): number[] {
    const list = (attempts.get(key) ?? []).filter((t) => t > at - SIGN_IN_WINDOW_MS);
    if (list.length) attempts.set(key, list);
    else attempts.delete(key);
    return list;
  }

  return {
    attempt(keys: string[]): number {
      const at = now();
      let wait = 0;
      for (const key of keys) {
        const list = recent(key, at);
        if (list.length >= SIGN_IN_ATTEMPTS_PER_MINUTE) wait = Math.max(wait, Math.ceil((list[0] + SIGN_IN_WINDOW_MS - at) / 1000));
      }
      if (wait > 0) return wait;
      for (const key of keys) attempts.set(key, [...recent(key, at), at]);
      // Bounded memory: forget windows that have passed once the map grows.
      if (attempts.size > MAX_TRACKED) for (const key of [...attempts.keys()]) recent(key, at);
      return 0;
    },
  } satisfies SignInThrottle;
}
