// Argument parsing and the operator's sub-commands. Each works whether or not a server is running
// on the same data directory (SQLite in WAL mode, with a busy timeout, lets both write).
import { chmodSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import QRCode from "qrcode";
import { ConfigError, ENV_VARS, ensureDataDir, loadConfig, redactedDatabaseUrl } from "../config";
import { RestoreRefused, restoreSqlite } from "../db/restore";
import { isStorageFull } from "../lib/storage";
import { AppError } from "../core/errors";
import { listenUrl, runningServerUrl } from "../lib/listen-address";
import { createLogger } from "../lib/log";
import { SecretKeyError } from "../lib/secrets";
import { iso } from "../lib/time";
import { VERSION } from "../version";
import { CopyRefused, copySqliteToPostgres, refuseOccupied } from "../db/copy";
import { migratePostgres, postgresMajorVersion } from "../db/postgres-migrate";
import { connectPostgres } from "../db/postgres-storage";
import { DataDirLocked, lockDataDir, type DataDirLock } from "../lib/data-dir-lock";
import { DatabaseUnavailable, openRuntime, type Runtime } from "./runtime";
import { serve } from "./serve";
import { parseSimulatePhoneArgs, simulatePhone } from "./simulate-phone";

export const HELP = `pigeon ${VERSION} — self-hosted messaging server

Usage: pigeon [command] [options]

Commands:
  serve                                   Start the server (the default)
  migrate                                 Apply database migrations and exit
  keys create --name N [--workspace ID]   Create an API key; prints the secret once
  keys list [--workspace ID]              List API keys (name, key, status, created, last used)
  keys rotate KEY                         Issue a new secret for a key (KEY is the key or its id)
  keys disable KEY | keys enable KEY      Disable or re-enable a key
  workspaces create --name N [--account ID]
  workspaces list [--account ID]
  accounts create --name N [--plan CODE]  A new account (plan default: free) with a workspace
  accounts list
  accounts suspend ID | accounts resume ID
  accounts set-plan ID --plan CODE
  accounts set-cap ID --chars N           The account's SMS length cap (default 1600)
  plans list
  plans set --code C --name N [--monthly-sms N|unlimited] [--per-minute N] [--per-day N] [--urls yes|no]
  credits add --workspace ID --amount N [--note TEXT]   Top up (or, negative, adjust) credits
  credits show --workspace ID             Balance and credits used this month
  devices pair-info [--workspace ID] [--svg FILE]   How to pair a phone: URL, token, QR code
  devices rotate-token [--workspace ID]   A new pairing token (paired phones keep working)
  users create --email E [--password P] [--account ID] [--role owner|member]
                                          A dashboard user (password read from stdin when omitted)
  users set-password --email E [--password P]   A new password; the user's sessions end
  users list [--account ID]
  simulate-phone --server URL --token T [--fail-rate 0..1] [--inbound "text"] [--from +E164] [--delay MS]
                 [--channel sse|auto] [--poll S] [--ping S] [--order lifo|fifo] [--sim-selection MODE]
                 [--missed "text"] [--mms "subject"] [--mms-pushes N] [--app-version V]
                 [--battery 0..100] [--charging] [--no-connection]
                 [--hold MS] [--sims 1-3] [--name NAME]
                                          Act as a paired phone (the SMS Gateway for Android protocol);
                                          SIGUSR1 takes its network away, SIGUSR2 gives it back
  smsgate signing-key [--workspace ID]    The key SMSGate-format webhooks are signed with (X-Signature)
  twilio credentials [--workspace ID] [--rotate]
                                          The account SID and auth token of the Twilio-compatible API
                                          (made on first use; --rotate issues a new token)
  backup --out FILE                       Write a consistent copy of the database
  health [--url URL]                      Ask a running server's /health: exit 0 when it answers healthy, 1 when
                                          not (the server of PIGEON_DATA_DIR, or 127.0.0.1:PIGEON_PORT, by default)
  prune --before YYYY-MM-DD [--dry-run]   Remove finished messages created before that day (UTC) with their logs,
                                          webhook deliveries, and expired sessions and tokens; statistics stay
  restore --from FILE [--force]           Put a backup back into PIGEON_DATA_DIR (server stopped); --force
                                          replaces a database there (it is kept beside it)
  db copy --to URL                        Copy the data directory's SQLite database into an empty
                                          PostgreSQL database (server stopped); then set PIGEON_DATABASE_URL

Options:
  --json          Machine-readable output
  -h, --help      This help
  -v, --version   Print the version

Environment (default in brackets; docs/operating.md explains each):
${ENV_VARS.map((v) => `  ${v.name.padEnd(30)} ${v.meaning}${v.default === null ? "" : ` [${v.default}]`}`).join("\n")}`;

class UsageError extends Error {}

const OPTIONS = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
  name: { type: "string" },
  workspace: { type: "string" },
  account: { type: "string" },
  plan: { type: "string" },
  key: { type: "string" },
  chars: { type: "string" },
  code: { type: "string" },
  "monthly-sms": { type: "string" },
  "per-minute": { type: "string" },
  "per-day": { type: "string" },
  urls: { type: "string" },
  out: { type: "string" },
  from: { type: "string" },
  url: { type: "string" },
  force: { type: "boolean" },
  rotate: { type: "boolean" },
  to: { type: "string" },
  amount: { type: "string" },
  note: { type: "string" },
  svg: { type: "string" },
  email: { type: "string" },
  password: { type: "string" },
  role: { type: "string" },
  before: { type: "string" },
  "dry-run": { type: "boolean" },
} as const;

