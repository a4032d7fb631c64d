// What the simulated phone shares on the wire: its own number and SIM, the app's limits and retry
// counts, the local message record, and small readers for the JSON the server answers.
/** The phone's own number: the recipient of inbound SMS and the sender of outgoing ones. */
export const OWN_NUMBER = "+15550009999";
export const SIM_NUMBER = 1;
/** What OkHttp (the version the app bundles) sends as User-Agent when the caller sets none. */
export const OKHTTP_USER_AGENT = "okhttp/4.10.0";
// Redacted the way the app redacts SIM details before sending them: all but the last 4 characters.
export const SIM_CARD = {
  slotIndex: 0,
  simNumber: SIM_NUMBER,
  phoneNumber: "*******1234",
  carrierName: "***ile",
  iccid: "****************5678",
};

/** The phone's SIM cards as the app reports them (slot i holds SIM i+1); the first is SIM_CARD. */
export function simCards(count: number) {
  return Array.from({ length: count }, (_, i) =>
    i === 0
      ? SIM_CARD
      : { slotIndex: i, simNumber: i + 1, phoneNumber: `*******${1234 + i}`, carrierName: "***ile", iccid: `****************${5678 + i}` },
  );
}

/** The app's Message.PRIORITY_EXPEDITED: from here on its limits and send delays are skipped. */
export const PRIORITY_EXPEDITED = 100;

export const GENERIC_FAILURE = "Send result: RESULT_ERROR_GENERIC_FAILURE";
// The app's own timeout for webhook requests; we use it for every call so a hung server cannot
// hold stop() forever.
export const REQUEST_TIMEOUT_MS = 30_000;
// The app retries a state PATCH up to 10 times, as we do. It retries webhooks up to 15 times on
// WorkManager's minutes-long back-off; a simulator should surface a broken endpoint quickly instead.
export const PATCH_ATTEMPTS = 10;
export const WEBHOOK_ATTEMPTS = 5;

/**
 * A message's state on the phone, as the app's ProcessingState: Pending while it waits in the
 * phone's own queue (cancellable), Processed once handed to the radio, then what the radio says.
 */
export type LocalState = "Pending" | "Processed" | "Sent" | "Delivered" | "Failed" | "Cancelled";
export type WebhookEvent =
  | "sms:received"
  | "sms:data-received"
  | "sms:sent"
  | "sms:delivered"
  | "sms:failed"
  | "sms:cancelled"
  | "mms:received"
  | "mms:downloaded"
  | "system:ping";

/** Whether an app version (e.g. "1.68.0") is `least` or later. */
export function versionAtLeast(version: string, least: string): boolean {
  const have = version.split(".").map((p) => Number.parseInt(p, 10) || 0);
  const want = least.split(".").map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < 3; i++) if ((have[i] ?? 0) !== (want[i] ?? 0)) return (have[i] ?? 0) > (want[i] ?? 0);
  return true;
}

export interface LocalMessage {
  id: string;
  phoneNumbers: string[];
  partsCount: number;
  withDeliveryReport: boolean;
  validUntil: number | null;
  /** The SIM the server asked for (1-3), or null for the phone's own choice (SIM 1 here). */
  simNumber: number | null;
  /** The app's priority, -128..127. */
  priority: number;
  /** A data SMS (the app's MessageContent.Data): its bytes and the port the radio sends them to. */
  data: { bytes: Uint8Array; port: number } | null;
  /**
   * An encrypted data message's payload as pulled (the ciphertext) and its plain port; it is
   * decrypted and base64-decoded into `data` when the message is sent, as the app does.
   */
  sealedData: { value: string; port: number } | null;
  /** Why the app cannot send it at all (no content it knows, bad base64), or null. */
  unsendable: string | null;
  /** The text as the server gave it (ciphertext when encrypted), or null for no text. */
  text: string | null;
  /** isEncrypted: the text and each number are decrypted with the passphrase when it is sent. */
  encrypted: boolean;
  /** Recipients that failed on their own (a number that would not decrypt), with the app's error. */
  failedRecipients: Map<string, string>;
  state: LocalState;
  error: string | null;
  /** When each state was reached, in the app's date form; sent whole with every PATCH. */
  states: Partial<Record<LocalState, string>>;
  /** The PATCHes of one message go out in order, each after the previous one settled. */
  reporting: Promise<void>;
}

export interface Webhook {
  id: string;
  url: string;
}

export type Json = Record<string, unknown>;

export const record = (value: unknown): Json | null =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : null;
export const text = (value: unknown): string | null => (typeof value === "string" ? value : null);
export const finite = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);
export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * The app's Gson writes dates as yyyy-MM-dd'T'HH:mm:ss.SSSXXX; in UTC that is exactly what
 * toISOString gives (XXX prints "Z" for a zero offset).
 */
export const stamp = (ms = Date.now()): string => new Date(ms).toISOString();

export async function failureOf(res: Response): Promise<string> {
  const body = await res.text().catch(() => "");
  let message: string | null = null;
  try {
    message = text(record(JSON.parse(body))?.message);
  } catch {
    // Not JSON: the status alone says enough.
  }
  return `HTTP ${res.status}${message ? ` ${message}` : ""}`;
}

/** 200 ms doubling per attempt, at most 5 s: short enough to watch, long enough to ride out a restart. */
export function backoff(attempt: number): number {
  return Math.min(200 * 2 ** (attempt - 1), 5_000);
}
