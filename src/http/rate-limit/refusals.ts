// The 429s every limiter answers with, the same from memory and from the database.
import { AppError } from "../../core/errors";
import { AUTH_FAILURES_PER_MINUTE } from "./types";

/** The 429 for a key's full minute or day: `resetAt` is when it has room again. */
export function limited(limit: number, resetAt: number, now: number, message: string): AppError {
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

/** The 429 for an address over its failed authentications, until `resetAt`. */
export function authThrottled(resetAt: number, now: number): AppError {
  const retryAfter = Math.max(1, Math.ceil((resetAt - now) / 1000));
  return new AppError(
    "rate_limited",
    `Too many failed authentications from this address; retry after ${retryAfter} s`,
    { limit: AUTH_FAILURES_PER_MINUTE, retry_after: retryAfter, reset_at: new Date(resetAt).toISOString() },
    undefined,
    { "retry-after": String(retryAfter) },
  );
}
