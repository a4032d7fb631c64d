// The webhooks module: endpoints, signed deliveries from the outbox with retries, and their routes.
import type { ModuleDescriptor } from "../descriptor";
import { webhookRoutes } from "./routes";

export const webhooksModule: ModuleDescriptor = {
  name: "webhooks",
  routes: (s) => ({ api: [webhookRoutes(s)] }),
  tasks: (s) => [{ name: "webhooks:deliver", everySeconds: s.config.workerIntervalSeconds, run: () => s.webhooks.deliverDue() }],
  recover: async (s) => {
    const cutOff = await s.webhooks.recoverInterrupted();
    return cutOff > 0 ? `${cutOff} webhook deliveries were cut off mid-call by a stop and will be sent again` : null;
  },
  stop: (s) => s.webhooks.stop(),
};
