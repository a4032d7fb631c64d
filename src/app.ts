// createApp(services): the error plugin first, then the API docs, then every module. No listen()
// and no cron here, so tests build the app and call app.handle() directly.
import { Elysia, type AnyElysia } from "elysia";
import { dashboardError, dashboardRoutes } from "./dashboard/routes";
import { docsRoutes } from "./docs/routes";
import { openapiRoutes } from "./docs/openapi";
import type { TObject } from "@sinclair/typebox";
import { fastHandlers, type FastHandler, type FastRoute } from "./http/fast-route";
import { foundation, requestPipeline, type FoundationDeps } from "./http/foundation";
import { scopeTable } from "./http/declared-auth";
import type { RouteScope } from "./core/scopes";
import type { ForeignApi } from "./modules/descriptor";
import type { Services } from "./services";

export interface AppOptions {
  /** false: the send routes go through the framework like every other (the reference in test/http/fast-route.test.ts). */
  fastRoutes?: boolean;
}

export function createApp(s: Services, options: AppOptions = {}) {
  const foreign: ForeignApi[] = s.modules.flatMap((m) => (m.foreign ? [m.foreign(s)] : []));
  let routeTable: { method: string; path: string; pattern: RegExp; isStatic: boolean }[] | null = null;
  const table = () =>
    (routeTable ??= routes().map((r) => ({
      method: r.method.toUpperCase(),
      path: r.path,
      pattern: new RegExp(
        `^${r.path
          .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
          .replace(/:[^/]+/g, "[^/]+")
          .replace(/\*/g, ".*")}/?$`,
      ),
      isStatic: !r.path.includes(":") && !r.path.includes("*"),
    })));
  const allowedMethods = (path: string, staticOnly = false): string[] => {
    const matching = table().filter((r) => (!staticOnly || r.isStatic) && r.pattern.test(path));
    return [...new Set(matching.map((r) => r.method))];
  };

  const routes = (): { method: string; path: string }[] => app.routes;
  let scopes: Map<string, RouteScope> | null = null;
  const scopeMemo = new Map<string, RouteScope | undefined>();
  const routeOf = (method: string, path: string): string | null =>
    table()
      .filter((r) => (r.method === method || r.method === "ALL") && r.pattern.test(path))
      .sort((a, b) => Number(b.isStatic) - Number(a.isStatic))[0]?.path ?? null;
  const foundationDeps: FoundationDeps = {
    config: s.config,
    authenticate: s.authenticate,
    rateLimiter: s.rateLimiter,
    allowedMethods,
    // A static route before a parameterised one, as the router prefers them.
    routeOf,
    // Each keyed route's declared scope (http/declared-auth.ts), read once the routes are mounted.
    // Remembered by method and path (a bounded memo: the send routes are asked on every request).
    scopeOf: (method, path) => {
      const asked = `${method} ${path}`;
      if (scopeMemo.has(asked)) return scopeMemo.get(asked);
      const pattern = routeOf(method, path);
      scopes ??= scopeTable(app.routes as never);
      const scope = pattern === null ? undefined : scopes.get(`${method} ${pattern}`);
      if (scopeMemo.size >= 4096) scopeMemo.clear();
      scopeMemo.set(asked, scope);
      return scope;
    },
    finished: s.requestFinished,
    log: s.log,
    disk: s.disk,
    pageError: dashboardError,
    gates: foreign.flatMap((api) => (api.gate ? [api.gate] : [])),
    plainErrors: (path) => foreign.some((api) => api.errors === "plain" && api.paths(path)),
    foreignErrors: (path, status, code, message) => {
      const api = foreign.find((a) => a.errors !== "plain" && a.paths(path));
      return api && api.errors !== "plain" ? api.errors(path, status, code, message) : null;
    },
    beforeBody: async (request, path, signIn) => {
      for (const runtime of s.channelRuntimes) await runtime.beforeBody?.(request.method, path, request.headers, signIn);
    },
  };
  const pipeline = requestPipeline(foundationDeps);
  const app = new Elysia()
    .use(foundation(foundationDeps, pipeline))
    .use(openapiRoutes((): AnyElysia => app, s.config.publicUrl))
    .use(docsRoutes());
  // Each module's routes, in the modules' order: a foreign API's before the module's own.
  const self = { handle: (request: Request): Promise<Response> => app.handle(request) };
  for (const module of s.modules) {
    const routes = module.routes?.(s, self);
    for (const group of [...(routes?.foreign ?? []), ...(routes?.api ?? [])]) app.use(group);
  }
  app.use(dashboardRoutes(s));
  // Each channel's own routes: callbacks, webhooks, the phone's API.
  for (const { channel, runtime } of s.builtChannels) for (const routes of channel.routes(runtime.service, s)) app.use(routes);
  if (options.fastRoutes !== false) {
    const fast = fastRouteList(s);
    serveFast(
      app,
      fastHandlers(pipeline, fast, async (request) => app.fetch(request)),
    );
  }
  return app;
}

/** Every route with a fast handler: each module's, then each channel's. */
export function fastRouteList(s: Services): FastRoute<TObject>[] {
  return [
    ...s.modules.flatMap((m) => m.fastRoutes?.(s) ?? []),
    ...s.builtChannels.flatMap(({ channel, runtime }) => channel.fastRoutes?.(runtime.service, s) ?? []),
  ];
}

/**
 * Hands the fast routes' POSTs to their handlers (src/http/fast-route.ts), ahead of the framework:
 * in the server through Bun.serve's route table, which Elysia's listen() merges with its own; in
 * process through app.handle, as the tests call it.
 */
function serveFast(app: Pick<AnyElysia, "config" | "handle" | "server">, fast: Map<string, FastHandler>) {
  const config = app.config as { serve?: { routes?: Record<string, Record<string, FastHandler>> } };
  config.serve = {
    ...config.serve,
    routes: { ...config.serve?.routes, ...Object.fromEntries([...fast].map(([path, handler]) => [path, { POST: handler }])) },
  };
  const general = app.handle;
  app.handle = (request: Request) => {
    const handler = request.method === "POST" ? fast.get(new URL(request.url).pathname) : undefined;
    return handler ? handler(request, app.server) : general(request);
  };
}

export type App = ReturnType<typeof createApp>;
