// A JSON route served without the framework's per-request machinery: the runtime hands the
// request straight to it (Bun.serve's route table; app.handle in process). It runs the same steps
// as every other route, from the same functions: the foundation's admission, body parsing and
// error replies (requestPipeline), the route's refusal of unknown fields, and its schema, compiled
// once; only the framework's context, hooks and response mapping are left out. The send routes
// use it (the SMS sends, the chat-app sends through their channel's hook, SMSGate's): on the hot
// path they cost about a seventh less (bench/NOTES.md), and test/http/fast-route.test.ts holds their
// replies equal to the framework's, byte for byte.
import type { Static, TObject } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import type { KeyAuthContext } from "../core/caller";
import { authOf, type RequestPipeline } from "./foundation";
import type { ReplySet } from "./idempotency";
import { refuseUnknownFields, validationFailure } from "./validation";

/** What the runtime gives a handler beside the request: the caller's address. */
export type Peer = { requestIP(request: Request): { address: string } | null } | null | undefined;

export interface FastRoute<S extends TObject> {
  path: string;
  schema: S;
  /** The route's work once the caller and body passed every check; `set` takes the status and headers. */
  handle(request: Request, auth: KeyAuthContext, body: Static<S>, set: ReplySet): Promise<unknown>;
  /**
   * "dropped": fields the schema does not name are removed before the check, at any depth, as the
   * framework does for a route that does not refuse them (SMSGate's, whose server ignores them).
   * Refused otherwise, naming the field.
   */
  unknownFields?: "dropped";
  /**
   * Requests left to the framework, which reads what this handler does not: SMSGate's send reads
   * its query (coerced and checked by the framework), so one with a query string goes there.
   */
  leaveToFramework?: (request: Request) => boolean;
}

export type FastHandler = (request: Request, server: Peer) => Promise<Response>;

function stringHeaders(headers: ReplySet["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = String(v);
  return out;
}

/**
 * The handler for `route`. A request the framework would treat differently before any route code
 * runs (another method, or no body at all) goes to `general`, the framework's own handler.
 */
export function fastRoute<S extends TObject>(
  pipeline: RequestPipeline,
  route: FastRoute<S>,
  general: (request: Request) => Promise<Response>,
): FastHandler {
  // Compiled on the first request, as the framework compiles its own, so start-up does not pay for it.
  let schema: TypeCheck<S> | undefined;
  const refuseUnknown = route.unknownFields === "dropped" ? () => {} : refuseUnknownFields(route.schema);
  return async (request, server) => {
    if (request.method !== "POST" || request.body === null || request.headers.get("content-length") === "0") return general(request);
    if (route.leaveToFramework?.(request)) return general(request);
    const set: ReplySet = { status: 200, headers: {} };
    const response = await answer(request, server, set);
    pipeline.finish(request, route.path, response.status);
    return response;
  };

  async function answer(request: Request, server: Peer, set: ReplySet): Promise<Response> {
    try {
      await pipeline.admit(request, server, set.headers);
      const parsed = await pipeline.parse(request, request.headers.get("content-type"));
      refuseUnknown({ body: parsed });
      // The framework mirrors a body onto its object schema before checking it: anything but an
      // object (null, an array, a string) is checked as {}, so the answer names the first missing field.
      const object = parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : {};
      const body = route.unknownFields === "dropped" ? Value.Clean(route.schema, object) : object;
      schema ??= TypeCompiler.Compile(route.schema);
      if (!schema.Check(body)) throw validationFailure({ type: "body", valueError: schema.Errors(body).First() });
      const reply = await route.handle(request, authOf(request), body, set);
      return new Response(JSON.stringify(reply), {
        status: Number(set.status ?? 200),
        headers: { ...stringHeaders(set.headers), "content-type": "application/json;charset=utf-8" },
      });
    } catch (error) {
      return pipeline.fail(request, error, stringHeaders(set.headers));
    }
  }
}

/** The handlers of `routes`, by path; `general` (the framework) serves what they hand back. */
export function fastHandlers(
  pipeline: RequestPipeline,
  routes: FastRoute<TObject>[],
  general: (request: Request) => Promise<Response>,
): Map<string, FastHandler> {
  return new Map(routes.map((route) => [route.path, fastRoute(pipeline, route, general)]));
}
