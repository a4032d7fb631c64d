// The threads module: its repository (shared with the sending path and the channels, which add
// messages to conversations) and the service that reads conversations, built here once.
import type { Database } from "bun:sqlite";
import type { Clock } from "../../clock";
import { createThreadRepository } from "./repository";
import { createThreadService } from "./service";

export function createThreadsModule(deps: { sqlite: Database; clock: Clock }) {
  const repository = createThreadRepository(deps.sqlite);
  return { repository, view: createThreadService(repository, deps.clock) };
}
