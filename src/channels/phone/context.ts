// What the paired phone's service is built from, shared by its parts: the pull (pull.ts), the
// event stream (stream.ts), the reports (reports.ts) and service.ts, which composes them.
import type { ChannelCore } from "../types";
import type { Storage } from "../../db/storage";
import type { Clock } from "../../clock";
import type { SecretBox } from "../../lib/secrets";
import type { DeviceStore } from "../../modules/devices/ports";
import type { EventService } from "../../modules/events/service";
import type { NotificationState } from "../../modules/notifications/state";
import type { InboundHook } from "../../modules/threads/inbound";
import type { ThreadStore } from "../../modules/threads/ports";
import type { PhoneEventHub } from "./events";
import type { PhoneRepository } from "./repository";

export interface PhoneServiceDeps {
  storage: Storage;
  repo: PhoneRepository;
  clock: Clock;
  devices: DeviceStore;
  state: NotificationState;
  threads: ThreadStore;
  hub: PhoneEventHub;
  /** Whether another server holds the phone's event stream (several servers on one database). */
  streamElsewhere: (deviceId: number) => Promise<boolean>;
  events: EventService;
  /** What an inbound message goes through before it is announced (the opt-out keywords). */
  onInbound?: InboundHook;
  /** A phone's sender pool's choice of where its waiting messages go when it went offline. */
  rehomeTarget?: ChannelCore["rehomeTarget"];
  /** Seals the phone's signing key and digests one-time codes. */
  secrets: SecretBox;
  /** The server's log (an event Pigeon does not act on is logged, not dropped silently). */
  log?: ChannelCore["log"];
  /** PIGEON_OFFLINE_AFTER in milliseconds. */
  offlineAfterMs?: number;
  /** How long a message without a ttl may wait on an offline phone that nothing can replace. */
  offlineTtlMs: number;
}
