// What a channel reports about a message it carries, and the one place such a report becomes
// state. Each channel maps its own wire format (the provider's status callback, the chat-app
// platform's status webhook, the phone's PATCH /message and webhooks) to a Report and calls
// applyReport, so the rules are written once: state only moves forward (transition() refuses the
// rest), a delivery implies the message was sent first, and a failure is logged with its reason
// and refunded (transition() does both).
import type { NotificationState } from "./state";

export type Report =
  | {
      status: "sent";
      at?: number;
      detail: string;
    }
  | {
      status: "delivered";
      at?: number;
      /** When it was sent, if the channel says; else the delivery time stands in for it. */
      sentAt?: number;
      detail: string;
    }
  | {
      status: "failed";
      at?: number;
      errorCode: string;
      reason: string;
      detail: string;
    }
  | {
      status: "cancelled";
      reason: string;
      detail: string;
    };

export interface ReportOptions {
  /**
   * The report is the truth even about a message cancelled while the device held it (a paired
   * phone that already sent it). Delivery itself never reopens: the sent before it does.
   */
  overridesCancel?: boolean;
}

/** Applies one report to a notification; true when its state changed. */
export async function applyReport(
  state: NotificationState,
  notificationId: number,
  report: Report,
  opts: ReportOptions = {},
): Promise<boolean> {
  const overridesCancel = opts.overridesCancel === true;
  switch (report.status) {
    case "sent":
      return state.transition(notificationId, "sent", { at: report.at, detail: report.detail, overridesCancel });
    case "delivered": {
      // A channel may skip straight to delivered; in our states sent comes first.
      const sent = await state.transition(notificationId, "sent", {
        at: report.sentAt ?? report.at,
        detail: report.detail,
        overridesCancel,
      });
      const delivered = await state.transition(notificationId, "delivered", { at: report.at, detail: report.detail });
      return sent || delivered;
    }
    case "failed":
      return state.transition(notificationId, "failed", {
        at: report.at,
        errorCode: report.errorCode,
        reason: report.reason,
        detail: report.detail,
        overridesCancel,
      });
    case "cancelled":
      return state.transition(notificationId, "cancelled", { reason: report.reason, detail: report.detail });
  }
}
