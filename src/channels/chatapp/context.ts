// What the chat-app channel's parts share: their dependencies, the repository of its own tables and
// columns (repository.ts), and the few helpers every part needs (its live numbers, a number's settings).
import type { Clock } from "../../clock";
import type { Config } from "../../config";
import type { Storage } from "../../db/storage";
import { AppError } from "../../core/errors";
import type { LogFn } from "../../lib/log";
import type { DeviceStore } from "../../modules/devices/ports";
import type { DeviceRow } from "../../modules/devices/model";
import type { EventService } from "../../modules/events/service";
import type { NotificationState } from "../../modules/notifications/state";
import type { TemplateStore } from "../../modules/templates/ports";
import type { InboundHook } from "../../modules/threads/inbound";
import type { ThreadStore } from "../../modules/threads/ports";
import { chatappConfigOf, type ChatappConfig } from "./adapter";
import type { GraphClient } from "./graph";
import { createChatappRepository } from "./repository";

export interface ChatappDeps {
  storage: Storage;
  clock: Clock;
  config: Config;
  graph: GraphClient;
  devices: DeviceStore;
  templates: TemplateStore;
  threads: ThreadStore;
  state: NotificationState;
  events: EventService;
  /** What an inbound message goes through before it is announced (the opt-out keywords). */
  onInbound?: InboundHook;
  log: LogFn;
  /** The HTTP client for header-media probes (the one the channels use). */
  fetch?: typeof fetch;
}

export function createChatappContext(deps: ChatappDeps) {
  const { storage, devices } = deps;
  const repo = createChatappRepository(storage);

  const liveDevices = async (workspaceId: number) => (await devices.all(workspaceId, true)).filter((d) => d.kind === "chatapp");
  const configOf = (device: DeviceRow): ChatappConfig => {
    const c = chatappConfigOf(device.config);
    if (!c) throw new AppError("invalid_device", `device ${device.id} is not a connected chat-app number`, { device_id: device.id });
    return c;
  };
  /** A live number of a business account, whose token can speak for it. */
  const numberOfAccount = async (workspaceId: number, businessAccountId: string) =>
    (await liveDevices(workspaceId)).find((d) => chatappConfigOf(d.config)?.businessAccountId === businessAccountId);

  return { ...deps, repo, liveDevices, configOf, numberOfAccount };
}

export type ChatappContext = ReturnType<typeof createChatappContext>;
