// What the companion app's protocol fixes and every part of the phone channel shares: the webhook
// events and path it is told to call, the version that understands cancelling, the shape of its
// state reports, and its error shape.
import { AppError } from "../../core/errors";
import { iso } from "../../lib/time";
import type { DeviceRow } from "../../modules/devices/model";

/** Apps before this version have no `state` field and would send a Cancelling message. */
const CANCEL_AWARE = [1, 67, 0];

/** The first app version that re-posts its inbox on MessagesExportRequested (CHANGELOG 1.28.0). */
export const INBOX_EXPORT_SINCE = "1.28.0";

/**
 * The events the phone is asked to post (its GET /webhooks): the app posts an event only to the
 * webhooks registered for it (WebHooksService.emit), one event per request.
 */
export const PHONE_WEBHOOK_EVENTS = [
  "sms:received",
  "sms:data-received",
  "sms:sent",
  "sms:delivered",
  "sms:failed",
  "mms:received",
  "mms:downloaded",
  "system:ping",
  "sms:cancelled",
  "app:started",
] as const;
export const PHONE_WEBHOOK_PATH = "/mobile/v1/webhook";

/**
 * The one port the app receives data SMS on (modules/receiver/MessagesReceiver.kt registers its
 * DATA_SMS_RECEIVED filter for it alone); its sms:data-received names no port, so it is this one.
 */
export const APP_DATA_PORT = 53739;

/** The app version from `User-Agent: me.capcom.smsgateway/1.68.0`, or null. */
export function appVersionOf(userAgent: string | null): string | null {
  return /me\.capcom\.smsgateway\/(\d+\.\d+\.\d+)/.exec(userAgent ?? "")?.[1] ?? null;
}

/** Whether an app version is `least` or later; an unknown version is not. */
export function atLeast(version: string | null, least: string): boolean {
  if (!version) return false;
  const parts = version.split(".").map(Number);
  const want = least.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    if (parts[i] !== want[i]) return parts[i] > want[i];
  }
  return true;
}

export function isCancelAware(version: string | null): boolean {
  return atLeast(version, CANCEL_AWARE.join("."));
}

export interface PatchItem {
  id: string;
  state: string;
  recipients?: { phoneNumber?: string; state?: string; error?: string | null }[];
  states?: Record<string, string>;
}

export function deviceEventData(device: DeviceRow, now: number) {
  return { device_id: device.id, name: device.name, kind: device.kind, last_sync: iso(device.lastSeenAt ?? now) };
}

/** An error in the app's own `{message, code}` shape (the foundation formats /mobile errors so). */
export const unauthorized = (message = "Unauthorized") => new AppError("unauthorized", message);