type Values = ReturnType<typeof parse>["values"];

function parse(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
}

function int(value: string | undefined, flag: string, min = 1): number {
  if (value === undefined || !/^\d+$/.test(value) || Number(value) < min) {
    throw new UsageError(`${flag} needs a whole number${min > 0 ? ` of at least ${min}` : ""}`);
  }
  return Number(value);
}

function required(value: string | undefined, flag: string): string {
  if (!value?.trim()) throw new UsageError(`${flag} is required`);
  return value.trim();
}

function print(values: Values, json: unknown, human: string) {
  console.log(values.json ? JSON.stringify(json) : human);
}

function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return "(none)";
  const cols = Object.keys(rows[0]);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  return [line(cols), ...rows.map((r) => line(cols.map((c) => String(r[c] ?? ""))))].join("\n");
}

async function keys(rt: Runtime, sub: string | undefined, args: string[], values: Values): Promise<void> {
  const { accounts } = rt.services;
  const ref = () => required(values.key ?? args[0], "KEY (the API key or its id)");
  switch (sub) {
    case "create": {
      const created = await accounts.createKey(
        required(values.name, "--name"),
        values.workspace ? int(values.workspace, "--workspace") : undefined,
      );
      print(
        values,
        created,
        `API key:    ${created.api_key}\nAPI secret: ${created.api_secret}\nWorkspace:  ${created.workspace_id}\nStore the secret now: it is shown only once.`,
      );
      return;
    }
    case "list": {
      const rows = (await accounts.listKeys(values.workspace ? int(values.workspace, "--workspace") : undefined)).map((k) => ({
        id: k.id,
        name: k.name,
        key: k.key,
        workspace_id: k.workspaceId,
        status: k.status,
        secret: `…${k.secretHint}`,
        created_at: iso(k.createdAt),
        last_used_at: iso(k.lastUsedAt),
      }));
      print(values, rows, table(rows));
      return;
    }
    case "rotate": {
      const rotated = await accounts.rotateKey(ref());
      print(values, rotated, `API key:    ${rotated.api_key}\nAPI secret: ${rotated.api_secret}\nThe old secret no longer works.`);
      return;
    }
    case "disable":
    case "enable": {
      const row = await accounts.setKeyStatus(ref(), sub === "disable" ? "disabled" : "active");
      print(values, { key_id: row.id, api_key: row.key, status: row.status }, `Key ${row.key} is now ${row.status}`);
      return;
    }
  }
  throw new UsageError("keys takes create, list, rotate, disable or enable");
}

/** The password from --password, else the first line of standard input (so it stays out of the shell history). */
async function passwordFrom(values: Values): Promise<string> {
  if (values.password !== undefined) return values.password;
  const input = await new Response(Bun.stdin.stream()).text();
  const line = input.split(/\r?\n/)[0] ?? "";
  if (!line) throw new UsageError("--password is required (or give it on standard input)");
  return line;
}

