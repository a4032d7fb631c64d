// The device kinds and API channels, written once. The database schema, the API models and the
// repositories take their unions from here; each kind is one channel in the CHANNELS list (a test
// keeps the two in step). Kept apart from index.ts so the schema does not load every channel.
export const DEVICE_KINDS = ["sms", "cloud", "chatapp"] as const;
export type DeviceKind = (typeof DEVICE_KINDS)[number];
/** What a registration without a kind gets: a paired phone, the spec's original device. */
export const DEFAULT_DEVICE_KIND: DeviceKind = "sms";
export const DEVICE_KINDS_DESCRIPTION = "sms: a paired phone; cloud: a cloud number (uses credits); chatapp: a business number on the chat-app platform";

/** The channel a send names (delivery_type): the kinds of device that can carry it are its channels. */
export const DELIVERY_TYPES = ["sms", "chatapp"] as const;
export type DeliveryType = (typeof DELIVERY_TYPES)[number];
