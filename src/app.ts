// createApp(services): the error plugin first, then the API docs, then every module. No listen()
// and no cron here, so tests build the app and call app.handle() directly.
import { Elysia } from "elysia";
import { docsRoutes } from "./docs/routes";
import { openapiPlugin } from "./docs/openapi";
import { foundation } from "./http/foundation";
import { deviceRoutes } from "./modules/devices/routes";
import { projectRoutes } from "./modules/projects/routes";
import { systemRoutes } from "./modules/system/routes";
import type { Services } from "./services";

export function createApp(s: Services) {
  let routeTable: { method: string; pattern: RegExp }[] | null = null;
  const allowedMethods = (path: string): string[] => {
    routeTable ??= routes().map((r) => ({
      method: r.method.toUpperCase(),
      pattern: new RegExp(`^${r.path.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/:[^/]+/g, "[^/]+").replace(/\*/g, ".*")}/?$`),
    }));
    return [...new Set(routeTable.filter((r) => r.pattern.test(path)).map((r) => r.method))];
  };

  const routes = (): { method: string; path: string }[] => app.routes;
  const app = new Elysia()
    .use(foundation({ config: s.config, authenticate: s.authenticate, rateLimiter: s.rateLimiter, allowedMethods, log: s.log }))
    .use(openapiPlugin())
    .use(docsRoutes())
    .use(systemRoutes(s))
    .use(projectRoutes(s))
    .use(deviceRoutes(s));
  return app;
}

export type App = ReturnType<typeof createApp>;
