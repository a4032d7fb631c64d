// What the cloud channel's own routes and the worker use of it: the provider adapter, and the
// lookups its status callback makes.
import type { DeviceRow } from "../../modules/devices/model";
import type { NotificationRecord } from "../../modules/notifications/state";
import type { ChannelAdapter } from "../types";

/** The cloud channel's service: its adapter, and what its status callback looks up. */
export interface CloudService {
  adapter: ChannelAdapter;
  /** A cloud number by id, even deleted (a late callback still names it). */
  deviceOf(id: number): Promise<DeviceRow | null>;
  /** The notification a provider message id belongs to on that number. */
  notificationOf(providerId: string, deviceId: number): Promise<NotificationRecord | null>;
}
