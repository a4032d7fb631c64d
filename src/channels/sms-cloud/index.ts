// The cloud-number channel as one Channel: devices of kind `cloud`, sending SMS through a
// Twilio-compatible provider, charged per segment, with delivery reported on a status callback.
import type { ChannelAdapter, Channel } from "../types";
import { createCloudAdapter } from "./adapter";
import { cloudCallbackPath, cloudCallbackRoutes } from "./callback-routes";
import { CloudConfigInput, cloudConfigFromInput } from "./config";

export const smsCloud: Channel<"cloud", ChannelAdapter> = {
  name: "cloud",
  kind: "cloud",
  deliveryType: "sms",
  dispatched: true,
  charges: true,
  config: {
    key: "cloud",
    schema: CloudConfigInput,
    fromInput: (input, field) => cloudConfigFromInput(input as typeof CloudConfigInput.static, field),
  },
  create(core) {
    const adapter = createCloudAdapter({
      allowPrivateTargets: core.config.allowPrivateWebhooks,
      statusCallbackUrl: (device) => (core.config.publicUrl ? core.config.publicUrl + cloudCallbackPath(device.id) : null),
      fetch: core.fetch,
      timeoutMs: core.channelTimeoutMs,
    });
    return { service: adapter, adapter };
  },
  routes: (s) => [cloudCallbackRoutes(s)],
  tasks: () => [],
};
