// A data SMS: bytes addressed to an application port, sent as one SMS PDU. Android builds it with
// SmsManager.sendDataMessage, whose PDU carries at most 140 octets of user data; the 16-bit port
// header takes 7 of them (its length octet, then the element's id, length and four port octets),
// which leaves 133 for the payload. Android refuses a longer one, so Pigeon does too, before it
// stores anything.

/** A data SMS's payload, base64 (standard alphabet, padded), and the port it is addressed to. */
export interface DataMessage {
  data: string;
  port: number;
}

/** The most payload octets one data SMS carries (140 of user data, less the 7 of the port header). */
export const DATA_SMS_MAX_OCTETS = 133;

/** The longest padded base64 of a payload: four characters for every three bytes begun (180 for 133). */
export const DATA_SMS_MAX_BASE64 = 4 * Math.ceil(DATA_SMS_MAX_OCTETS / 3);

/** The ports a data SMS may name: 16-bit, 0 excepted (the app's server refuses it too). */
export const DATA_PORT_MIN = 1;
export const DATA_PORT_MAX = 65535;

/**
 * The bytes of a base64 string in the standard alphabet (RFC 4648 section 4), padding optional,
 * no whitespace; null when it is not one (the URL-safe alphabet, stray characters, a bad length,
 * padding in the middle).
 */
export function decodeBase64(value: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return null;
  const bare = value.replace(/=+$/, "");
  if (bare.length % 4 === 1) return null;
  // Padding, when given, fills the last group to four characters exactly.
  const padding = value.length - bare.length;
  if (padding > 0 && padding !== 4 - (bare.length % 4)) return null;
  return new Uint8Array(Buffer.from(bare, "base64"));
}

/** Bytes as padded standard base64: how Pigeon stores and hands on a payload. */
export const encodeBase64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64");

/**
 * A data SMS in words, where text stands for it (a thread's preview, a rule's forward): its port
 * and payload size, `data SMS to port 53739, 4 bytes`.
 */
export function describeDataSms(m: DataMessage): string {
  const bytes = decodeBase64(m.data)?.length ?? 0;
  return `data SMS to port ${m.port}, ${bytes} byte${bytes === 1 ? "" : "s"}`;
}
