// GET /metrics, Prometheus's page. Not part of the API (kept out of its document), and not
// discoverable: a caller who may not read it gets the very 404 of a path no route serves.
//
// Who may read it: a request with `Authorization: Bearer $PIGEON_METRICS_TOKEN`, from anywhere; or,
// without an Authorization header, a request whose connection comes from loopback and that carries
// no X-Forwarded-For, Forwarded or X-Real-IP header (a reverse proxy on the same host would make
// every outside caller look local, and proxies add one of those). A wrong token is refused
// wherever it comes from.
import { createHash, timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { AppError } from "../../core/errors";
import { pathOf } from "../../http/foundation";
import { clientAddress } from "../../http/rate-limit";
import { isTrustedPeer, parseProxyList } from "../../lib/trusted-proxies";
import type { Services } from "../../services-type";
import { CONTENT_TYPE } from "./exposition";

/** What these routes use of the services. */
export type MetricsRoutesDeps = Pick<Services, "config" | "metrics">;

const LOOPBACK = parseProxyList("127.0.0.0/8,::1");
const FORWARDING_HEADERS = ["x-forwarded-for", "forwarded", "x-real-ip"];

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Whether this request may read the page (see the top of this file). */
export function mayScrape(request: Request, server: Parameters<typeof clientAddress>[1], token: string | null): boolean {
  const authorization = request.headers.get("authorization");
  if (authorization !== null) {
    const given = /^Bearer +(\S+)$/i.exec(authorization.trim())?.[1];
    // Digests of equal length, compared in constant time.
    return token !== null && given !== undefined && timingSafeEqual(digest(given), digest(token));
  }
  if (FORWARDING_HEADERS.some((name) => request.headers.has(name))) return false;
  return isTrustedPeer(LOOPBACK, clientAddress(request, server));
}

export function metricsRoutes(s: MetricsRoutesDeps) {
  const token = s.config.metricsToken;
  return new Elysia().use(declaredAuth()).all(
    "/metrics",
    async ({ request, server }) => {
      // Refused as a path no route serves is (the foundation's NOT_FOUND answer), whatever the method.
      if ((request.method !== "GET" && request.method !== "HEAD") || !mayScrape(request, server, token))
        throw new AppError("not_found", `No route for ${request.method} ${pathOf(request)}`);
      return new Response(await s.metrics.render(), { headers: { "content-type": CONTENT_TYPE } });
    },
    // Public as far as the early gates go: the handler itself decides, by the rule above.
    { auth: "public", detail: { hide: true } },
  );
}
