// The request pipeline every route sits behind, registered before any module so its hooks reach
// them all: body limits and parsing, API-key auth and rate limits for /v1, and the one error
// handler that turns every failure into the spec's envelope (or the phone protocol's error shape).
import { Elysia } from "elysia";
import type { Config } from "../config";
import type { Authenticator, KeyAuthContext } from "../core/caller";
import { isDiskFull, type DiskMonitor } from "../lib/disk";
import type { LogFn } from "../lib/log";
import { CLOSE, decodeUtf8, discardBody, payloadTooLarge, readBodyWithLimit } from "./body";
import { envelopeOf } from "./envelope";
import { decodeBody } from "./body-format";
import { AppError } from "../core/errors";
import { requireKeyScope, type RouteScope } from "../core/scopes";
import { clientAddress, type RateLimiter } from "./rate-limit";
import { validationFailure } from "./validation";
import type { RequestDone } from "../lib/request-done";

export type { RequestDone } from "../lib/request-done";

/** Runs a sign-in step under the failed-authentication throttle of the caller's address. */
export type SignInGuard = <T>(step: () => T) => T | Promise<Awaited<T>>;

const authByRequest = new WeakMap<Request, KeyAuthContext>();
const rawBodyByRequest = new WeakMap<Request, string>();
const requestIds = new WeakMap<Request, string>();
const startedAt = new WeakMap<Request, number>();
/** The status of an error reply made by the pipeline, which the framework's after-response hook does not see. */
const errorStatus = new WeakMap<Request, number>();

/** The id this request is logged under and answered with (X-Request-Id). */
export function requestIdOf(request: Request): string {
  return requestIds.get(request) ?? "-";
}

/**
 * Request line plus headers we accept before answering 431 ourselves, in the envelope. The binary
 * raises the runtime's own limit well above this (scripts/build.ts), so only absurd heads meet the
 * runtime's bare 431.
 */
export const MAX_HEAD_BYTES = 16 * 1024;

/**
 * The largest refused body (by its Content-Length) that is read and dropped before the 413 goes
 * out. Reading it keeps the connection in step for a client that reuses it without finishing its
 * upload (Bun's fetch does); it costs no memory (nothing is kept) and about a second a gigabyte.
 * Past this, the 413 goes out at once and the runtime drains what the client still sends.
 */
export const DISCARD_MAX_BYTES = 1024 * 1024 * 1024;

function headBytes(request: Request): number {
  let n = request.method.length + request.url.length + 12;
  request.headers.forEach((value, name) => {
    n += name.length + value.length + 4;
  });
  return n;
}

/** A query whose percent-escapes do not decode to UTF-8 text is refused rather than silently mangled. */
function checkQueryEncoding(url: string): void {
  const q = url.indexOf("?");
  if (q < 0 || url.indexOf("%", q) < 0) return;
  for (const part of url.slice(q + 1).split("&")) {
    if (!part.includes("%")) continue;
    try {
      decodeURIComponent(part.replaceAll("+", " "));
    } catch {
      throw new AppError("invalid_unicode", "Query string is not valid percent-encoded UTF-8", { location: "query" });
    }
  }
}

/**
 * The authenticated caller of a /v1 request (set by the foundation's onRequest). Routes do not call
 * this: they declare `auth: "apiKey"` and read `auth` from their context (http/declared-auth.ts).
 */
export function authOf(request: Request): KeyAuthContext {
  const auth = authByRequest.get(request);
  if (!auth) throw new AppError("unauthorized", "Missing API key");
  return auth;
}

/** The request body exactly as received, for signature checks. */
export function rawBodyOf(request: Request): string {
  return rawBodyByRequest.get(request) ?? "";
}

/** Paths under /v1 that are not called with an API key: platforms and phones sign their own calls. */
const PUBLIC_V1 = ["/v1/webhooks/", "/v1/callbacks/"];

/**
 * The early gate: the API key is checked here, before the body is read, on the paths whose routes
 * declare `auth: "apiKey"` (test/http/declared-auth.test.ts holds the two to agree, route by route).
 */
export function needsApiKey(path: string): boolean {
  return path.startsWith("/v1/") && !PUBLIC_V1.some((p) => path.startsWith(p));
}

const isPhonePath = (path: string) => path.startsWith("/mobile/");
const MIB = 1024 * 1024;

