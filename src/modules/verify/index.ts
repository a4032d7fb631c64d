// The Verify module: its repository and its service, built here once, and the choice of the
// chat-app template a code goes in (templates.ts), from the workspace's templates.
import { createVerifyRepository } from "./repository";
import { createVerifyService, type VerifyDeps } from "./service";
import { authTemplate, type VerifyTemplates } from "./templates";

export function createVerifyModule(deps: Omit<VerifyDeps, "repo" | "authTemplate" | "templateExists"> & { templates: VerifyTemplates }) {
  const { templates, ...rest } = deps;
  return createVerifyService({
    ...rest,
    repo: createVerifyRepository(deps.storage),
    authTemplate: (workspaceId, id) => authTemplate(templates, workspaceId, id),
    templateExists: async (workspaceId, id) => (await templates.get(workspaceId, id)) !== null,
  });
}
