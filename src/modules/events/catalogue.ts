// What each event means and an example of its data, for the API docs.
import type { EventType } from "./service";

const notification = (status: string, extra: Record<string, unknown> = {}) => ({
  notification_id: 42,
  status,
  delivery_type: "sms",
  route: "cloud",
  template_id: null,
  template_vars: null,
  message: "Your order is ready for pickup.",
  recipient: "+14155552671",
  recipient_name: "Ada",
  device_id: 2,
  attempts: 1,
  segments: 1,
  cost: 1,
  provider_message_id: "SM0123456789abcdef0123456789abcdef",
  error_code: null,
  error_reason: null,
  created_at: "2026-01-15T12:00:00.000Z",
  sent_at: "2026-01-15T12:00:01.000Z",
  encrypted: false,
  ...extra,
});

const device = { device_id: 1, name: "Front desk phone", kind: "sms", last_sync: "2026-01-15T12:00:00.000Z" };

export const EVENT_CATALOGUE: { type: EventType; when: string; data: Record<string, unknown> }[] = [
  { type: "notification.sent", when: "the channel took the message (provider accepted, phone sent it)", data: notification("sent") },
  {
    type: "notification.delivered",
    when: "the carrier or platform reported delivery (a chat-app `read` counts)",
    data: notification("delivered", { delivered_at: "2026-01-15T12:00:05.000Z" }),
  },
  {
    type: "notification.failed",
    when: "a permanent failure, or retries ran out; credits are refunded",
    data: notification("failed", {
      error_code: "30003",
      error_reason: "Unreachable destination handset",
      failed_at: "2026-01-15T12:00:06.000Z",
    }),
  },
  {
    type: "notification.cancelled",
    when: "a pending notification was cancelled",
    data: notification("cancelled", { sent_at: null, cancelled_at: "2026-01-15T12:00:00.500Z" }),
  },
  {
    type: "notification.awaiting_approval",
    when: "a send by a key that needs approval was stored and waits for a person to approve it (nothing is sent until then; credits are reserved)",
    data: notification("awaiting_approval", {
      sent_at: null,
      attempts: 0,
      provider_message_id: null,
      api_key_id: 3,
      agent_session: "claude-desktop-7f3a",
      approval_reason: "Tell the customer their part arrived",
    }),
  },
  {
    type: "notification.approved",
    when: "a message awaiting approval was approved: it is now pending and takes the normal path (a rejection or expiry is `notification.failed` with `approval_rejected` or `approval_expired`)",
    data: notification("pending", {
      sent_at: null,
      attempts: 0,
      provider_message_id: null,
      api_key_id: 3,
      approved_at: "2026-01-15T12:03:00.000Z",
      decided_by: "user owner@example.com",
    }),
  },
  {
    type: "message.received",
    when: "an inbound SMS, MMS or chat-app message arrived. An MMS from a paired phone adds `mms` ({transaction_id, subject, size, attachments, and `attachments_dropped` when parts were not kept}); its `body` is its text, else its subject, else `[MMS]`, and content downloaded later is added to the same thread message without a second event. A data SMS from a paired phone (the app's `sms:data-received`) adds `data_message` ({data: base64, port: 53739, the app's port}) and has an empty `body`; no keyword and only rules matching any message see it",
    data: {
      thread_id: 7,
      message_id: 31,
      channel: "sms",
      from: "+14155552671",
      body: "Is my order ready?",
      received_at: "2026-01-15T12:01:00.000Z",
      device_id: 1,
      contact_id: 3,
    },
  },
  {
    type: "template.status",
    when: "the chat-app platform changed a template's status (paused for low quality, disabled, approved, …)",
    data: {
      template_id: 12,
      name: "order_ready",
      language: "en_US",
      status: "paused",
      previous_status: "active",
      reason: "FIRST_PAUSE",
      device_id: 4,
    },
  },
  { type: "device.offline", when: "a paired phone has not been heard from for 5 minutes", data: device },
  { type: "device.online", when: "a paired phone is heard from again (or for the first time)", data: device },
  {
    type: "device.blocked",
    when: "a chat-app send hit an account, token or business-account problem; sends through the number fail at once until it is fixed",
    data: {
      device_id: 4,
      name: "WhatsApp +1 555 0100",
      kind: "chatapp",
      blocked_code: "131042",
      blocked_reason: "Business eligibility payment issue",
    },
  },
  {
    type: "device.unblocked",
    when: "a send through a blocked number succeeded again (after a relink)",
    data: { device_id: 4, name: "WhatsApp +1 555 0100", kind: "chatapp" },
  },
  {
    type: "device.unhealthy",
    when: "a paired phone's health report (the app's ping) shows its battery under 15 % while neither charging nor plugged in (`low_battery`), or no internet connection (`no_connection`); once per episode, not on every ping",
    data: { ...device, battery_level: 9, charging: false, connected: true, reasons: ["low_battery"] },
  },
  {
    type: "pool.member_paused",
    when: "a sender pool's member had as many carrier failures in a row as its pool's `failure_threshold` (3 by default): it is skipped until `paused_until`, its back-off doubling each time it is paused again before a message of it goes out; or a person paused it (API update with `paused: true`, or the dashboard's Pause). `by` says who or what: `carrier_failures`, `api_key` (with `key_id`, `key_name`) or `dashboard_user` (with `user_id`, `email`); for a pause by hand `failures`, `last_error_code`, `paused_until` and `backoff_seconds` are null",
    data: {
      pool_id: 1,
      member_id: 3,
      device_id: 1,
      sim_number: 2,
      failures: 3,
      last_error_code: "carrier_rejected",
      paused_until: "2026-01-15T12:15:00.000Z",
      backoff_seconds: 900,
      by: { type: "carrier_failures" },
    },
  },
  {
    type: "pool.member_resumed",
    when: "a paused pool member is chosen again: its back-off after carrier failures ended (`by`: `backoff_ended`), or a person resumed it (API update with `paused: false` or `resume: true`, or the dashboard's Resume; `by`: `api_key` with `key_id`, `key_name`, or `dashboard_user` with `user_id`, `email`)",
    data: { pool_id: 1, member_id: 3, device_id: 1, sim_number: 2, by: { type: "api_key", key_id: 2, key_name: "Shop backend" } },
  },
  {
    type: "device.healthy",
    when: "the first health report after `device.unhealthy` that shows neither problem",
    data: { ...device, battery_level: 40, charging: true, connected: true, previous_reasons: ["low_battery"] },
  },
  {
    type: "device.ping",
    when: "a paired phone's every health report (the app's `system:ping`, every 15 minutes by default); `health` is the report as the app sent it. Written only while some webhook subscribes to it",
    data: {
      ...device,
      health: {
        status: "pass",
        version: "1.68.0",
        checks: {
          "battery:level": { status: "pass", observedValue: 80, observedUnit: "percent", description: "Battery level in percent" },
        },
      },
    },
  },
  {
    type: "message.mms_downloaded",
    when: "a paired phone downloaded an MMS's content (its `mms:downloaded`, app 1.56.0 and later); `message_id` is the phone's id of the downloaded MMS, `thread_message_id` the thread message that holds it. `attachments` are the parts whose bytes Pigeon kept, each with the `url` that serves them (GET with an API key of the workspace); `attachments_dropped` the parts it did not keep, each with its `reason` (`invalid_base64`, `size_mismatch`, `no_data`, `message_cap`, `workspace_cap`): the text is kept all the same. The thread message was announced by `message.received`",
    data: {
      device_id: 1,
      from: "+14155552671",
      message_id: "1234",
      thread_id: 7,
      thread_message_id: 31,
      body: "Photo of the parcel",
      subject: "Delivery",
      attachments: [
        {
          attachment_id: 5,
          part_id: 1,
          content_type: "image/jpeg",
          name: "parcel.jpg",
          size: 48213,
          url: "/v1/api/thread/7/message/31/attachment/5",
        },
      ],
      attachments_dropped: [{ part_id: 2, content_type: "video/mp4", name: "clip.mp4", size: 7340032, reason: "message_cap" }],
      received_at: "2026-01-15T12:01:00.000Z",
      sim_number: null,
    },
  },
  {
    type: "contact.opted_out",
    when: "a number opted out of the workspace's messages: it texted an opt-out keyword (STOP, …) on any channel (`source` keyword, `message_id` the thread message), or POST /api/optout/add (`api`), the dashboard or an import. Pending messages to it that no channel holds fail with `recipient_opted_out`",
    data: {
      phone: "+14155552671",
      source: "keyword",
      reason: 'texted "Stop"',
      message_id: 31,
      channel: "sms",
      device_id: 1,
      contact_id: 3,
      at: "2026-01-15T12:01:00.000Z",
    },
  },
  {
    type: "contact.opted_in",
    when: "a number that had opted out may be texted again: it texted an opt-in keyword (START, UNSTOP, YES), or POST /api/optout/remove",
    data: {
      phone: "+14155552671",
      source: "keyword",
      reason: 'texted "START"',
      message_id: 35,
      channel: "sms",
      device_id: 1,
      contact_id: 3,
      at: "2026-01-16T09:00:00.000Z",
    },
  },
  { type: "webhook.test", when: "POST /api/webhook/test", data: { message: "This is a test event from Pigeon", webhook_id: 1 } },
  {
    type: "rule.matched",
    when: "an inbound rule with a webhook action matched a message that came in; sent only to that rule's own subscription (POST /api/rule/create), not to others",
    data: {
      rule_id: 2,
      rule_name: "CRM",
      message: {
        thread_id: 12,
        message_id: 31,
        channel: "sms",
        from: "+14155552671",
        body: "Urgent: please call back",
        received_at: "2026-01-15T12:00:05.000Z",
        device_id: 1,
      },
    },
  },
];

export function eventCatalogueMarkdown(): string {
  return EVENT_CATALOGUE.map(
    (e) =>
      `### \`${e.type}\`\n${e.when[0].toUpperCase()}${e.when.slice(1)}.\n\n\`\`\`json\n${JSON.stringify(
        { id: "evt_3kTz9QeX0bW7YtVq1sD4mN2P", type: e.type, created_at: "2026-01-15T12:00:06.000Z", workspace_id: 1, data: e.data },
        null,
        2,
      )}\n\`\`\``,
  ).join("\n\n");
}
