// The cloud-number channel as one Channel: devices of kind `cloud`, sending SMS through a
// Twilio-compatible provider, charged per segment, with delivery reported on a status callback.
import type { Channel } from "../types";
import type { CloudService } from "./service";
import { createCloudAdapter } from "./adapter";
import { cloudCallbackPath, cloudCallbackRoutes } from "./callback-routes";
import { CloudConfigInput, cloudConfigFromInput } from "./config";

export const cloud: Channel<"cloud", CloudService> = {
  name: "cloud",
  kind: "cloud",
  deliveryType: "sms",
  dispatched: true,
  charges: true,
  defaultSendLimit: 60,
  // The recipient unsubscribed at the provider: no other route may send to them either.
  finalFailures: ["21610"],
  config: {
    key: "cloud",
    schema: CloudConfigInput,
    example: {
      name: "Main line",
      kind: "cloud",
      cloud: { account_sid: "AC0123456789abcdef0123456789abcdef", auth_token: "your-auth-token", from_number: "+15005550006" },
    },
    fromInput(input, field) {
      const stored = cloudConfigFromInput(input as typeof CloudConfigInput.static, field);
      return { stored, phoneNumber: stored.from, outbound: { url: stored.baseUrl, field: `${field}.base_url` } };
    },
  },
  create(core) {
    const adapter = createCloudAdapter({
      allowPrivateTargets: core.config.allowPrivateWebhooks,
      statusCallbackUrl: (device) => (core.config.publicUrl ? core.config.publicUrl + cloudCallbackPath(device.id) : null),
      fetch: core.fetch,
      timeoutMs: core.channelTimeoutMs,
    });
    const service: CloudService = {
      adapter,
      deviceOf: (id) => core.devices.everById(id),
      notificationOf: (providerId, deviceId) => core.notifications.byExternalId(providerId, deviceId),
    };
    return { service, adapter };
  },
  routes: (service, s) => [cloudCallbackRoutes(service, s)],
  tasks: () => [],
};
