import { ConfigError, ENV_VARS } from "../config";
import { isDiskFull } from "../lib/disk";
import { AppError } from "../core/errors";
import { SecretKeyError } from "../lib/secrets";
import { VERSION } from "../version";
import { DatabaseUnavailable, openRuntime, type Runtime } from "./runtime";
import { serve } from "./serve";
import { diskFull, failure, parse, UsageError, type Values } from "./args";
import { accountsCmd, credits, keys, plans, usersCmd, workspaces } from "./commands/accounts";
import { backup, dbCmd, health, prune, restore } from "./commands/data";
import { devicesCmd, simulate, smppCmd, smsgateCmd, twilioCmd } from "./commands/devices";
import { mcp } from "./commands/mcp";

/** What runs a command with the database open (the runtime). */
type RuntimeRun = (rt: Runtime, sub: string | undefined, rest: string[], values: Values) => Promise<void>;

/**
 * One command: how --help shows it, and what runs it: `runtime` with the database open, `serves`
 * too but answering for itself (its exit code, or null while it runs), `alone` opening what it
 * needs (or nothing), `argv` given its own arguments before the common options are parsed.
 */
type Command = { name: string; help: string } & (
  | { runtime: RuntimeRun }
  | { serves: (rt: Runtime) => Promise<number | null> }
  | { alone: (values: Values) => Promise<number> }
  | { argv: (argv: string[]) => Promise<number | null> }
);

