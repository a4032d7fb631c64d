// The chat-app channel as one Channel: business numbers on the platform's Graph API, with their
// templates, the 24-hour window, blocking, and the platform's webhooks.
import type { TObject } from "@sinclair/typebox";
import type { FastRoute } from "../../http/fast-route";
import type { Channel } from "../types";
import { createChatappAdapter } from "./adapter";
import { createGraphClient } from "./graph";
import { chatappRoutes, chatappSendHandlers } from "./routes";
import { createChatappService, type ChatappService } from "./service";

export const chatapp: Channel<"chatapp", ChatappService> = {
  name: "chatapp",
  kind: "chatapp",
  deliveryType: "chatapp",
  dispatched: true,
  // The platform's limit is a rate, 80 a second by default.
  defaultSendLimit: 4800,
  pacedPerSecond: true,
  // The user stopped marketing messages: no other route may send them either.
  finalFailures: ["131050"],
  // A template the platform paused for low quality, or disabled.
  inactiveTemplateCodes: { paused: 132015, disabled: 132016 },
  // A closed 24-hour window: a failover route sends the fallback template instead.
  templateFallbackOn: "window_closed",
  // Each business number has its own conversations.
  threadPerDevice: true,
  create(core) {
    const { config } = core;
    const graph = createGraphClient({
      baseUrl: config.chatapp.graphUrl,
      version: config.chatapp.graphVersion,
      fetch: core.fetch,
      timeoutMs: core.channelTimeoutMs,
    });
    const service = createChatappService({
      storage: core.storage,
      clock: core.clock,
      config,
      graph,
      devices: core.devices,
      templates: core.templates,
      threads: core.threads,
      state: core.state,
      events: core.events,
      onInbound: core.onInbound,
      log: core.log,
      fetch: core.fetch,
    });
    const adapter = createChatappAdapter({
      graph,
      templateById: (id) => core.templates.byId(id),
      templatesByIds: (ids) => core.templates.byIds(ids),
      refreshTemplates: (device) => service.refreshTemplates(device),
      preflight: (device) => service.preflight(device),
    });
    return {
      service,
      adapter,
      check: service.check,
      afterOutcomes: (outcomes) => service.afterOutcomes(outcomes),
    };
  },
  routes: (service, s) => [chatappRoutes(service, s)],
  fastRoutes: (service, s) => Object.values(chatappSendHandlers(service, s)) as FastRoute<TObject>[],
  tasks: (service) => [
    { name: "chatapp:recheck-templates", everySeconds: 3600, run: () => service.recheckPaused() },
    { name: "chatapp:prune-backlog", everySeconds: 3600, run: () => service.pruneBacklog() },
    { name: "chatapp:apply-backlog", everySeconds: 5, run: () => service.applyBacklog() },
    { name: "chatapp:sync-templates", everySeconds: 6 * 3600, run: () => service.syncAll() },
  ],
};
