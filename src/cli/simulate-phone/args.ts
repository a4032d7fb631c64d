// The simulate-phone command line: its flags, their defaults and checks, and the options they
// become.
import { parseArgs } from "node:util";

export interface SimulatePhoneOptions {
  /** Base URL including the mobile prefix, e.g. http://127.0.0.1:8080/mobile/v1. */
  server: string;
  /** The workspace pairing token: the app's "Private Token". */
  token: string;
  /** Probability, 0..1, that a message fails instead of being sent. */
  failRate: number;
  /** When set, the phone "receives" one SMS with this text after registering and reports it. */
  inbound: string | null;
  /** Sender of that inbound SMS. */
  from: string;
  /** Time from Processed to Sent and from Sent to Delivered. */
  delayMs: number;
  /** Device name sent at registration (the app sends MANUFACTURER/PRODUCT). */
  name: string;
  /** App version for the User-Agent. */
  appVersion: string;
  /** Seconds between safety-net polls of GET /message (the app's periodic pull: 15 minutes). */
  pollSeconds: number;
  /**
   * How long a downloaded message waits in the phone's own queue before the phone takes it up
   * (reports Processed); a cancel that arrives meanwhile drops it. 0: taken up at once.
   */
  holdMs: number;
  /** How many SIM cards the phone has and reports (1-3); a message for another SIM fails as on the app. */
  sims: number;
  log: (line: string) => void;
}

export interface SimulatedPhoneHandle {
  deviceId: string;
  stop(): Promise<void>;
}

const DEFAULTS = {
  from: "+15550001111",
  delayMs: 1000,
  name: "Pigeon/simulator",
  appVersion: "1.68.0",
  pollSeconds: 900,
};

const FLAGS = {
  server: { type: "string" },
  token: { type: "string" },
  "fail-rate": { type: "string" },
  inbound: { type: "string" },
  from: { type: "string" },
  delay: { type: "string" },
  name: { type: "string" },
  "app-version": { type: "string" },
  poll: { type: "string" },
  hold: { type: "string" },
  sims: { type: "string" },
} as const;

function numberFlag(raw: string | undefined, flag: string, fallback: number, min: number, max: number, whole = false): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(value) || value < min || value > max || (whole && !Number.isInteger(value))) {
    throw new Error(`${flag} needs ${whole ? "a whole number" : "a number"} from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** Reads the simulate-phone flags; throws an Error naming the flag when one is missing or invalid. */
export function parseSimulatePhoneArgs(argv: string[]): SimulatePhoneOptions {
  const { values } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false });

  const server = values.server?.trim();
  if (!server) throw new Error("--server is required, e.g. --server http://127.0.0.1:8080/mobile/v1");
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new Error(`--server needs an http(s) URL, got "${server}"`);
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash) {
    throw new Error(`--server needs an http(s) base URL without query or fragment, got "${server}"`);
  }

  const token = values.token?.trim();
  if (!token) throw new Error("--token is required (the workspace's pairing token)");

  const from = values.from ?? DEFAULTS.from;
  if (!/^\+[1-9]\d{6,14}$/.test(from)) throw new Error(`--from needs a number in E.164 form such as +15550001111, got "${from}"`);

  const name = values.name ?? DEFAULTS.name;
  // The server accepts names of at most 128 characters.
  if (!name.trim() || name.length > 128) throw new Error("--name needs 1 to 128 characters");

  const appVersion = values["app-version"] ?? DEFAULTS.appVersion;
  if (!/^\S+$/.test(appVersion)) throw new Error(`--app-version needs a version such as 1.68.0, got "${appVersion}"`);

  if (values.inbound !== undefined && values.inbound === "") throw new Error("--inbound needs the text of the received SMS");

  return {
    // The app appends "/device", "/message" … to the base verbatim, so a trailing slash would double.
    server: server.replace(/\/+$/, ""),
    token,
    failRate: numberFlag(values["fail-rate"], "--fail-rate", 0, 0, 1),
    inbound: values.inbound ?? null,
    from,
    delayMs: numberFlag(values.delay, "--delay", DEFAULTS.delayMs, 0, 3_600_000, true),
    name,
    appVersion,
    pollSeconds: numberFlag(values.poll, "--poll", DEFAULTS.pollSeconds, 0.01, 86_400),
    holdMs: numberFlag(values.hold, "--hold", 0, 0, 3_600_000, true),
    sims: numberFlag(values.sims, "--sims", 1, 1, 3, true),
    log: (line) => console.log(line),
  };
}
