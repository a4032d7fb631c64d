// How a send's results read in a reply, shared by the SMS and chat-app send routes. Each reply is
// a plain status and body, so src/http/idempotency can keep it for a repeat.
import { ok } from "../../http/envelope";
import { ROUTE_NAMES } from "../../core/kinds";
import type { AppError } from "../../core/errors";
import { countSegments, ucs2Characters } from "../../lib/segments";
import type { ItemResult, Prepared } from "./types";

export const SCHEDULED = "Notification scheduled successfully";

export function sendResult(r: ItemResult & { ok: true }) {
  const p = r.accepted.prepared;
  return {
    notification_id: r.accepted.notificationId,
    template_id: p.template?.id ?? null,
    template_vars: p.templateVars,
    message: p.message,
    ...(p.dataMessage ? { data_message: p.dataMessage } : {}),
    scheduled_for: scheduledFor(p),
    // Only a send that waits for a person says so; any other is pending or scheduled, as before.
    ...(p.awaitingApproval ? { status: "awaiting_approval" as const } : {}),
    ...safeSendExtras(p),
  };
}

/** The reply's `scheduled_for`: the instant a scheduled message is due, or null for "now". */
export function scheduledFor(p: Prepared): string | null {
  return p.scheduleAt === null ? null : new Date(p.scheduleAt).toISOString();
}

/** Where the message goes and when: its route and device, quiet hours, the routes skipped. */
export function routeResult(p: Prepared) {
  return {
    scheduled_at: scheduledFor(p),
    route: p.device.kind,
    device_id: p.device.id,
    quiet_hours: p.quietHold ? { until: new Date(p.quietHold.until).toISOString(), timezone: p.quietHold.zone } : null,
    skipped_routes: p.skipped.map((x) => ({
      route: ROUTE_NAMES[x.route],
      error_code: x.error.publicCode ?? x.error.code,
      message: x.error.message,
    })),
  };
}

/**
 * What a send reply adds to the spec's fields, only when it says something: the quiet-hours hold
 * (`scheduled_at`, `quiet_hours`) and, on a failover order, the route taken and the ones skipped.
 */
function safeSendExtras(p: Prepared) {
  const r = routeResult(p);
  return {
    ...(p.quietHold ? { scheduled_at: r.scheduled_at, quiet_hours: r.quiet_hours } : {}),
    ...(p.routes ? { route: r.route, device_id: r.device_id, skipped_routes: r.skipped_routes } : {}),
  };
}

/** The overview form's reply: the envelope, with success and messageId repeated at the top level. */
export function overviewReply(results: ItemResult[]) {
  const [r] = results;
  if (!r.ok) throw r.error;
  const messageId = String(r.accepted.notificationId);
  return {
    status: 200,
    body: { ...ok({ success: true, messageId, scheduled_for: scheduledFor(r.accepted.prepared) }, SCHEDULED), success: true, messageId },
  };
}

/** The reply for a single send: the stored notification, or the item's error. */
export function singleReply(results: ItemResult[]) {
  const [r] = results;
  if (!r.ok) throw r.error;
  return { status: 200, body: ok(sendResult(r), SCHEDULED) };
}

function itemError(index: number, error: AppError) {
  return {
    index,
    ok: false,
    error: { status_id: error.status, error_code: error.publicCode ?? error.code, message: error.message, ...error.data },
  };
}

/** The bulk reply: 200 with every item's notification or error, in order. */
export function bulkReply(results: ItemResult[]) {
  const items = results.map((r, index) => (r.ok ? { index, ok: true, ...sendResult(r) } : itemError(index, r.error)));
  const accepted = results.filter((r) => r.ok).length;
  return {
    status: 200,
    body: ok(
      { total: results.length, accepted, failed: results.length - accepted, results: items },
      `${accepted} of ${results.length} notifications scheduled`,
    ),
  };
}

/** A preview's answer: the text's encoding and segments, where it would go, and the refusal a send would meet. */
export function previewReply(
  result: { prepared: Prepared | null; refusal: AppError | null },
  fallbackText: string | null,
  balance: number,
  encrypted = false,
) {
  const p = result.prepared;
  // A data SMS has no text to count: one PDU, no encoding. Ciphertext says nothing of the text's
  // length or alphabet: no count is made of it.
  const text = p?.dataMessage ? null : (p?.message ?? fallbackText);
  const info = text === null || encrypted ? null : countSegments(text);
  const sms = p === null || p.channel === "sms";
  const refusal = result.refusal;
  const optedOut =
    refusal?.code === "recipient_opted_out"
      ? (refusal.data as { opted_out_at: string | null; source: string; reason: string | null })
      : null;
  const route = p ? routeResult(p) : null;
  return {
    would: refusal
      ? ("refuse" as const)
      : p!.quietHold
        ? ("hold" as const)
        : p!.scheduleAt !== null
          ? ("schedule" as const)
          : ("send" as const),
    message: text,
    characters: text === null || encrypted ? null : [...text].length,
    encoding: sms && info ? info.encoding : null,
    ucs2_characters: sms && info && text !== null ? ucs2Characters(text) : [],
    segments: p?.dataMessage ? 1 : info ? (sms ? info.segments : 1) : null,
    route: route?.route ?? null,
    device_id: route?.device_id ?? null,
    cost: p?.cost ?? null,
    balance,
    scheduled_at: route?.scheduled_at ?? null,
    quiet_hours: route?.quiet_hours ?? null,
    opted_out: optedOut ? { opted_out_at: optedOut.opted_out_at, source: optedOut.source, reason: optedOut.reason } : null,
    skipped_routes: route?.skipped_routes ?? [],
    error: refusal
      ? { status_id: refusal.status, error_code: refusal.publicCode ?? refusal.code, message: refusal.message, ...refusal.data }
      : null,
    encrypted,
  };
}
