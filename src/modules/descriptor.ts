// What a module tells the rest of the server about itself, beyond its service: the routes it
// serves, by audience, the periodic work it runs, what it hears of other modules' changes, and any
// network listener of its own. Each module's index.ts exports one; src/modules/index.ts lists them
// in order, and the app, the worker and `pigeon serve` iterate that list (as they iterate the
// channels), so adding a module touches none of them. Building a module's service stays explicit in
// the composition root (src/services.ts), where each module is handed exactly the deps it names.
import type { AnyElysia } from "elysia";
import type { TObject } from "@sinclair/typebox";
import type { Task } from "../core/task";
import type { KeyAuthContext } from "../core/caller";
import type { FastRoute } from "../http/fast-route";
import type { Services } from "../services";
import type { Accepted } from "./sending/service";
import type { NotificationRecord } from "./notifications/state";
import type { TransitionListener, TransitionsListener } from "./notifications/state";

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

/**
 * What a module hears of the notifications' lifecycle. Modules hear in the order of LISTENING in
 * src/modules/index.ts (stated there once, with why), each kind of news in that order.
 */
export interface ModuleListeners {
  /** Inside a transition's unit of work, once per transition or batch of them, before `transition`. */
  transitions?: TransitionsListener;
  /** Inside the unit of work, once per change, after every module's `transitions`. */
  transition?: TransitionListener;
  /** Inside the send's unit of work: the sends just stored. */
  stored?: (accepted: Accepted[]) => Promise<void>;
  /** After the send's commit: the sends accepted. */
  accepted?: (accepted: Accepted[]) => void | Promise<void>;
  /** After commit: a notification cancelled through the API. */
  cancelled?: (n: NotificationRecord) => void | Promise<void>;
}

/** A network listener a module runs beside the HTTP server (started by `pigeon serve`, stopped first at shutdown). */
export interface NetworkListener {
  /** What it serves and where, for the start-up line ("smtp on 0.0.0.0:2525"). */
  describe(): string;
  /** Stops accepting; resolves once open sessions are closed or the grace has passed. */
  stop(graceMs: number): Promise<void>;
}

export interface ModuleDescriptor {
  /** The module's folder under src/modules. */
  name: string;
  /** Its routes, mounted in list order, each group under its audience. */
  routes?: (s: Services) => {
    /** Pigeon's own API (/v1/api, /health, /metrics). */
    api?: AnyElysia[];
    /** Routes of an API Pigeon imitates (see `foreign`), mounted before the module's own. */
    foreign?: AnyElysia[];
  };
  /** POST routes that skip the framework on their hot path (src/http/fast-route.ts); each also has its framework route. */
  fastRoutes?: (s: Services) => FastRoute<TObject>[];
  /** The foreign API this module imitates, if any. */
  foreign?: (s: Services) => ForeignApi;
  /** Periodic work, run by the worker (on the cluster's leader unless a task says every server). */
  tasks?: (s: Services) => Task[];
  /** What it hears of the notifications' lifecycle (see LISTENING for the order). */
  listeners?: (s: Services) => ModuleListeners;
  /** At the worker's start (and on a cluster's leader, every few seconds): takes back what a stopped server left claimed; returns a line to warn with, if any. */
  recover?: (s: Services) => Promise<string | null>;
  /** At shutdown, before the worker waits for work in flight: nothing new is started. */
  stop?: (s: Services) => void;
  /** A network listener of its own, started by `pigeon serve` after the HTTP server (null when its setting is off). */
  listen?: (s: Services) => Promise<NetworkListener | null>;
}
