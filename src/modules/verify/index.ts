// The Verify module: its repository and its service, built here once, and the choice of the
// chat-app template a code goes in (templates.ts), from the workspace's templates.
import { createVerifyRepository } from "./repository";
import { createVerifyService, type VerifyDeps } from "./service";
import { authTemplate, type VerifyTemplates } from "./templates";
import type { ModuleDescriptor } from "../../services-type";
import { NOTIFICATION_HOOKS } from "../notifications/model";
import { verifyRoutes } from "./routes";
import { twilioVerifyRoutes } from "./twilio-routes";

export function createVerifyModule(deps: Omit<VerifyDeps, "repo" | "authTemplate" | "templateExists"> & { templates: VerifyTemplates }) {
  const { templates, ...rest } = deps;
  return createVerifyService({
    ...rest,
    repo: createVerifyRepository(deps.storage),
    authTemplate: (workspaceId, id) => authTemplate(templates, workspaceId, id),
    templateExists: async (workspaceId, id) => (await templates.get(workspaceId, id)) !== null,
  });
}

export const verifyModule: ModuleDescriptor = {
  name: "verify",
  routes: (s) => ({ foreign: [twilioVerifyRoutes(s)], api: [verifyRoutes(s)] }),
  // Verify's sends and finished verifications past any limit's or check's need.
  tasks: (s) => [{ name: "verify:prune", everySeconds: 3600, run: () => s.verify.prune() }],
  listeners: (s) => ({
    // A one-time code's message shows the code masked once its channel has taken it.
    transitions: (changes) =>
      s.verify.maskTaken(
        changes.filter(({ before }) => (before.hooks & NOTIFICATION_HOOKS.oneTimeCode) !== 0).map(({ before }) => before.id),
      ),
  }),
};