export interface FoundationDeps {
  config: Config;
  authenticate: Authenticator;
  rateLimiter: RateLimiter;
  /** Methods served at a path, so a wrong method answers 405 rather than 404; staticOnly skips :param routes. */
  allowedMethods: (path: string, staticOnly?: boolean) => string[];
  log: LogFn;
  /** Where a full disk is recorded, so /health can report it. */
  disk?: DiskMonitor;
  /**
   * Credentials a route can check from its headers alone, run before its body is read, so a caller
   * without them never gets a body parsed (phone routes; platform webhooks sign the body and can't).
   */
  beforeBody?: (request: Request, path: string, signIn: SignInGuard) => void | Promise<void>;
  /**
   * Other early gates: paths whose callers bring other credentials than /v1's, checked here before
   * the body as /v1's are, under the same failed-sign-in throttle and the key's rate limits.
   */
  gates?: { matches: (path: string) => boolean; authenticate: (request: Request) => KeyAuthContext | Promise<KeyAuthContext> }[];
  /** Paths answered with the `{message, code, data}` error shape rather than the envelope, beside /mobile/. */
  plainErrors?: (path: string) => boolean;
  /**
   * Another API's own error body for its paths (Twilio's `{code, message, more_info, status}`), or
   * null for the paths it does not serve. It may change the status, as that API would answer.
   */
  foreignErrors?: (
    path: string,
    status: number,
    code: string | number,
    message: string,
  ) => { status: number; body: Record<string, unknown> } | null;
  /** A page for an error on a path a browser shows (the dashboard's), or null for the JSON envelope. */
  pageError?: (path: string, status: number, message: string) => Response | null;
  /**
   * The key scope the route serving method and path declared (null: any valid key), or undefined
   * when no keyed route serves it (the router's 404 or 405 follows).
   */
  scopeOf?: (method: string, path: string) => RouteScope | undefined;
  /** The pattern of the route serving method and path, for a request refused before routing; null when none does. */
  routeOf?: (method: string, path: string) => string | null;
  /** Told of every request once it is answered (the access log, the metrics). */
  finished?: (done: RequestDone) => void;
}

/** The request's path as it came, without the query (not decoded or normalised). */
export function pathOf(request: Request): string {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  return start < 0 ? "/" : url.slice(start, q < 0 ? undefined : q);
}

/** A multipart form's parts as strings (a file's content decoded as UTF-8); 400 when it does not parse. */
async function multipartFields(bytes: Uint8Array, contentType: string): Promise<Record<string, string>> {
  let form: FormData;
  try {
    form = await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { "content-type": contentType } }).formData();
  } catch {
    throw new AppError("validation_error", "The uploaded form could not be read");
  }
  const fields: Record<string, string> = {};
  for (const [name, value] of form.entries()) {
    const part = value as unknown as string | Blob;
    fields[name] = typeof part === "string" ? part : decodeUtf8(new Uint8Array(await part.arrayBuffer()));
  }
  return fields;
}

/**
 * The steps of the pipeline as plain functions, so a route served outside the framework (the send
 * routes, src/http/fast-route.ts) runs the very same ones: admission (request id, limits, credentials,
 * rate limit), body parsing, and turning a failure into the error reply.
 */
/** Phone webhook bodies past the usual limit (a downloaded MMS's parts) read at one time. */
const PHONE_LARGE_BODIES = 2;

