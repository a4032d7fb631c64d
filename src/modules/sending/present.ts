// How a send's results read in a reply, shared by the SMS and chat-app send routes. Each reply is
// a plain status and body, so src/http/idempotency can keep it for a repeat.
import { ok } from "../../http/envelope";
import type { AppError } from "../../http/errors";
import type { ItemResult, Prepared } from "./service";

export const SCHEDULED = "Notification scheduled successfully";

export function sendResult(r: ItemResult & { ok: true }) {
  const p = r.accepted.prepared;
  return {
    notification_id: r.accepted.notificationId,
    template_id: p.template?.id ?? null,
    template_vars: p.templateVars,
    message: p.message,
    scheduled_for: scheduledFor(p),
  };
}

/** The reply's `scheduled_for`: the instant a scheduled message is due, or null for "now". */
export function scheduledFor(p: Prepared): string | null {
  return p.scheduleAt === null ? null : new Date(p.scheduleAt).toISOString();
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
    body: ok({ total: results.length, accepted, failed: results.length - accepted, results: items }, `${accepted} of ${results.length} notifications scheduled`),
  };
}
