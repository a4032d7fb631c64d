// Phones and the foreign APIs: pairing details and token, the simulated phone, SMSGate's signing key,
// Twilio's credentials.
import { writeFileSync } from "node:fs";
import QRCode from "qrcode";
import { ConfigError, loadConfig } from "../../config";
import { AppError } from "../../core/errors";
import { listenUrl, runningServerUrl } from "../../lib/listen-address";
import type { Runtime } from "../runtime";
import { parseSimulatePhoneArgs, simulatePhone } from "../simulate-phone";
import { int, print, UsageError, type Values } from "../args";

/** The workspace --workspace names, else the default one. */
function workspaceOf(accounts: Runtime["services"]["accounts"], values: Values) {
  return values.workspace ? accounts.getWorkspace(int(values.workspace, "--workspace")) : accounts.defaultWorkspace();
}

/**
 * Where the server is: PIGEON_PUBLIC_URL when set (unless `local`: a command on this machine asks
 * the server itself), else a running server's own address (each records the port it bound), else
 * what PIGEON_PORT and `host` say it would use. On PostgreSQL the servers need not run on this
 * machine: with none found here and no PIGEON_PORT, the address cannot be known, and it says so.
 */
export function serverAddress(
  config: ReturnType<typeof loadConfig>,
  host: string,
  options: { local?: boolean } = {},
): { base: string; running: boolean } {
  if (config.publicUrl && !options.local) return { base: config.publicUrl, running: false };
  const running = runningServerUrl(config.dataDir, config.databaseUrl !== null);
  if (running) return { base: running, running: true };
  if (config.databaseUrl !== null && process.env.PIGEON_PORT === undefined && !options.local)
    throw new AppError(
      "conflict",
      `cannot tell the server's address: no server is running on this machine with PIGEON_DATA_DIR ${config.dataDir}, and on PostgreSQL ` +
        "the servers may run elsewhere. Set PIGEON_PUBLIC_URL to the URL phones reach them at (or PIGEON_PORT to the port of a server here).",
    );
  return { base: listenUrl(config.tls ? "https" : "http", host, config.port), running: false };
}

export async function devicesCmd(rt: Runtime, sub: string | undefined, values: Values) {
  const { accounts, config } = rt.services;
  const workspace = await workspaceOf(accounts, values);
  if (sub !== "pair-info" && sub !== "rotate-token") throw new UsageError("devices takes pair-info or rotate-token");
  const token = sub === "rotate-token" ? (await accounts.rotatePairingToken(workspace.id)).pairingToken : workspace.pairingToken;
  const { base, running } = serverAddress(config, config.host);
  const info = await rt.services.phone.pairingInfo(`${base}/mobile/v1`, token);
  if (values.svg) writeFileSync(values.svg, info.qr_svg);
  const qr = await QRCode.toString(info.qr_text, { type: "terminal", small: true });
  // Phones already paired on the app's default AUTO channel: they only poll, so say how to fix them.
  const polling = (await rt.services.devices.exportRows(workspace.id, false))
    .filter((d) => d.notification_channel === "polling")
    .map((d) => ({ device_id: d.device_id, name: d.name, hint: d.channel_hint }));
  const pollingLines = polling.length
    ? [
        `Paired phones that only poll every 15 minutes (notification channel AUTO, no event stream):`,
        ...polling.map(
          (d) => `  #${d.device_id} ${d.name}: choose Settings → Cloud Server → Notification channel → SSE Only, then restart the app.`,
        ),
      ]
    : [];
  print(
    values,
    {
      workspace_id: workspace.id,
      server_url: info.server_url,
      pairing_token: info.pairing_token,
      qr_text: info.qr_text,
      polling_phones: polling,
    },
    [
      `In the SMS Gateway for Android app: Settings → Cloud Server`,
      `  API URL:              ${info.server_url}`,
      `  Private Token:        ${info.pairing_token}`,
      `  Notification channel: SSE Only`,
      `Then turn on "Cloud server" on the Home tab and restart the app.`,
      config.publicUrl
        ? ""
        : `(PIGEON_PUBLIC_URL is not set: the URL above is ${running ? "the running server's own address" : "from PIGEON_PORT/PIGEON_HOST (no running server found)"}; the phone needs an https URL it can reach, so set PIGEON_PUBLIC_URL to that.)`,
      qr,
      ...pollingLines,
    ].join("\n"),
  );
}

