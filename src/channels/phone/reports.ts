// What a paired phone reports of its messages (PATCH /mobile/v1/message, or its status
// webhooks), applied to their notifications.
import type { DeviceRow } from "../../modules/devices/model";
import { applyReport } from "../../modules/notifications/reports";
import type { PhoneServiceDeps } from "./context";
import type { PatchItem } from "./protocol";

type PhoneState = "Pending" | "Processed" | "Sent" | "Delivered" | "Failed" | "Cancelled" | "Cancelling";

export function createPhoneReports(deps: PhoneServiceDeps) {
  const { storage, repo, clock, state } = deps;

  function reasonOf(item: PatchItem): { code: string; reason: string } {
    const error = item.recipients?.find((r) => r.error)?.error ?? null;
    const code = /RESULT_ERROR_[A-Z_]+/.exec(error ?? "")?.[0] ?? (error === "TTL expired" ? "expired" : "carrier_rejected");
    return { code, reason: error ?? "the phone reported the message failed" };
  }

  /** Applies one phone report (PATCH /message item or a status webhook) to its notification. */
  async function applyState(device: DeviceRow, phoneId: string, rawState: string, item: PatchItem, via: string): Promise<void> {
    const n = await repo.byPhoneId(phoneId, device.id);
    if (!n) return;
    // Pending is what the app reports of a message it downloaded again while it still holds it in
    // its own queue (GatewayService.processMessage → SendStateWorker): it has not taken it up, so
    // nothing changes, and the message can still be cancelled.
    if (rawState === "Pending") return;
    const s = rawState as PhoneState;
    const at = (name: string) => {
      const t = Date.parse(item.states?.[name] ?? "");
      return Number.isNaN(t) ? undefined : t;
    };
    const detail = `${via}: ${s}`;
    switch (s) {
      case "Processed":
        if (await repo.markProcessed(n.id, clock.now()))
          await state.log(n.id, "processed", {
            status: "pending",
            detail:
              n.status === "pending" && n.cancelPending
                ? `${detail} (the phone had taken it up before the cancel reached it: it is sending it)`
                : `${detail} (the phone has it)`,
            at: at("Processed"),
          });
        return;
      // What the phone did is the truth, even about a message cancelled while it held it.
      case "Sent":
        await applyReport(state, n.id, { status: "sent", at: at("Sent"), detail }, { overridesCancel: true });
        return;
      case "Delivered":
        await applyReport(state, n.id, { status: "delivered", at: at("Delivered"), sentAt: at("Sent"), detail }, { overridesCancel: true });
        return;
      case "Failed": {
        const { code, reason } = reasonOf(item);
        await applyReport(
          state,
          n.id,
          { status: "failed", at: at("Failed"), errorCode: code, reason, detail: `${detail}: ${reason}` },
          { overridesCancel: true },
        );
        return;
      }
      case "Cancelled":
        if (n.status === "cancelled") {
          if (await repo.clearCancelPending(n.id, clock.now()))
            await state.log(n.id, "cancel_confirmed", { status: "cancelled", detail: `${detail} (the phone dropped it)` });
        } else if (n.status === "pending" && n.cancelPending) {
          // The answer to a cancel asked of the phone: it dropped the message; cancelled and refunded now.
          await applyReport(state, n.id, {
            status: "cancelled",
            reason: "cancelled by API request",
            detail: `${detail} (the phone dropped it)`,
          });
        } else {
          await applyReport(state, n.id, { status: "cancelled", reason: "cancelled on the phone", detail });
        }
        return;
    }
  }

  async function patchMessages(device: DeviceRow, items: PatchItem[]): Promise<void> {
    await storage.transaction(async () => {
      for (const item of items) await applyState(device, item.id, item.state, item, "phone report");
    });
  }

  return { applyState, patchMessages };
}
