// The events module: what customers subscribe to, written in the unit of work of the change that
// caused it (the outbox). The webhooks module delivers them and serves the subscriptions' routes.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { ModuleDescriptor } from "../../services-type";
import { createEventService } from "./service";

export function createEventsModule(deps: { storage: Storage; clock: Clock }) {
  return { service: createEventService(deps.storage, deps.clock) };
}

export const eventsModule: ModuleDescriptor = { name: "events" };
