// The chat-app channel around the sender, put together from its parts: linking business numbers
// (linking.ts), keeping their templates in step (templates.ts), the rules a send must pass and the
// media probes (send-rules.ts), blocking and unblocking numbers (blocking.ts), and the platform's
// webhooks (webhooks.ts). Their shared statements and helpers are in context.ts.
import { createBlocking } from "./blocking";
import { createChatappContext, type ChatappDeps } from "./context";
import { createLinking } from "./linking";
import { createSendRules } from "./send-rules";
import { createTemplateSync } from "./templates";
import { createWebhookIngest } from "./webhooks";

export type { ChatappDeps } from "./context";
export { MEDIA_LIMITS, WINDOW_MS } from "./send-rules";
export { flattenTemplate } from "./templates";

export function createChatappService(deps: ChatappDeps) {
  const ctx = createChatappContext(deps);
  const blocking = createBlocking(ctx);
  const sync = createTemplateSync(ctx);
  const rules = createSendRules(ctx, blocking, sync);
  const linking = createLinking(ctx, sync);
  const webhooks = createWebhookIngest(ctx, blocking, sync);
  return {
    check: rules.check,
    checkHeaderMedia: rules.checkHeaderMedia,
    windowOpen: rules.windowOpen,
    templateRefByName: sync.templateRefByName,
    syncTemplates: sync.syncTemplates,
    activeTemplatesOf: sync.activeTemplatesOf,
    connect: linking.connect,
    relink: linking.relink,
    refreshTemplates: sync.refreshTemplates,
    preflight: blocking.preflight,
    afterOutcomes: webhooks.afterOutcomes,
    pruneBacklog: webhooks.pruneBacklog,
    applyBacklog: webhooks.applyBacklog,
    recheckPaused: sync.recheckPaused,
    syncAll: sync.syncAll,
    verifyHandshake: webhooks.verifyHandshake,
    signatureValid: webhooks.signatureValid,
    receive: webhooks.receive,
  };
}

export type ChatappService = ReturnType<typeof createChatappService>;