async function usersCmd(rt: Runtime, sub: string | undefined, values: Values) {
  const { users } = rt.services;
  switch (sub) {
    case "create": {
      const role = values.role ?? "owner";
      if (role !== "owner" && role !== "member") throw new UsageError("--role is owner or member");
      const user = await users.createUser({
        email: required(values.email, "--email"),
        password: await passwordFrom(values),
        accountId: values.account ? int(values.account, "--account") : undefined,
        role,
      });
      print(values, user, `User ${user.email} (${user.role} of account ${user.account_id}) created; sign in at /dashboard`);
      return;
    }
    case "set-password": {
      const user = await users.setPassword(required(values.email, "--email"), await passwordFrom(values));
      print(values, user, `Password of ${user.email} changed; its sessions were signed out`);
      return;
    }
    case "list": {
      const rows = await users.listUsers(values.account ? int(values.account, "--account") : undefined);
      print(values, rows, table(rows as unknown as Record<string, unknown>[]));
      return;
    }
  }
  throw new UsageError("users takes create, set-password or list");
}

async function workspaces(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  const { accounts } = rt.services;
  if (sub === "create") {
    const ws = await accounts.createWorkspace(
      required(values.name, "--name"),
      values.account ? int(values.account, "--account") : undefined,
    );
    const out = { workspace_id: ws.id, project_id: ws.id, name: ws.name, account_id: ws.accountId, created_at: iso(ws.createdAt) };
    print(values, out, `Workspace ${ws.id} "${ws.name}" created. Give it a key: pigeon keys create --name NAME --workspace ${ws.id}`);
    return;
  }
  if (sub === "list") {
    const rows = (await accounts.listWorkspaces(values.account ? int(values.account, "--account") : undefined)).map((w) => ({
      workspace_id: w.id,
      name: w.name,
      account_id: w.accountId,
      credit_balance: w.creditBalance,
      created_at: iso(w.createdAt),
    }));
    print(values, rows, table(rows));
    return;
  }
  throw new UsageError("workspaces takes create or list");
}

async function accountsCmd(rt: Runtime, sub: string | undefined, args: string[], values: Values): Promise<void> {
  const { accounts } = rt.services;
  const id = () => int(values.account ?? args[0], "ID");
  const show = (a: { id: number; name: string; status: string }) =>
    print(values, { account_id: a.id, name: a.name, status: a.status }, `Account ${a.id} "${a.name}" is ${a.status}`);
  switch (sub) {
    case "create": {
      const { account, workspace } = await accounts.createAccount(required(values.name, "--name"), values.plan ?? "free");
      print(
        values,
        { account_id: account.id, name: account.name, workspace_id: workspace.id, status: account.status },
        `Account ${account.id} "${account.name}" created with workspace ${workspace.id}. Give it a key: pigeon keys create --name NAME --workspace ${workspace.id}`,
      );
      return;
    }
    case "list": {
      const rows = (await accounts.listAccounts()).map((a) => ({
        account_id: a.id,
        name: a.name,
        status: a.status,
        owner: a.isOwner,
        plan: a.plan,
        sms_length_cap: a.smsLengthCap,
        created_at: iso(a.createdAt),
      }));
      print(values, rows, table(rows));
      return;
    }
    case "suspend":
      return show(await accounts.setAccountStatus(id(), "suspended"));
    case "resume":
      return show(await accounts.setAccountStatus(id(), "active"));
    case "set-plan": {
      const a = await accounts.setAccountPlan(id(), required(values.plan, "--plan"));
      print(values, { account_id: a.id, plan: values.plan }, `Account ${a.id} is now on plan ${values.plan}`);
      return;
    }
    case "set-cap": {
      const a = await accounts.setSmsLengthCap(id(), int(values.chars, "--chars"));
      print(values, { account_id: a.id, sms_length_cap: a.smsLengthCap }, `Account ${a.id} SMS length cap: ${a.smsLengthCap}`);
      return;
    }
  }
  throw new UsageError("accounts takes create, list, suspend, resume, set-plan or set-cap");
}

