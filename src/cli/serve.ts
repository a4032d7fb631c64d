// `pigeon serve`: migrate, bootstrap an empty database, listen, and stop cleanly on a signal.
import { createApp } from "../app";
import { VERSION } from "../version";
import { startWorker } from "../worker";
import type { Runtime } from "./runtime";

export async function serve(rt: Runtime): Promise<number | null> {
  const { config, services } = rt;

  const boot = services.accounts.bootstrap();
  if (boot) {
    const key = services.accounts.createKey("Initial key", boot.workspace.id);
    console.log(
      [
        `Pigeon created the owner account and the workspace "${boot.workspace.name}" (project_id ${boot.workspace.id}).`,
        `  API key:    ${key.api_key}`,
        `  API secret: ${key.api_secret}`,
        "Store the secret now: it is shown only this once. More keys: pigeon keys create --name NAME --json",
        JSON.stringify({ api_key: key.api_key, api_secret: key.api_secret, workspace_id: key.workspace_id }),
      ].join("\n"),
    );
  }

  // State lives in SQLite, so a stray error in one request or task is logged and the server keeps serving.
  process.on("unhandledRejection", (error) => services.log("unhandled rejection", error));
  process.on("uncaughtException", (error) => services.log("uncaught exception", error));

  const app = createApp(services);
  try {
    app.listen({
      port: config.port,
      hostname: config.host,
      // The foundation reads bodies as streams and stops at its own limit (413 in the envelope), so
      // this backstop no longer decides memory use. It is also checked against Content-Length before
      // our code runs, answering a bare 413 with no body: kept at 16 MiB (or twice our largest
      // limit), so bodies declared up to that size still get the envelope.
      maxRequestBodySize: Math.max(16 * 1024 * 1024, 2 * Math.max(4 * 1024 * 1024, config.maxBodyBytes)),
      ...(config.tls ? { tls: { cert: config.tls.cert, key: config.tls.key } } : {}),
    });
  } catch (error) {
    console.error(`pigeon: cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
    rt.close();
    return 1;
  }
  const server = app.server!;
  const worker = startWorker(services);
  const scheme = config.tls ? "https" : "http";
  console.log(`Pigeon ${VERSION} listening on ${scheme}://${config.host}:${server.port} (data: ${config.dataDir})`);

  const stop = async (signal: string) => {
    console.log(`Pigeon stopping (${signal})`);
    worker.stop();
    services.hub.closeAll();
    await server.stop();
    rt.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  return null;
}