const COMMANDS: Command[] = [
  {
    name: "serve",
    help: ["  serve                                   Start the server (the default)"].join("\n"),
    serves: serve,
  },
  {
    name: "migrate",
    help: ["  migrate                                 Apply database migrations and exit"].join("\n"),
    runtime: async () => console.log("Database is up to date"),
  },
  {
    name: "keys",
    help: [
      "  keys create --name N [--workspace ID] [limits] [--needs-approval]",
      "                                          Create an API key; prints the secret once (--needs-approval:",
      "                                          its sends wait for a person's approval)",
      "  keys update KEY [--name N] [limits]     Change a key's name or limits (KEY is the key or its id)",
      "    limits: --scopes a,b (send, messages:read, threads:read, contacts, templates, devices, admin; all: every one)",
      "            --recipients anyone|contacts|tag:T|+15551234567,+15557654321",
      "            --daily-cap N|none (sends a UTC day)   --expires 2027-01-31|30d|never",
      "  keys list [--workspace ID]              List API keys (name, key, status, limits, approval, created, last used)",
      "  keys rotate KEY                         Issue a new secret for a key (KEY is the key or its id)",
      "  keys disable KEY | keys enable KEY      Disable or re-enable a key",
      "  keys approval KEY on|off                Whether a key's sends wait for approval",
    ].join("\n"),
    runtime: keys,
  },
  {
    name: "workspaces",
    help: ["  workspaces create --name N [--account ID]", "  workspaces list [--account ID]"].join("\n"),
    runtime: (rt, sub, _rest, values) => workspaces(rt, sub, values),
  },
  {
    name: "accounts",
    help: [
      "  accounts create --name N [--plan CODE]  A new account (plan default: free) with a workspace",
      "  accounts list",
      "  accounts suspend ID | accounts resume ID",
      "  accounts set-plan ID --plan CODE",
      "  accounts set-cap ID --chars N           The account's SMS length cap (default 1600)",
    ].join("\n"),
    runtime: accountsCmd,
  },
  {
    name: "plans",
    help: ["  plans list", "  plans set --code C --name N [--monthly-sms N|unlimited] [--per-minute N] [--per-day N] [--urls yes|no]"].join(
      "\n",
    ),
    runtime: (rt, sub, _rest, values) => plans(rt, sub, values),
  },
  {
    name: "credits",
    help: [
      "  credits add --workspace ID --amount N [--note TEXT]   Top up (or, negative, adjust) credits",
      "  credits show --workspace ID             Balance and credits used this month",
    ].join("\n"),
    runtime: (rt, sub, _rest, values) => credits(rt, sub, values),
  },
  {
    name: "devices",
    help: [
      "  devices pair-info [--workspace ID] [--svg FILE]   How to pair a phone: URL, token, QR code",
      "  devices rotate-token [--workspace ID]   A new pairing token (paired phones keep working)",
    ].join("\n"),
    runtime: (rt, sub, _rest, values) => devicesCmd(rt, sub, values),
  },
  {
    name: "users",
    help: [
      "  users create --email E [--password P] [--account ID] [--role owner|member]",
      "                                          A dashboard user (password read from stdin when omitted)",
      "  users set-password --email E [--password P]   A new password; the user's sessions end",
      "  users list [--account ID]",
      "  users reset-2fa --email E                 Removes the user's two-factor sign-in and recovery codes",
    ].join("\n"),
    runtime: (rt, sub, _rest, values) => usersCmd(rt, sub, values),
  },
  {
    name: "simulate-phone",
    help: [
      '  simulate-phone --server URL --token T [--fail-rate 0..1] [--inbound "text"] [--from +E164] [--delay MS]',
      "                 [--channel sse|auto] [--poll S] [--ping S] [--order lifo|fifo] [--sim-selection MODE]",
      '                 [--inbound-data BASE64] [--missed "text"] [--mms "subject"] [--mms-pushes N] [--mms-file PATH]',
      "                 [--app-version V]",
      "                 [--battery 0..100] [--charging] [--no-connection]",
      "                 [--hold MS] [--sims 1-3] [--name NAME] [--passphrase P]",
      "                                          Act as a paired phone (the SMS Gateway for Android protocol);",
      "                                          SIGUSR1 takes its network away, SIGUSR2 gives it back;",
      "                                          --passphrase decrypts encrypted messages as the app does",
    ].join("\n"),
    argv: simulate,
  },
  {
    name: "smsgate",
    help: ["  smsgate signing-key [--workspace ID]    The key SMSGate-format webhooks are signed with (X-Signature)"].join("\n"),
    runtime: (rt, sub, _rest, values) => smsgateCmd(rt, sub, values),
  },
  {
    name: "twilio",
    help: [
      "  twilio credentials [--workspace ID] [--rotate]",
      "                                          The account SID and auth token of the Twilio-compatible API",
      "                                          (made on first use; --rotate issues a new token)",
    ].join("\n"),
    runtime: (rt, sub, _rest, values) => twilioCmd(rt, sub, values),
  },
  {
    name: "smpp",
    help: [
      "  smpp credentials [--workspace ID] [--rotate] [--json]",
      "                                          The system_id and password ESMEs bind to the SMPP listener with",
      "                                          (made on first use; the password is shown once; --rotate issues a new one)",
    ].join("\n"),
    runtime: (rt, sub, _rest, values) => smppCmd(rt, sub, values),
  },
  {
    name: "backup",
    help: ["  backup --out FILE                       Write a consistent copy of the database"].join("\n"),
    runtime: async (rt, _sub, _rest, values) => backup(rt, values),
  },
  {
    name: "health",
    help: [
      "  health [--url URL]                      Ask a running server's /health: exit 0 when it answers healthy, 1 when",
      "                                          not (the server of PIGEON_DATA_DIR, or 127.0.0.1:PIGEON_PORT, by default)",
    ].join("\n"),
    // A container's health check runs this every few seconds: it asks the server, never the database.
    alone: health,
  },
  {
    name: "mcp",
    help: [
      "  mcp [--url URL] [--poll-seconds N]      Serve MCP on stdin/stdout for a desktop agent, calling the server at URL",
      "                                          (default as for health) with PIGEON_API_KEY and PIGEON_API_SECRET; subscribed",
      "                                          resources are read every N seconds (default 5). Nothing but MCP on stdout",
    ].join("\n"),
    alone: mcp,
  },
  {
    name: "prune",
    help: [
      "  prune --before YYYY-MM-DD [--dry-run]   Remove finished messages created before that day (UTC) with their logs,",
      "                                          webhook deliveries, and expired sessions and tokens; statistics stay",
    ].join("\n"),
    runtime: (rt, _sub, _rest, values) => prune(rt, values),
  },
  {
    name: "restore",
    help: [
      "  restore --from FILE [--force]           Put a backup back into PIGEON_DATA_DIR (server stopped); --force",
      "                                          replaces a database there (it is kept beside it)",
    ].join("\n"),
    // It must not open the database it replaces (opening migrates it and may bootstrap it).
    alone: restore,
  },
  {
    name: "db",
    help: [
      "  db copy --to URL                        Copy the data directory's SQLite database into an empty",
      "                                          PostgreSQL database (server stopped); then set PIGEON_DATABASE_URL",
    ].join("\n"),
    runtime: (rt, sub, _rest, values) => dbCmd(rt, sub, values),
  },
];

/** The commands, by name, as --help lists them. */
export const COMMAND_NAMES = COMMANDS.map((c) => c.name);

export const HELP = `pigeon ${VERSION} — self-hosted messaging server

Usage: pigeon [command] [options]

Commands:
${COMMANDS.map((c) => c.help).join("\n")}

Options:
  --json          Machine-readable output
  -h, --help      This help
  -v, --version   Print the version

Environment (default in brackets; docs/operating.md explains each):
${ENV_VARS.map((v) => `  ${v.name.padEnd(30)} ${v.meaning}${v.default === null ? "" : ` [${v.default}]`}`).join("\n")}`;

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
  const found = COMMANDS.find((c) => c.name === command);
  if (!found || "argv" in found) {
    console.error(`pigeon: unknown command "${command}"\nRun pigeon --help for usage.`);
    return 2;
  }
  if ("alone" in found) return found.alone(values);

  let rt: Runtime;
  try {
    rt = await open();
  } catch (error) {
    if (error instanceof ConfigError) {
      failure(command, `pigeon: configuration error: ${error.message}`);
      return 2;
    }
    if (isDiskFull(error)) return diskFull(command);
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
    if ("serves" in found) return await found.serves(rt);
    await found.runtime(rt, sub, rest, values);
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
    if (isDiskFull(error)) return diskFull();
    throw error;
  }
}