async function plans(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  const { accounts } = rt.services;
  const present = (p: Awaited<ReturnType<typeof accounts.listPlans>>[number]) => ({
    code: p.code,
    name: p.name,
    requests_per_minute: p.requestsPerMinute,
    requests_per_day: p.requestsPerDay,
    monthly_sms: p.monthlySmsLimit ?? "unlimited",
    urls_allowed: p.allowUrls,
  });
  if (sub === "list") {
    const rows = (await accounts.listPlans()).map(present);
    print(values, rows, table(rows));
    return;
  }
  if (sub === "set") {
    const monthly = values["monthly-sms"];
    if (values.urls !== undefined && values.urls !== "yes" && values.urls !== "no") throw new UsageError("--urls takes yes or no");
    const row = await accounts.upsertPlan({
      code: required(values.code, "--code"),
      name: values.name ?? required(values.code, "--code"),
      monthlySmsLimit: monthly === undefined || monthly === "unlimited" ? null : int(monthly, "--monthly-sms", 0),
      requestsPerMinute: values["per-minute"] ? int(values["per-minute"], "--per-minute") : undefined,
      requestsPerDay: values["per-day"] ? int(values["per-day"], "--per-day") : undefined,
      allowUrls: values.urls === undefined ? undefined : values.urls === "yes",
    });
    print(values, present(row), `Plan ${row.code} saved`);
    return;
  }
  throw new UsageError("plans takes list or set");
}

async function credits(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  const { credits: ledger, accounts } = rt.services;
  const workspaceId = int(values.workspace, "--workspace");
  await accounts.getWorkspace(workspaceId);
  if (sub === "add") {
    const raw = required(values.amount, "--amount");
    if (!/^-?\d+$/.test(raw) || Number(raw) === 0) throw new UsageError("--amount needs a non-zero whole number");
    const balance = await ledger.topUp(workspaceId, Number(raw), values.note ?? null);
    print(values, { workspace_id: workspaceId, balance }, `Workspace ${workspaceId} balance: ${balance} credits`);
    return;
  }
  if (sub === "show") {
    const out = {
      workspace_id: workspaceId,
      balance: await ledger.balance(workspaceId),
      used_this_month: await ledger.usedThisMonth(workspaceId),
    };
    print(values, out, `Workspace ${workspaceId}: ${out.balance} credits, ${out.used_this_month} used this month`);
    return;
  }
  throw new UsageError("credits takes add or show");
}

/**
 * Where the server is: PIGEON_PUBLIC_URL when set (unless `local`: a command on this machine asks
 * the server itself), else a running server's own address (each records the port it bound), else
 * what PIGEON_PORT and `host` say it would use. On PostgreSQL the servers need not run on this
 * machine: with none found here and no PIGEON_PORT, the address cannot be known, and it says so.
 */
