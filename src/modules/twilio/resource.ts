// How Pigeon's messages read in Twilio's terms: SIDs, dates, statuses and error codes.
import type { MessageRow } from "./repository";

/** A message (SM), Messaging Service (MG: a pool), Verify service (VA) or verification (VE). */
export type SidPrefix = "SM" | "MG" | "VA" | "VE";

/** A prefix and a number as 32 hex digits; the number back from one, or null. */
export const sidOf = (prefix: SidPrefix, id: number) => `${prefix}${id.toString(16).padStart(32, "0")}`;
export function idOfSid(prefix: SidPrefix, sid: string): number | null {
  if (!new RegExp(`^${prefix}[0-9a-f]{32}$`).test(sid)) return null;
  const id = Number.parseInt(sid.slice(2), 16);
  return Number.isSafeInteger(id) && id > 0 ? id : null;
}

/** RFC 2822 dates, as Twilio writes them: "Thu, 26 Nov 2026 18:25:27 +0000". */
export function rfc2822(ms: number | null): string | null {
  if (ms === null) return null;
  return new Date(ms).toUTCString().replace("GMT", "+0000");
}

/** What a failed notification's error code reads as in Twilio's `error_code`. */
export function messageErrorCode(code: string | null): number | null {
  if (code === null) return null;
  if (code === "recipient_opted_out") return 21610;
  if (code === "expired" || code === "quota_exhausted") return 30001;
  if (code === "invalid_phone_number") return 21211;
  return 30008;
}

/**
 * A received message's SID: `SM`, then `f` and the thread message's id in 31 hex digits (a sent
 * message's SID starts `SM0…`, so the two never meet).
 */
export const receivedSidOf = (id: number) => `SMf${id.toString(16).padStart(31, "0")}`;
export function idOfReceivedSid(sid: string): number | null {
  if (!/^SMf[0-9a-f]{31}$/.test(sid)) return null;
  const id = Number.parseInt(sid.slice(3), 16);
  return Number.isSafeInteger(id) && id > 0 ? id : null;
}

/** How a channel's address reads in Twilio's fields: SMS numbers bare, the chat-app's as `whatsapp:+…`. */
export const twilioAddress = (channel: string, number: string) => (channel === "sms" ? number : `whatsapp:${number}`);

/** Twilio's status for a notification at `now`. */
export function twilioStatus(m: MessageRow, now: number): string {
  if (m.status === "cancelled") return "canceled";
  // Twilio has no state for a message a person must approve first: "accepted" (taken in, not yet
  // queued) is the nearest; approved, it moves on to queued or scheduled as any other.
  if (m.status === "awaiting_approval") return "accepted";
  if (m.status === "delivered") return "delivered";
  if (m.status === "sent") return "sent";
  if (m.status === "failed") return m.sentAt !== null ? "undelivered" : "failed";
  if (m.stage !== "queued") return "sending";
  return m.scheduleAt !== null && m.scheduleAt > now ? "scheduled" : "queued";
}
