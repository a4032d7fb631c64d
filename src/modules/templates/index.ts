// The templates module: its repository (shared with the sending path and the chat-app channel,
// which syncs the platform's templates) and its service, built here once.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { createTemplateRepository } from "./repository";
import { createTemplateService } from "./service";
import type { ModuleDescriptor } from "../descriptor";
import { templateRoutes } from "./routes";

export function createTemplatesModule(deps: { storage: Storage; clock: Clock }) {
  const repository = createTemplateRepository(deps.storage);
  return { repository, service: createTemplateService(deps.storage, repository, deps.clock) };
}

export const templatesModule: ModuleDescriptor = { name: "templates", routes: (s) => ({ api: [templateRoutes(s)] }) };
