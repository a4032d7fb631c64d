// Request limits and the dashboard's sign-in throttle: the interface (types.ts), the in-memory
// implementation (memory.ts) and the shared one (shared.ts, over rate-counter-repository.ts).
// A server counts in the database when other servers share it, else in memory.
import type { Clock } from "../../clock";
import type { Executor } from "../../db/storage";
import { createRateLimiter, createSignInThrottle } from "./memory";
import { createSharedLimits } from "./shared";
import type { Limits } from "./types";

export { createRateLimiter, createSignInThrottle } from "./memory";
export { createSharedLimits } from "./shared";
export * from "./types";

export interface LimitsDeps {
  storage: Executor;
  clock: Clock;
  /** Whether other servers share the database (cluster.shared): then the counts are kept in it. */
  shared: boolean;
  /**
   * The database's cache generation, read once a request before the key by the in-memory limiter,
   * so that the caller's record may come from memory (src/lib/generation-cache.ts); the shared
   * limiter reads it with its count.
   */
  generation: () => Promise<number>;
}

export function createLimits({ storage, clock, shared, generation }: LimitsDeps): Limits {
  if (shared) return createSharedLimits(storage, clock);
  return { rateLimiter: createRateLimiter(clock, generation), signInThrottle: createSignInThrottle(() => clock.now()) };
}

/**
 * The client's socket address: what failed authentications are counted against. Never a header a
 * client could vary (X-Forwarded-For); requests handled in-process, without a socket, share one.
 */
export function clientAddress(
  request: Request,
  server: { requestIP(request: Request): { address: string } | null } | null | undefined,
): string {
  return server?.requestIP(request)?.address ?? "in-process";
}
