// The devices module: its repository (shared with the channels and the worker, which move
// messages through devices) and its service, built here once.
import type { Clock } from "../../clock";
import type { Db } from "../../db/client";
import type { SecretBox } from "../../lib/secrets";
import type { UsageRepository } from "../usage/repository";
import { createDeviceRepository } from "./repository";
import { createDeviceService } from "./service";

type ServiceArgs = Parameters<typeof createDeviceService>;

export function createDevicesModule(deps: {
  db: Db;
  secrets: SecretBox;
  clock: Clock;
  usage: UsageRepository;
  hooks: ServiceArgs[3];
  options: ServiceArgs[4];
}) {
  const repository = createDeviceRepository(deps.db, deps.secrets);
  return { repository, service: createDeviceService(repository, deps.usage, deps.clock, deps.hooks, deps.options) };
}
