// Per-key request limits (spec section 8): a fixed one-minute window and a UTC-day window, with
// the numbers taken from the key's plan. Counters live in memory: they guard the API, they are not
// business state, and a restart that forgets them errs on the caller's side.
import type { Clock } from "../clock";
import { DAY, MINUTE } from "../lib/time";
import { AppError } from "./errors";

interface Window {
  minuteStart: number;
  minuteCount: number;
  dayStart: number;
  dayCount: number;
}

export interface RateDecision {
  headers: Record<string, string>;
}

export function createRateLimiter(clock: Clock) {
  const windows = new Map<number, Window>();

  function windowFor(keyId: number, now: number): Window {
    const minuteStart = now - (now % MINUTE);
    const dayStart = now - (now % DAY);
    let w = windows.get(keyId);
    if (!w) {
      w = { minuteStart, minuteCount: 0, dayStart, dayCount: 0 };
      windows.set(keyId, w);
    }
    if (w.minuteStart !== minuteStart) {
      w.minuteStart = minuteStart;
      w.minuteCount = 0;
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
    const minuteReset = w.minuteStart + MINUTE;
    const dayReset = w.dayStart + DAY;

    if (w.dayCount >= perDay) {
      throw limited(perDay, dayReset, now, `Daily request limit of ${perDay} reached`);
    }
    if (w.minuteCount >= perMinute) {
      throw limited(perMinute, minuteReset, now, `Rate limit of ${perMinute} requests per minute reached`);
    }
    w.minuteCount++;
    w.dayCount++;
    const remaining = Math.min(perMinute - w.minuteCount, perDay - w.dayCount);
    return {
      headers: {
        "x-ratelimit-limit": String(perMinute),
        "x-ratelimit-remaining": String(remaining),
        "x-ratelimit-reset": String(Math.ceil(minuteReset / 1000)),
      },
    };
  }

  function limited(limit: number, resetAt: number, now: number, message: string): AppError {
    const retryAfter = Math.max(1, Math.ceil((resetAt - now) / 1000));
    return new AppError(
      "rate_limited",
      `${message}; retry after ${retryAfter} s`,
      { limit, retry_after: retryAfter, reset_at: new Date(resetAt).toISOString() },
      undefined,
      {
        "retry-after": String(retryAfter),
        "x-ratelimit-limit": String(limit),
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": String(Math.ceil(resetAt / 1000)),
      },
    );
  }

  /** What a key has left in the current minute, without counting a request. */
  function peek(keyId: number, perMinute: number, perDay: number) {
    const now = clock.now();
    const w = windowFor(keyId, now);
    return {
      remaining: Math.max(0, Math.min(perMinute - w.minuteCount, perDay - w.dayCount)),
      resetAt: w.minuteStart + MINUTE,
    };
  }

  return { hit, peek };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
