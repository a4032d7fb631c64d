// The templates module: its repository (shared with the sending path and the chat-app channel,
// which syncs the platform's templates) and its service, built here once.
import type { Clock } from "../../clock";
import type { Db } from "../../db/client";
import { createTemplateRepository } from "./repository";
import { createTemplateService } from "./service";

export function createTemplatesModule(deps: { db: Db; clock: Clock }) {
  const repository = createTemplateRepository(deps.db);
  return { repository, service: createTemplateService(repository, deps.clock) };
}
