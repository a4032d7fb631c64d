// What the parts of the sending service share: its deps, each channel's traits and the kinds of
// device that carry each delivery type, the checks channels add, and the listeners of what a send
// stores.
import { DELIVERY_TYPES, type DeliveryType, type DeviceKind } from "../../core/kinds";
import type { DeviceRow } from "../devices/model";
import { isOnline as isDeviceOnline } from "../devices/service";
import type { Accepted, ChannelCheck, SendingDeps } from "./types";

export function createSendingContext(deps: SendingDeps) {
  const channelChecks = Object.fromEntries(DELIVERY_TYPES.map((d) => [d, [] as ChannelCheck[]])) as Record<DeliveryType, ChannelCheck[]>;
  /** The kinds of device that carry each delivery type, and each kind's traits. */
  const CARRIERS = Object.fromEntries(
    DELIVERY_TYPES.map((d) => [d, deps.channels.filter((c) => c.deliveryType === d).map((c) => c.kind)]),
  ) as Record<DeliveryType, DeviceKind[]>;
  const traits = new Map(deps.channels.map((c) => [c.kind, c]));
  const needsPresence = (device: DeviceRow) => traits.get(device.kind)?.needsPresence === true;
  const isOnline = (device: DeviceRow, now: number) => isDeviceOnline(device, now, deps.offlineAfterMs);
  const acceptedListeners: ((accepted: Accepted[]) => void | Promise<void>)[] = [];
  const storeListeners: ((accepted: Accepted[]) => Promise<void>)[] = [];
  /** After commit: every listener hears of what was stored; one that fails is reported and does not stop the others. */
  const announceAccepted = (accepted: Accepted[]) => {
    for (const listener of acceptedListeners) {
      Promise.resolve()
        .then(() => listener(accepted))
        .catch((error: unknown) => (deps.log ?? console.error)("an accept listener failed", error));
    }
  };
  /** Each delivery type's carriers' code for a template that is not active, by its status, if they have one. */
  const inactiveTemplateCodes = Object.fromEntries(
    DELIVERY_TYPES.map((d) => [d, deps.channels.find((c) => c.deliveryType === d && c.inactiveTemplateCodes)?.inactiveTemplateCodes]),
  ) as Record<DeliveryType, Readonly<Record<string, number>> | undefined>;
  /** Whether a check's refusal with `code` sends a failover route's fallback template instead, on a delivery type. */
  const fallsBackOn = (channel: DeliveryType, code: string) =>
    deps.channels.some((c) => c.deliveryType === channel && c.templateFallbackOn === code);
  /** The delivery type of the fallback template a send may name (chatapp_template_id): the one whose carriers fall back on it. */
  const templateFallbackType = deps.channels.find((c) => c.templateFallbackOn !== undefined)?.deliveryType;
  /** Whether a device's channel keeps a conversation per device (see ChannelTraits.threadPerDevice). */
  const threadPerDevice = (device: DeviceRow) => traits.get(device.kind)?.threadPerDevice === true;
  return {
    deps,
    channelChecks,
    CARRIERS,
    traits,
    needsPresence,
    isOnline,
    inactiveTemplateCodes,
    fallsBackOn,
    templateFallbackType,
    threadPerDevice,
    acceptedListeners,
    storeListeners,
    announceAccepted,
  };
}

export type SendingContext = ReturnType<typeof createSendingContext>;
