// A rule's "post to a URL" action is a webhook subscription of its own (addressed only: it hears
// nothing but its rule's rule.matched events). What the rules ask of the webhooks and the events.
import type { EventService } from "../events/service";
import type { WebhookService } from "../webhooks/service";
import type { RuleDeps } from "./service";

export function ruleWebhooks(webhooks: WebhookService, events: Pick<EventService, "emitTo">): RuleDeps["webhooks"] {
  return {
    async create(workspaceId, url, description) {
      const made = await webhooks.create(workspaceId, { url, events: [], description, addressedOnly: true });
      return { id: made.webhook_id, secret: "secret" in made ? made.secret : "" };
    },
    update: async (workspaceId, id, url, description) => void (await webhooks.update(workspaceId, { webhook_id: id, url, description })),
    remove: async (workspaceId, id) => void (await webhooks.remove(workspaceId, id)),
    exists: async (workspaceId, id) => (await webhooks.get(workspaceId, id).catch(() => null)) !== null,
    emit: async (workspaceId, id, data) => void (await events.emitTo(workspaceId, id, "rule.matched", data)),
  };
}
