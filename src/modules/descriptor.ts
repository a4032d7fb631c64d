// The parts of a module's descriptor (ModuleDescriptor, in src/services-type.ts beside the services
// it is given) that need no services: a foreign API's gate and errors, a network listener, and
// what a module hears of the notifications' lifecycle.
import type { KeyAuthContext } from "../core/caller";

export type { ModuleListeners } from "./listeners";

/** An API Pigeon imitates (Twilio's, SMSGate's), whose callers bring its own credentials and expect its own errors. */
export interface ForeignApi {
  /** The paths this API answers. */
  paths: (path: string) => boolean;
  /**
   * The paths whose callers authenticate with this API's credentials, checked before the body as
   * /v1's key is (under the same failed-sign-in throttle and rate limits); none when absent.
   */
  gate?: { matches: (path: string) => boolean; authenticate: (request: Request) => KeyAuthContext | Promise<KeyAuthContext> };
  /**
   * How its errors look: "plain" for `{message, code, data}` (SMSGate's), or its own body made
   * from the status, Pigeon's error code and the message (Twilio's), with the status it answers.
   */
  errors:
    | "plain"
    | ((path: string, status: number, code: string | number, message: string) => { status: number; body: Record<string, unknown> });
}

/** A network listener a module runs beside the HTTP server (started by `pigeon serve`, stopped first at shutdown). */
export interface NetworkListener {
  /** What it serves and where, for the start-up line ("smtp on 0.0.0.0:2525"). */
  describe(): string;
  /** Stops accepting; resolves once open sessions are closed or the grace has passed. */
  stop(graceMs: number): Promise<void>;
}
