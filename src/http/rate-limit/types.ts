// What the request pipeline and the dashboard ask of a limiter, and the rules every limiter keeps.
// Two implementations of both sit beside this file: memory.ts, SQLite's one server counting in
// memory, and shared.ts, the servers sharing a PostgreSQL database counting in it so that the
// limits hold for all of them together. index.ts chooses between them.
import type { Freshness } from "../../core/caller";

/** Requests and attempts are counted in one-second slots. */
export const SLOT_MS = 1000;
/**
 * Slots a key's (or an address's) sliding minute counts: the current second and the 60 before it,
 * so that no 60-second span ever holds more than the limit (memory.ts says why).
 */
export const MINUTE_SLOTS = 61;
/** Failed authentications a client address may make in any 60 s before it is answered 429. */
export const AUTH_FAILURES_PER_MINUTE = 20;
/** Dashboard sign-in attempts a minute, per client address and per email. */
export const SIGN_IN_ATTEMPTS_PER_MINUTE = 5;
/** How long a sign-in attempt counts against its address and email. */
export const SIGN_IN_WINDOW_MS = 60_000;

export interface RateDecision {
  headers: Record<string, string>;
}

/** What admitKey needs to know of an authenticated caller: its key and the key's plan's limits. */
export interface KeyHolder {
  keyId: number;
  plan: { requestsPerMinute: number; requestsPerDay: number };
  /**
   * The cache generation this caller's record was read at, when it came from a server's memory
   * or may be kept there (src/lib/generation-cache.ts); absent when it was read for this request
   * alone.
   */
  generation?: number;
  /** The database's cache generation when the request was admitted (the shared limiter sets it). */
  cacheGeneration?: number;
}

/**
 * What the request pipeline asks of a limiter: the in-memory one (SQLite's single server) or the
 * one every server shares in the database (PostgreSQL), whose answers are promises. Callers await
 * them either way.
 */
export interface RateLimiter {
  hit(keyId: number, perMinute: number, perDay: number): RateDecision | Promise<RateDecision>;
  peek(
    keyId: number,
    perMinute: number,
    perDay: number,
  ): { remaining: number; resetAt: number } | Promise<{ remaining: number; resetAt: number }>;
  checkAuthFailures(address: string): void | Promise<void>;
  recordAuthFailure(address: string): void | Promise<void>;
  guardAuth<T>(address: string, step: () => T): T | Promise<Awaited<T>>;
  /**
   * A request made with a key: `authenticate` under the address's throttle (guardAuth), then one
   * request counted against the key's minute and day (hit); the caller and the rate headers. The
   * shared limiter checks the address and counts the key in one call.
   */
  admitKey<A extends KeyHolder>(
    address: string,
    authenticate: (freshness?: Freshness) => A | Promise<A>,
  ): Promise<{ auth: A; decision: RateDecision }>;
  /** Forgets passed windows kept in the database (the shared limiter); absent in memory. */
  prune?(): Promise<number>;
}

/**
 * The dashboard's sign-in throttle: attempts limited per client address and per email. Past the
 * limit every attempt is refused, the right password too, until the oldest attempt counted is a
 * minute old.
 */
export interface SignInThrottle {
  /** Records an attempt under each of `keys`; the seconds to wait when any of them is over the limit (nothing is counted then), else 0. */
  attempt(keys: string[]): number | Promise<number>;
}

/** A server's limits: the request pipeline's and the dashboard's sign-in throttle, of one kind. */
export interface Limits {
  rateLimiter: RateLimiter;
  signInThrottle: SignInThrottle;
}
