// The devices module: its repository (shared with the channels and the worker, which move
// messages through devices) and its service, built here once.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { SecretBox } from "../../lib/secrets";
import type { UsageStore } from "../notifications/ports";
import { createDeviceRepository } from "./repository";
import { createDeviceService } from "./service";
import type { ModuleDescriptor } from "../../services-type";
import { deviceRoutes } from "./routes";

type ServiceArgs = Parameters<typeof createDeviceService>;

export function createDevicesModule(deps: {
  storage: Storage;
  secrets: SecretBox;
  clock: Clock;
  usage: UsageStore;
  hooks: ServiceArgs[4];
  options: ServiceArgs[5];
}) {
  const repository = createDeviceRepository(deps.storage, deps.secrets);
  return { repository, service: createDeviceService(deps.storage, repository, deps.usage, deps.clock, deps.hooks, deps.options) };
}

export const devicesModule: ModuleDescriptor = { name: "devices", routes: (s) => ({ api: [deviceRoutes(s)] }) };