export function requestPipeline(deps: FoundationDeps) {
  const { config, authenticate, rateLimiter } = deps;

  function errorResponse(
    request: Request,
    status: number,
    code: string | number,
    message: string,
    data: Record<string, unknown>,
    headers: Record<string, string>,
  ) {
    errorStatus.set(request, status);
    const path = pathOf(request);
    const shown = deps.pageError?.(path, status, message);
    if (shown) {
      for (const [k, v] of Object.entries(headers)) if (!shown.headers.has(k)) shown.headers.set(k, v);
      return shown;
    }
    const foreign = deps.foreignErrors?.(path, status, code, message);
    if (foreign) {
      errorStatus.set(request, foreign.status);
      return new Response(JSON.stringify(foreign.body), {
        status: foreign.status,
        headers: { ...headers, "content-type": "application/json; charset=utf-8" },
      });
    }
    const body =
      isPhonePath(path) || deps.plainErrors?.(path)
        ? { message, code: status, data: { error_code: code, ...data } }
        : envelopeOf(status, message, { error_code: code, ...data });
    return new Response(JSON.stringify(body), {
      status,
      headers: { ...headers, "content-type": "application/json; charset=utf-8" },
    });
  }

  // The chat-app platform batches up to 1000 updates in one webhook, up to 3 MB. A phone's webhook
  // carries a downloaded MMS's parts in base64: one up to twice the per-message cap still arrives,
  // so its text is kept and what passed the cap is dropped, not the whole message refused.
  // That larger allowance is read only for a post that carries the app's signature headers, and
  // for at most PHONE_LARGE_BODIES such bodies at once: anyone can reach the path, so without a
  // bound a crowd of uploads there would hold that much memory each before a signature is checked.
  // The others get the usual limit; an app whose MMS was refused so posts it again later.
  const phoneWebhookLimit = Math.max(config.maxBodyBytes, 4 * MIB, Math.ceil((config.mmsCaps.perMessageBytes * 8) / 3) + MIB);
  let phoneLargeBodies = 0;
  const signedByPhone = (request: Request) =>
    /^[0-9a-f]{64}$/i.test(request.headers.get("x-signature") ?? "") && /^\d{1,12}$/.test(request.headers.get("x-timestamp") ?? "");
  const bodyLimit = (path: string, request: Request) =>
    path.startsWith("/v1/webhooks/")
      ? Math.max(config.maxBodyBytes, 4 * MIB)
      : path === "/mobile/v1/webhook" && signedByPhone(request)
        ? phoneWebhookLimit
        : config.maxBodyBytes;

  /** Reads the body within its limit, taking one of the phone's large-body places while it does. */
  async function readBody(request: Request): Promise<Uint8Array> {
    const path = pathOf(request);
    let limit = bodyLimit(path, request);
    const large = limit === phoneWebhookLimit && limit > config.maxBodyBytes && path === "/mobile/v1/webhook";
    if (large && phoneLargeBodies >= PHONE_LARGE_BODIES) limit = config.maxBodyBytes;
    const holds = large && limit === phoneWebhookLimit;
    if (holds) phoneLargeBodies++;
    try {
      return await readBodyWithLimit(request, limit);
    } finally {
      if (holds) phoneLargeBodies--;
    }
  }

  /**
   * Everything before the body: a request id, the head and declared body sizes, the early gates,
   * and on /v1 the API key and its rate limit. The reply's headers go into `headers`.
   */
  async function admit(
    request: Request,
    server: Parameters<typeof clientAddress>[1],
    headers: Record<string, string | number>,
  ): Promise<void> {
    startedAt.set(request, performance.now());
    const id = crypto.randomUUID();
    requestIds.set(request, id);
    headers["x-request-id"] = id;
    const head = headBytes(request);
    if (head > MAX_HEAD_BYTES) {
      throw new AppError(
        "headers_too_large",
        `Request line and headers of ${head} bytes exceed the limit of ${MAX_HEAD_BYTES} bytes`,
        { limit: MAX_HEAD_BYTES },
        undefined,
        { ...CLOSE },
      );
    }
    const path = pathOf(request);
    const limit = bodyLimit(path, request);
    const length = Number(request.headers.get("content-length") ?? 0);
    if (length > limit) {
      if (length <= DISCARD_MAX_BYTES) await discardBody(request);
      throw payloadTooLarge(limit, length);
    }
    // Wrong credentials count against the caller's address, and past the limit it gets 429 before
    // any credential is looked at.
    const client = clientAddress(request, server);
    await deps.beforeBody?.(request, path, (step) => rateLimiter.guardAuth(client, step));
    const gate = needsApiKey(path) ? null : deps.gates?.find((g) => g.matches(path));
    if (needsApiKey(path) || gate) {
      const { auth, decision } = await rateLimiter.admitKey(client, (freshness) =>
        gate ? gate.authenticate(request) : authenticate(request.headers, freshness),
      );
      authByRequest.set(request, auth);
      Object.assign(headers, decision.headers);
      // What the key may do, before its body is read: 403 key_scope_denied naming the scope.
      const scope = deps.scopeOf?.(request.method, path);
      if (scope) requireKeyScope(auth.limits, scope);
    }
    // After the credentials, so a caller without them learns nothing from a 400.
    checkQueryEncoding(request.url);
  }

  /** The body as a value: JSON (or a form), or a dashboard upload's fields; kept as text for signature checks. */
  async function parse(request: Request, contentType: string | null | undefined): Promise<unknown> {
    const bytes = await readBody(request);
    // The dashboard's file uploads (a CSV): every part as text, files included. The API takes JSON.
    // (The boundary is in the header itself; the content type Elysia hands over may lack it.)
    const fullType = request.headers.get("content-type") ?? "";
    if (fullType.toLowerCase().startsWith("multipart/form-data") && pathOf(request).startsWith("/dashboard/"))
      return await multipartFields(bytes, fullType);
    const text = decodeUtf8(bytes);
    rawBodyByRequest.set(request, text);
    return decodeBody(text, contentType);
  }

  /** A failure that is not the framework's own: ours in the envelope (or the page), anything else a logged 500. */
  function fail(request: Request, thrown: unknown, headers: Record<string, string>): Response {
    const cause = (thrown as Error | undefined)?.cause;
    let error = thrown;
    if (isDiskFull(error) || isDiskFull(cause)) {
      deps.disk?.markFull();
      error = new AppError("storage_full", "The server's disk is full: nothing was stored; free space and retry");
    }
    if (error instanceof AppError) {
      return errorResponse(request, error.status, error.publicCode ?? error.code, error.message, error.data, {
        ...headers,
        ...error.headers,
      });
    }
    const requestId = requestIdOf(request);
    deps.log(`internal error on ${request.method} ${pathOf(request)} (request ${requestId})`, error, {
      request_id: requestId,
      method: request.method,
    });
    return errorResponse(request, 500, "internal_error", "Internal error, retry later", { request_id: requestId }, headers);
  }

  /**
   * Tells `deps.finished` that the request was answered with `status` (an error reply's own status
   * wins: the framework's hook sees the status set before the error). `route` is the pattern that
   * served it, or undefined when the request was refused before routing.
   */
  function finish(request: Request, route: string | undefined, status: number): void {
    if (!deps.finished) return;
    const start = startedAt.get(request);
    deps.finished({
      method: request.method,
      route: route || deps.routeOf?.(request.method, pathOf(request)) || "unmatched",
      status: errorStatus.get(request) ?? status,
      durationMs: start === undefined ? 0 : performance.now() - start,
      requestId: requestIdOf(request),
    });
  }

  return { admit, parse, fail, errorResponse, finish };
}

