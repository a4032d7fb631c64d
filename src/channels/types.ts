// The one interface every channel adapter implements: hand a notification over, and (after an
// attempt whose outcome is unknown) ask the channel whether it already has it.
import type { DeviceRow } from "../modules/devices/repository";
import type { NotificationRecord } from "../modules/notifications/state";

export type DispatchOutcome =
  /** The channel took it: the notification is sent, with the channel's id for it. */
  | { kind: "accepted"; externalId: string; detail?: string }
  /** Transient (network, overload, the provider's rate limit): retry with backoff. */
  | { kind: "retryable"; code: string; reason: string; reconcile?: boolean }
  /** The carrier or device asks us to slow down: try again next tick, not counted as an attempt. */
  | { kind: "throttled"; reason: string }
  /** Will never work as it is: fail now. `block` marks the device blocked (chat-app account problems). */
  | { kind: "permanent"; code: string; reason: string; block?: boolean }
  /** Cut off mid-call (timeout): the channel may or may not have it; ask before sending again. */
  | { kind: "uncertain"; reason: string };

export interface ChannelAdapter {
  send(n: NotificationRecord, device: DeviceRow): Promise<DispatchOutcome>;
  /**
   * After an uncertain attempt: the channel's ids of every message it holds that could be this one
   * (same recipient and text, in the attempt's time window); empty if it surely has none. Several
   * identical notifications may match the same messages, so the dispatcher claims one that no
   * other notification owns. Throws when it cannot tell (the dispatcher then waits and asks again).
   */
  reconcile?(n: NotificationRecord, device: DeviceRow): Promise<string[]>;
}