function serverAddress(
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

async function devicesCmd(rt: Runtime, sub: string | undefined, values: Values) {
  const { accounts, config } = rt.services;
  const workspace = values.workspace
    ? await accounts.getWorkspace(int(values.workspace, "--workspace"))
    : await accounts.defaultWorkspace();
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

async function simulate(argv: string[]): Promise<number | null> {
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
async function smsgateCmd(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  if (sub !== "signing-key") throw new UsageError("smsgate takes signing-key");
  const { accounts, smsgateWebhooks } = rt.services;
  const workspace = values.workspace
    ? await accounts.getWorkspace(int(values.workspace, "--workspace"))
    : await accounts.defaultWorkspace();
  const key = await smsgateWebhooks.signingKey(workspace.id);
  print(
    values,
    { workspace_id: workspace.id, signing_key: key },
    `${key}\n(verify X-Signature as hex HMAC-SHA256 of the body followed by X-Timestamp, keyed with this)`,
  );
}

async function twilioCmd(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  if (sub !== "credentials") throw new UsageError("twilio takes credentials");
  const { accounts, twilio } = rt.services;
  const workspace = values.workspace
    ? await accounts.getWorkspace(int(values.workspace, "--workspace"))
    : await accounts.defaultWorkspace();
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

function backup(rt: Runtime, values: Values) {
  const out = required(values.out, "--out");
  if (rt.config.databaseUrl)
    throw new UsageError("backup copies the SQLite database; on PostgreSQL use pg_dump (and keep PIGEON_KEY_FILE with it)");
  rt.services.system.copyTo(out);
  chmodSync(out, 0o600);
  // The backup's secrets are sealed with the data directory's key: without it they are lost.
  const key = rt.config.keyFile;
  print(
    values,
    { backup: out, key_file: key },
    `Backup written to ${out}\nIts stored secrets (webhook secrets, provider tokens, pairing token) open only with ${key}: keep a copy of that file too, apart from the backup.`,
  );
}

/** A day as YYYY-MM-DD, a real one: its first instant in UTC. */
function dayStart(value: string | undefined, flag: string): number {
  const day = required(value, flag);
  const at = Date.parse(`${day}T00:00:00.000Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== day)
    throw new UsageError(`${flag} needs a date as YYYY-MM-DD, got "${day}"`);
  return at;
}

/**
 * `pigeon prune`: beside a running server or alone. Alone (the data directory's lock is free), it
 * may also rewrite an older SQLite database once so that it gives freed space back from then on.
 */
async function prune(rt: Runtime, values: Values): Promise<void> {
  const before = dayStart(values.before, "--before");
  const dryRun = values["dry-run"] === true;
  let lock: DataDirLock | null = null;
  if (!rt.config.databaseUrl && !dryRun) {
    try {
      lock = lockDataDir(rt.config.dataDir);
    } catch (error) {
      if (!(error instanceof DataDirLocked)) throw error;
    }
  }
  try {
    const report = await rt.services.retention.prune(before, { dryRun, convert: lock !== null });
    const listed = Object.entries(report)
      .filter(([k, v]) => typeof v === "number" && v > 0 && k !== "pages_freed")
      .map(([k, v]) => `  ${k.replaceAll("_", " ")}: ${v}`)
      .join("\n");
    const space = {
      returned: `\n${report.pages_freed} free pages given back to the disk`,
      converted: "\nThe database file was rewritten so that freed space goes back to the disk from now on",
      reused: "\nFreed space is reused for new rows; run pigeon prune while the server is stopped to give it back to the disk",
      autovacuum: "\nPostgreSQL's autovacuum makes the freed space reusable",
      unchanged: "",
    }[report.space];
    print(
      values,
      report,
      `${dryRun ? "Would remove" : "Removed"}, for what finished before ${report.before}:\n${listed || "  nothing"}${dryRun ? "" : space}`,
    );
  } finally {
    lock?.release();
  }
}

/** `pigeon health`: GET /health of the running server; 0 when it answers 200 with status ok. */
async function health(values: Values): Promise<number> {
  let base: string;
  try {
    if (values.url !== undefined) {
      const url = new URL(values.url);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http");
      base = values.url.replace(/\/+$/, "");
    } else {
      base = serverAddress(loadConfig(), "127.0.0.1", { local: true }).base;
    }
  } catch (error) {
    const message =
      error instanceof ConfigError
        ? `configuration error: ${error.message}`
        : `--url must be an http:// or https:// URL, got "${values.url}"`;
    console.error(`pigeon: ${message}`);
    return 2;
  }
  const url = `${base}/health`;
  let res: Response;
  try {
    // A server's own certificate on loopback is often self-signed: checked only beyond loopback.
    const loopback = /^https:\/\/(127\.|localhost|\[::1\])/.test(url);
    res = await fetch(url, { signal: AbortSignal.timeout(5_000), ...(loopback ? { tls: { rejectUnauthorized: false } } : {}) });
  } catch (error) {
    console.error(`pigeon: unhealthy: cannot reach ${url}: ${(error as Error).message}`);
    return 1;
  }
  const body = (await res.json().catch(() => null)) as { data?: { status?: string; error_code?: string } } | null;
  const healthy = res.status === 200 && body?.data?.status === "ok";
  if (healthy) print(values, body?.data, `healthy: ${url}`);
  else console.error(`pigeon: unhealthy: ${url} answered ${res.status}${body?.data?.error_code ? ` ${body.data.error_code}` : ""}`);
  return healthy ? 0 : 1;
}

/** `pigeon restore`: outside the runtime, under the data directory's lock (src/db/restore.ts). */
async function restore(values: Values): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  let from: string;
  try {
    config = loadConfig();
    from = required(values.from, "--from");
    if (config.databaseUrl)
      throw new UsageError(
        "restore writes the SQLite database of PIGEON_DATA_DIR; on PostgreSQL restore a pg_dump with pg_restore (or psql) and give every server the PIGEON_KEY_FILE kept with it",
      );
    ensureDataDir(config.dataDir);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`pigeon: ${error.message}\nRun pigeon --help for usage.`);
      return 2;
    }
    if (error instanceof ConfigError) {
      console.error(`pigeon: configuration error: ${error.message}`);
      return 2;
    }
    throw error;
  }
  let lock: DataDirLock;
  try {
    lock = lockDataDir(config.dataDir);
  } catch (error) {
    if (error instanceof DataDirLocked) {
      console.error(`pigeon: ${error.message}: stop it before restoring`);
      return 1;
    }
    throw error;
  }
  try {
    const report = await restoreSqlite({
      from,
      dataDir: config.dataDir,
      keyFile: config.keyFile,
      force: values.force === true,
      now: Date.now(),
    });
    print(
      values,
      { restored: report.database, from, replaced: report.replaced, migrations_applied: report.migrated },
      `Restored ${from} into ${report.database}` +
        (report.replaced ? `\nThe database it replaced is kept as ${report.replaced}` : "") +
        (report.migrated > 0 ? `\n${report.migrated} migration(s) brought it up to this release` : ""),
    );
    return 0;
  } catch (error) {
    if (error instanceof RestoreRefused) {
      console.error(`pigeon: ${error.message}`);
      return 1;
    }
    if (isStorageFull(error)) return diskFull();
    throw error;
  } finally {
    lock.release();
  }
}

async function dbCmd(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  if (sub !== "copy") throw new UsageError("db takes copy --to URL");
  const url = required(values.to, "--to");
  if (!rt.sqlite)
    throw new UsageError(
      "db copy reads the SQLite database in PIGEON_DATA_DIR: run it with PIGEON_DATABASE_URL unset (--to names the target)",
    );
  let targetUrl: string;
  try {
    targetUrl = loadConfig({ PIGEON_DATABASE_URL: url }).databaseUrl!;
  } catch (error) {
    throw new UsageError(`--to: ${(error as Error).message.replace(/^PIGEON_DATABASE_URL:? ?/, "")}`);
  }
  // The copy must see every write: no server may be running on the data directory.
  let lock: DataDirLock;
  try {
    lock = lockDataDir(rt.config.dataDir);
  } catch (error) {
    if (!(error instanceof DataDirLocked)) throw error;
    throw new AppError("conflict", `${error.message}: stop it before copying, so the copy misses no write`);
  }
  const target = connectPostgres(targetUrl, { max: 2 });
  try {
    let major: number;
    try {
      major = await postgresMajorVersion(target);
    } catch (error) {
      throw new AppError(
        "conflict",
        `cannot reach PostgreSQL at ${redactedDatabaseUrl(targetUrl)}: ${(error as Error).message.split("\n")[0]}`,
      );
    }
    if (major < 13) throw new AppError("conflict", `the target runs PostgreSQL ${major}; Pigeon needs 13 or newer`);
    await refuseOccupied(target);
    await migratePostgres(target);
    // One line a table on stderr as the copy reaches it (none with --json).
    let shown = "";
    const report = await copySqliteToPostgres(rt.sqlite, target, (table) => {
      if (values.json || shown === table) return;
      shown = table;
      process.stderr.write(`copying ${table}…\n`);
    });
    print(
      values,
      { copied: report.rows, tables: report.tables, to: redactedDatabaseUrl(targetUrl), key_file: rt.config.keyFile },
      `Copied ${report.rows} rows in ${report.tables.length} tables to ${redactedDatabaseUrl(targetUrl)}.\n` +
        `Start Pigeon with PIGEON_DATABASE_URL set to it and PIGEON_KEY_FILE=${rt.config.keyFile} (its secrets are sealed with that key).`,
    );
  } catch (error) {
    if (error instanceof CopyRefused) throw new AppError("conflict", error.message);
    throw error;
  } finally {
    lock.release();
    await target.end({ timeout: 5 });
  }
}

/** Runs a command line; returns the exit code, or null when the process keeps running (serve). */
export async function runCli(argv: string[], open: () => Runtime | Promise<Runtime> = openRuntime): Promise<number | null> {
  if (argv[0] === "simulate-phone" && !argv.includes("--help") && !argv.includes("-h")) return simulate(argv.slice(1));
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    console.error(`pigeon: ${(error as Error).message}\nRun pigeon --help for usage.`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.version) {
    console.log(`pigeon ${VERSION}`);
    return 0;
  }
  if (values.help || positionals[0] === "help") {
    console.log(HELP);
    return 0;
  }
  const [command = "serve", sub, ...rest] = positionals;
  const known = [
    "serve",
    "migrate",
    "keys",
    "users",
    "workspaces",
    "accounts",
    "plans",
    "credits",
    "devices",
    "smsgate",
    "twilio",
    "backup",
    "restore",
    "health",
    "prune",
    "db",
  ];
  if (!known.includes(command)) {
    console.error(`pigeon: unknown command "${command}"\nRun pigeon --help for usage.`);
    return 2;
  }
  // Restore must not open the database it replaces (opening migrates it and may bootstrap it).
  if (command === "restore") return restore(values);
  // A container's health check runs this every few seconds: it asks the server, never the database.
  if (command === "health") return health(values);

  let rt: Runtime;
  try {
    rt = await open();
  } catch (error) {
    if (error instanceof ConfigError) {
      failure(command, `pigeon: configuration error: ${error.message}`);
      return 2;
    }
    if (isStorageFull(error)) return diskFull(command);
    if (error instanceof SecretKeyError) {
      failure(command, `pigeon: ${error.message}`);
      return 2;
    }
    if (error instanceof DatabaseUnavailable) {
      failure(command, `pigeon: ${error.message}`);
      return 1;
    }
    throw error;
  }

  try {
    switch (command) {
      case "serve":
        return await serve(rt);
      case "migrate":
        console.log("Database is up to date");
        break;
      case "keys":
        await keys(rt, sub, rest, values);
        break;
      case "users":
        await usersCmd(rt, sub, values);
        break;
      case "workspaces":
        await workspaces(rt, sub, values);
        break;
      case "accounts":
        await accountsCmd(rt, sub, rest, values);
        break;
      case "plans":
        await plans(rt, sub, values);
        break;
      case "credits":
        await credits(rt, sub, values);
        break;
      case "devices":
        await devicesCmd(rt, sub, values);
        break;
      case "smsgate":
        await smsgateCmd(rt, sub, values);
        break;
      case "twilio":
        await twilioCmd(rt, sub, values);
        break;
      case "backup":
        backup(rt, values);
        break;
      case "prune":
        await prune(rt, values);
        break;
      case "db":
        await dbCmd(rt, sub, values);
        break;
    }
    rt.close();
    return 0;
  } catch (error) {
    rt.close();
    if (error instanceof UsageError) {
      console.error(`pigeon: ${error.message}\nRun pigeon --help for usage.`);
      return 2;
    }
    if (error instanceof AppError) {
      console.error(`pigeon: ${error.message}`);
      return 1;
    }
    if (isStorageFull(error)) return diskFull();
    throw error;
  }
}

/** A full disk is the operator's to fix, not a bug: one line, no stack. */
function diskFull(command = ""): number {
  failure(command, "pigeon: the disk holding the data directory is full (SQLITE_FULL): nothing was changed; free some space and retry");
  return 1;
}

/**
 * A command's failure on stderr. `pigeon serve` logs, so under PIGEON_LOG_FORMAT=json its failure
 * to start is a JSON line like the others (the format read from the environment: the
 * configuration may be what failed).
 */
function failure(command: string, text: string): void {
  if (command === "serve" && process.env.PIGEON_LOG_FORMAT?.trim().toLowerCase() === "json")
    createLogger({ level: "error", format: "json" }).error(text.replace(/^pigeon: /, ""));
  else console.error(text);
}