export type RequestPipeline = ReturnType<typeof requestPipeline>;

export function foundation(deps: FoundationDeps, pipeline: RequestPipeline = requestPipeline(deps)) {
  const { admit, parse, fail, errorResponse, finish } = pipeline;

  return new Elysia({ name: "pigeon-foundation" })
    .onRequest(({ request, set, server }) => admit(request, server, set.headers))
    .onAfterResponse({ as: "global" }, (context) => {
      const { request, set } = context;
      const { route, responseValue } = context as { route?: string; responseValue?: unknown };
      const status = responseValue instanceof Response ? responseValue.status : typeof set.status === "number" ? set.status : 200;
      finish(request, route, status);
    })
    .onParse({ as: "global" }, ({ request, contentType }) => parse(request, contentType))
    .onError({ as: "global" }, ({ request, code, error: thrown, set }) => {
      // Elysia wraps what a parser throws in its own ParseError; ours says more.
      const cause = (thrown as Error | undefined)?.cause;
      const error = code === "PARSE" && cause instanceof AppError ? cause : thrown;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(set.headers)) if (typeof v === "string") headers[k] = v;
      if (error instanceof AppError || isDiskFull(error) || isDiskFull(cause)) return fail(request, error, headers);
      const wrongMethod = (staticOnly: boolean) => {
        const path = pathOf(request);
        const allowed = deps.allowedMethods(path, staticOnly);
        if (allowed.length === 0 || allowed.includes(request.method)) return null;
        return errorResponse(
          request,
          405,
          "method_not_allowed",
          `${request.method} is not allowed on ${path}; use ${allowed.join(" or ")}`,
          { allowed },
          {
            ...headers,
            allow: allowed.join(", "),
          },
        );
      };

      switch (code) {
        case "VALIDATION": {
          const ve = error as unknown as { type: string; customError?: unknown; valueError?: never };
          if (ve.type === "response") break;
          // GET /contact/create lands on GET /contact/:contact_id; the caller meant POST /contact/create.
          if (ve.type === "params") {
            const r = wrongMethod(true);
            if (r) return r;
          }
          return fail(request, validationFailure(ve), headers);
        }
        case "PARSE":
          return errorResponse(request, 400, "invalid_json", "Request body could not be parsed", {}, headers);
        case "NOT_FOUND":
          return (
            wrongMethod(false) ?? errorResponse(request, 404, "not_found", `No route for ${request.method} ${pathOf(request)}`, {}, headers)
          );
        case "INVALID_COOKIE_SIGNATURE":
        case "INVALID_FILE_TYPE":
          return errorResponse(request, 400, "validation_error", String((error as Error).message), {}, headers);
      }
      return fail(request, error, headers);
    });
}
