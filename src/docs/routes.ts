// The interactive API docs, served entirely from the binary: Swagger UI's bundle and stylesheet are
// compiled in as text, and the page points only at them and at /openapi.json.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
// Embedded as files (read from the executable when asked for), not as strings held in memory:
// Swagger UI is over a megabyte that most servers never serve.
import swaggerCssPath from "../../node_modules/swagger-ui-dist/swagger-ui.css" with { type: "file" };
import swaggerJsPath from "../../node_modules/swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
import { VERSION } from "../version";

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Pigeon API ${VERSION}</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <style>body{margin:0} .swagger-ui .topbar{display:none}</style>
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/init.js"></script>
</body>
</html>`;

// validatorUrl null: the UI would otherwise send the spec to an online validator.
const init = `window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  validatorUrl: null,
  deepLinking: true,
  persistAuthorization: true,
  displayRequestDuration: true,
  tryItOutEnabled: true
});`;

const cached = (body: string | (() => Blob), type: string) => () =>
  new Response(typeof body === "string" ? body : body(), { headers: { "content-type": type, "cache-control": "public, max-age=86400" } });

export function docsRoutes() {
  return new Elysia({ name: "docs" })
    .use(declaredAuth())
    .get("/docs", () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } }), {
      auth: "public",
      detail: { hide: true },
    })
    .get(
      "/docs/assets/swagger-ui-bundle.js",
      cached(() => Bun.file(swaggerJsPath), "text/javascript; charset=utf-8"),
      { auth: "public", detail: { hide: true } },
    )
    .get(
      "/docs/assets/swagger-ui.css",
      cached(() => Bun.file(swaggerCssPath), "text/css; charset=utf-8"),
      { auth: "public", detail: { hide: true } },
    )
    .get("/docs/assets/init.js", cached(init, "text/javascript; charset=utf-8"), { auth: "public", detail: { hide: true } });
}
