// The threads module: its repository (shared with the sending path and the channels, which add
// messages to conversations) and the service that reads conversations, built here once.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { createThreadRepository } from "./repository";
import { createThreadService } from "./service";

export function createThreadsModule(deps: { storage: Storage; clock: Clock }) {
  const repository = createThreadRepository(deps.storage);
  return { repository, view: createThreadService(repository, deps.clock) };
}
