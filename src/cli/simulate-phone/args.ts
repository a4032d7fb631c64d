// The simulate-phone command line: its flags, their defaults and checks, and the options they
// become.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
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
  /**
   * When set, the phone receives one data SMS with these bytes (base64) on the app's port 53739
   * after registering, and posts it as sms:data-received.
   */
  inboundData: string | null;
  /** Sender of that inbound SMS (and of --inbound-data, --missed and --mms). */
  from: string;
  /**
   * When set, an SMS with this text already sits in the phone's inbox, received while the app was
   * not running: never posted, until the server asks for the inbox (MessagesExportRequested).
   */
  missed: string | null;
  /** When set, the phone receives an MMS with this subject: mms:received, then mms:downloaded. */
  mms: string | null;
  /** How many times the carrier delivers that MMS's notification (WAP push); 1 normally. */
  mmsPushes: number;
  /** The MMS's attachment from a file (--mms-file); null sends a small PNG picture. */
  mmsFile: MmsFile | null;
  /** What the pings report: battery percent, on the charger, and whether there is a connection. */
  battery: number;
  charging: boolean;
  connected: boolean;
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
  /**
   * The app's Cloud Server → Notification channel. "sse" (SSE Only): it registers without a push
   * token and keeps the event stream open. "auto" (the app's default, with Play Services): it
   * registers a Firebase token, opens no stream and learns of work only by polling.
   */
  channel: "sse" | "auto";
  /**
   * The phone's own settings before the server gives any: the ping interval it started with
   * (ping.interval_seconds; null: the app does not ping), pull order, SIM choice.
   */
  pingSeconds: number | null;
  order: "lifo" | "fifo";
  simSelection: SimSelectionMode;
  /** How many SIM cards the phone has and reports (1-3); a message for another SIM fails as on the app. */
  sims: number;
  /**
   * The passphrase typed into the app's encryption settings, or null for none. An encrypted
   * message's text and numbers are decrypted with it; a passphrase the server pushes in its
   * settings (`encryption.passphrase`) replaces it, as in the app.
   */
  passphrase: string | null;
  log: (line: string) => void;
}

/** A file sent as an MMS's attachment: its name, its type (from the file name's ending) and its bytes. */
export interface MmsFile {
  name: string;
  contentType: string;
  bytes: Uint8Array;
}

/** The type an MMS part gets from its file name's ending, as a messaging app would name it. */
const TYPE_BY_ENDING: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  svg: "image/svg+xml",
  mp4: "video/mp4",
  "3gp": "video/3gpp",
  amr: "audio/amr",
  mp3: "audio/mpeg",
  txt: "text/plain",
  vcf: "text/x-vcard",
  html: "text/html",
};

function mmsFile(path: string | undefined): MmsFile | null {
  if (path === undefined) return null;
  if (path === "") throw new Error("--mms-file needs the path of the file to attach");
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new Error(`--mms-file ${path}: ${(error as Error).message}`);
  }
  const name = basename(path);
  const ending = name.includes(".") ? name.split(".").pop()!.toLowerCase() : "";
  return { name, contentType: TYPE_BY_ENDING[ending] ?? "application/octet-stream", bytes };
}

export const SIM_SELECTION_MODES = ["OSDefault", "RoundRobin", "Random"] as const;
export type SimSelectionMode = (typeof SIM_SELECTION_MODES)[number];

export interface SimulatedPhoneHandle {
  deviceId: string;
  stop(): Promise<void>;
  /** Loses (false) or regains (true) the phone's internet connection; the radio keeps sending. */
  setNetwork(up: boolean): void;
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
  "inbound-data": { type: "string" },
  missed: { type: "string" },
  mms: { type: "string" },
  "mms-pushes": { type: "string" },
  "mms-file": { type: "string" },
  from: { type: "string" },
  battery: { type: "string" },
  charging: { type: "boolean" },
  "no-connection": { type: "boolean" },
  delay: { type: "string" },
  name: { type: "string" },
  "app-version": { type: "string" },
  poll: { type: "string" },
  hold: { type: "string" },
  channel: { type: "string" },
  ping: { type: "string" },
  order: { type: "string" },
  "sim-selection": { type: "string" },
  sims: { type: "string" },
  passphrase: { type: "string" },
} as const;

