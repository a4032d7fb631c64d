// The dashboard's static files, compiled into the binary: our style sheet and script, and htmx
// from npm. Each is served under a name carrying its content hash, cached for a year.
import css from "./assets/app.css" with { type: "text" };
import appJs from "./assets/app.js" with { type: "text" };
import htmxJs from "../../node_modules/htmx.org/dist/htmx.min.js" with { type: "text" };
import { sha256Hex } from "../lib/tokens";

interface Asset {
  path: string;
  body: string;
  type: string;
}

function asset(name: string, ext: string, body: string, type: string): Asset {
  return { path: `/dashboard/assets/${name}.${sha256Hex(body).slice(0, 12)}.${ext}`, body, type };
}

export const ASSETS = {
  css: asset("app", "css", css, "text/css; charset=utf-8"),
  app: asset("app", "js", appJs, "text/javascript; charset=utf-8"),
  htmx: asset("htmx", "js", htmxJs, "text/javascript; charset=utf-8"),
};

const byPath = new Map(Object.values(ASSETS).map((a) => [a.path, a]));

/** The asset at a path, as a response, or null. */
export function assetResponse(path: string): Response | null {
  const found = byPath.get(path);
  if (!found) return null;
  return new Response(found.body, {
    headers: {
      "content-type": found.type,
      "cache-control": "public, max-age=31536000, immutable",
      "x-content-type-options": "nosniff",
    },
  });
}
