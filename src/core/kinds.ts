// The device kinds and API channels, written once. The database schema, the API models and the
// repositories take their unions from here; each kind is one channel in the CHANNELS list (a test
// keeps the two in step), whose traits (below) the shared modules read. Kept apart from index.ts
// and types.ts so that the schema and those modules load no channel.
import type { TSchema } from "elysia";
export const DEVICE_KINDS = ["sms", "cloud", "chatapp"] as const;
export type DeviceKind = (typeof DEVICE_KINDS)[number];
/**
 * A paired phone's device kind. Its value is "sms" (the specification's word, kept in the API and
 * the database); the code says "phone" and names the kind through this constant, so that "sms" in
 * the code is the delivery type.
 */
export const PHONE_KIND = "sms" satisfies DeviceKind;
/** What a registration without a kind gets: a paired phone, the spec's original device. */
export const DEFAULT_DEVICE_KIND: DeviceKind = PHONE_KIND;
export const DEVICE_KINDS_DESCRIPTION =
  "sms: a paired phone; cloud: a cloud number (uses credits); chatapp: a business number on the chat-app platform";

/** The channel a send names (delivery_type): the kinds of device that can carry it are its channels. */
export const DELIVERY_TYPES = ["sms", "chatapp"] as const;
export type DeliveryType = (typeof DELIVERY_TYPES)[number];

/** What a channel tells the shared send path about the devices of its kind. */
export interface ChannelTraits {
  /** The device kind, which is also the notification's route. */
  kind: DeviceKind;
  /** The API channel (delivery_type) its devices carry. */
  deliveryType: DeliveryType;
  /** The worker hands its notifications over through its adapter (else the device fetches them). */
  dispatched?: boolean;
  /** An immediate send needs the device online (a paired phone). */
  needsPresence?: boolean;
  /** Each segment costs one credit. */
  charges?: boolean;
  /** Pigeon chooses the id the channel knows a message by (the phone downloads it with that id). */
  choosesExternalId?: boolean;
  /** send_limit_per_minute when registration names none. */
  defaultSendLimit: number;
  /** Paced per second rather than per minute (a platform whose limit is a rate). */
  pacedPerSecond?: boolean;
  /** Registration issues a device token (the companion app authenticates with it). */
  issuesToken?: boolean;
  /** The settings a device of this kind is registered with, under `config.key` in the register body. */
  config?: ChannelConfig;
  /**
   * Failure codes of its own after which no other route can help (the recipient stopped the
   * messages at the provider): a failover send fails there instead of moving on.
   */
  finalFailures?: readonly string[];
  /** The provider's own code for a template of its delivery type that is not active, by the template's status. */
  inactiveTemplateCodes?: Readonly<Record<string, number>>;
  /**
   * The error code of its send checks after which a failover route sends the send's fallback
   * template instead of the text (a closed conversation window).
   */
  templateFallbackOn?: string;
  /** Its conversations are kept per device (each business number has its own), not per workspace. */
  threadPerDevice?: boolean;
  /** Its devices send a data SMS (bytes to a port) as well as text: a paired phone's app does. */
  sendsDataSms?: boolean;
}

/** A channel's device settings: the schema the API takes and what is stored in device.config. */
export interface ChannelConfig {
  key: string;
  schema: TSchema;
  /** A register-body item using it, for the API docs. */
  example: Record<string, unknown>;
  /** Checks the input (throwing AppError) and returns what is stored, and what it tells about the device. */
  fromInput(
    input: unknown,
    field: string,
  ): {
    stored: object;
    phoneNumber: string | null;
    /** An address Pigeon will call, checked to be public at registration (field names it in errors). */
    outbound: { url: string; field: string } | null;
  };
}

/**
 * The names a send's `routes` (failover order) uses for each device kind: the paired phone is
 * "phone" there ("sms" is taken too, as the kind's own name).
 */
export const ROUTE_NAMES: Record<DeviceKind, string> = { sms: "phone", cloud: "cloud", chatapp: "chatapp" };
export const ROUTE_NAME_LIST = [...DEVICE_KINDS.map((k) => ROUTE_NAMES[k]), ...DEVICE_KINDS.filter((k) => ROUTE_NAMES[k] !== k)];

/** The device kind a route name stands for, or null. */
export function kindOfRoute(name: string): DeviceKind | null {
  const key = name.trim().toLowerCase();
  return DEVICE_KINDS.find((k) => k === key || ROUTE_NAMES[k] === key) ?? null;
}

/** What carries each delivery type, in words, for messages about a send that names no route. */
export const DELIVERY_DESCRIPTION: Record<DeliveryType, string> = { sms: "SMS (phone or cloud number) device", chatapp: "chat-app device" };

/** What each kind of device is, in words, for messages about a route. */
export const ROUTE_DESCRIPTION: Record<DeviceKind, string> = { sms: "paired phone", cloud: "cloud number", chatapp: "chat-app number" };