/** A flag that takes one of a few words; throws naming the flag and the words otherwise. */
function choiceFlag<T extends string>(raw: string | undefined, flag: string, choices: readonly T[], fallback: T): T {
  if (raw === undefined) return fallback;
  if (!(choices as readonly string[]).includes(raw)) throw new Error(`${flag} needs one of ${choices.join(", ")}, got "${raw}"`);
  return raw as T;
}

function numberFlag(raw: string | undefined, flag: string, fallback: number, min: number, max: number, whole = false): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(value) || value < min || value > max || (whole && !Number.isInteger(value))) {
    throw new Error(`${flag} needs ${whole ? "a whole number" : "a number"} from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/**
 * `--flag value` as `--flag=value` for the flags that take a value, so a value that starts with a
 * dash (a pairing token can: its alphabet has "-") is not read as another flag.
 */
function joinValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].startsWith("--") && !argv[i].includes("=") ? argv[i].slice(2) : null;
    const takesValue = name !== null && (FLAGS as Record<string, { type: string }>)[name]?.type === "string";
    if (takesValue && i + 1 < argv.length) out.push(`${argv[i]}=${argv[++i]}`);
    else out.push(argv[i]);
  }
  return out;
}

/** Reads the simulate-phone flags; throws an Error naming the flag when one is missing or invalid. */
export function parseSimulatePhoneArgs(argv: string[]): SimulatePhoneOptions {
  const { values } = parseArgs({ args: joinValues(argv), options: FLAGS, strict: true, allowPositionals: false });

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
  if (values.missed !== undefined && values.missed === "") throw new Error("--missed needs the text of the SMS waiting in the inbox");
  const inboundData = values["inbound-data"];
  if (inboundData !== undefined && (inboundData === "" || !/^[A-Za-z0-9+/]+={0,2}$/.test(inboundData)))
    throw new Error(`--inbound-data needs the received data SMS's bytes in base64, got "${inboundData}"`);
  if (values.mms !== undefined && values.mms === "") throw new Error("--mms needs the subject of the received MMS");
  if (values.passphrase !== undefined && values.passphrase === "") throw new Error("--passphrase needs the passphrase typed into the app");

  return {
    // The app appends "/device", "/message" … to the base verbatim, so a trailing slash would double.
    server: server.replace(/\/+$/, ""),
    token,
    failRate: numberFlag(values["fail-rate"], "--fail-rate", 0, 0, 1),
    inbound: values.inbound ?? null,
    inboundData: inboundData ?? null,
    missed: values.missed ?? null,
    mms: values.mms ?? null,
    mmsPushes: numberFlag(values["mms-pushes"], "--mms-pushes", 1, 1, 5, true),
    mmsFile: mmsFile(values["mms-file"]),
    from,
    battery: numberFlag(values.battery, "--battery", 80, 0, 100, true),
    charging: values.charging === true,
    connected: values["no-connection"] !== true,
    delayMs: numberFlag(values.delay, "--delay", DEFAULTS.delayMs, 0, 3_600_000, true),
    name,
    appVersion,
    pollSeconds: numberFlag(values.poll, "--poll", DEFAULTS.pollSeconds, 0.01, 86_400),
    holdMs: numberFlag(values.hold, "--hold", 0, 0, 3_600_000, true),
    channel: choiceFlag(values.channel, "--channel", ["sse", "auto"] as const, "sse"),
    pingSeconds: values.ping === undefined ? null : numberFlag(values.ping, "--ping", 0, 0.01, 86_400),
    order: choiceFlag(values.order, "--order", ["lifo", "fifo"] as const, "lifo"),
    simSelection: choiceFlag(values["sim-selection"], "--sim-selection", SIM_SELECTION_MODES, "OSDefault"),
    sims: numberFlag(values.sims, "--sims", 1, 1, 3, true),
    passphrase: values.passphrase ?? null,
    log: (line) => console.log(line),
  };
}