export async function simulate(argv: string[]): Promise<number | null> {
  let opts: ReturnType<typeof parseSimulatePhoneArgs>;
  try {
    opts = parseSimulatePhoneArgs(argv);
  } catch (error) {
    console.error(`pigeon simulate-phone: ${(error as Error).message}\nRun pigeon --help for usage.`);
    return 2;
  }
  const controller = new AbortController();
  let phone: Awaited<ReturnType<typeof simulatePhone>>;
  try {
    phone = await simulatePhone(opts, controller.signal);
  } catch (error) {
    console.error(`pigeon simulate-phone: ${(error as Error).message}`);
    return 1;
  }
  const stop = async () => {
    await phone.stop();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
  // A phone that loses its connection and gets it back, as phones do: SIGUSR1 and SIGUSR2.
  process.on("SIGUSR1", () => phone.setNetwork(false));
  process.on("SIGUSR2", () => phone.setNetwork(true));
  return null;
}

/** The SMSGate-compatible API's webhook signing key, which that API never returns (as SMSGate). */
export async function smsgateCmd(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  if (sub !== "signing-key") throw new UsageError("smsgate takes signing-key");
  const { accounts, smsgateWebhooks } = rt.services;
  const workspace = await workspaceOf(accounts, values);
  const key = await smsgateWebhooks.signingKey(workspace.id);
  print(
    values,
    { workspace_id: workspace.id, signing_key: key },
    `${key}\n(verify X-Signature as hex HMAC-SHA256 of the body followed by X-Timestamp, keyed with this)`,
  );
}

export async function twilioCmd(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  if (sub !== "credentials") throw new UsageError("twilio takes credentials");
  const { accounts, twilio } = rt.services;
  const workspace = await workspaceOf(accounts, values);
  const c = await twilio.credentials(workspace.id, { rotate: values.rotate === true });
  // The default pool's Messaging Service SID: what a Twilio library sends as MessagingServiceSid.
  const pool = (await rt.services.pools.list(workspace.id)).pools.find((p) => p.is_default) ?? null;
  const defaultPool = pool && { pool_id: pool.pool_id, name: pool.name, messaging_service_sid: pool.messaging_service_sid };
  print(
    values,
    { workspace_id: workspace.id, account_sid: c.account_sid, auth_token: c.auth_token, default_pool: defaultPool },
    `Account SID: ${c.account_sid}\nAuth token:  ${c.auth_token}${values.rotate ? " (new: the old token stopped working)" : ""}\n` +
      (defaultPool
        ? `Messaging Service SID of the default pool "${defaultPool.name}": ${defaultPool.messaging_service_sid}\n`
        : "No default pool: a pool's Messaging Service SID is on its API resource and its dashboard page.\n") +
      `Point a Twilio library at ${rt.config.publicUrl} (its API base URL) with these, or with an API key and its secret.`,
  );
}

/** `pigeon smpp credentials`: the workspace's system_id, and its password when just issued (first use or --rotate). */
export async function smppCmd(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  if (sub !== "credentials") throw new UsageError("smpp takes credentials");
  const { accounts, smpp } = rt.services;
  const workspace = await workspaceOf(accounts, values);
  const before = await smpp.credentials.get(workspace.id);
  const c = await smpp.credentials.issue(workspace.id, { rotate: values.rotate === true });
  const { port, tlsPort } = rt.config.smpp;
  const where = [port !== null ? `port ${port}` : null, tlsPort !== null ? `TLS port ${tlsPort}` : null].filter(Boolean).join(", ");
  print(
    values,
    {
      workspace_id: workspace.id,
      system_id: c.systemId,
      password: c.password,
      issued_at: new Date(c.rotatedAt).toISOString(),
      port,
      tls_port: tlsPort,
    },
    `system_id: ${c.systemId}\n` +
      (c.password
        ? `password:  ${c.password}  (shown only now${before ? "; binds made with the old one are closed" : ""})\n`
        : "password:  shown when it was issued; --rotate issues a new one\n") +
      (where
        ? `Bind to this server's SMPP listener on ${where}.`
        : "The SMPP listener is off: set PIGEON_SMPP_PORT (2775 is usual) and restart."),
  );
}

/**
 * The running server a client command talks to: `--url` when given (http or https only), else the
 * address this machine's configuration gives. `error` says what is wrong, for the command to print.
 */
export function runningServer(values: Values): { base: string } | { error: string } {
  try {
    if (values.url === undefined) return { base: serverAddress(loadConfig(), "127.0.0.1", { local: true }).base };
    const url = new URL(values.url);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http");
    return { base: values.url.replace(/\/+$/, "") };
  } catch (error) {
    return {
      error:
        error instanceof ConfigError
          ? `configuration error: ${error.message}`
          : `--url must be an http:// or https:// URL, got "${values.url}"`,
    };
  }
}

/** Fetch options for a call to our own server: its certificate on loopback is often self-signed, so it is checked only beyond loopback. */
export function ownServerTls(url: string): RequestInit {
  return /^https:\/\/(127\.|localhost|\[::1\])/.test(url) ? ({ tls: { rejectUnauthorized: false } } as RequestInit) : {};
}
