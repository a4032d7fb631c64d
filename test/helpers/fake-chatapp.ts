// A local stand-in for the chat-app platform (the WhatsApp Business Cloud API on Meta's Graph API),
// run in-process by tests. It speaks the wire format written down in
// Meta's documentation of the Cloud API: send bodies are checked against Meta's own OpenAPI
// description, refusals come in Graph's error shapes with the platform's codes and HTTP statuses, and
// webhooks are signed the way Meta signs them. The adapter under test therefore meets the same bytes
// here that it will meet in production, including the awkward ones (async failures, out-of-order
// statuses, paging by absolute URL, pacing limits).
//
// The fake is split by job under fake-chatapp/: openapi.ts (Meta's schema and validation),
// errors.ts (the platform's codes and error shapes), types.ts, store.ts (what the platform holds),
// graph-routes.ts (the read side), sending.ts and sending-rules.ts (the send endpoint), webhooks.ts
// (building, signing and posting webhooks) and server.ts (the HTTP server and the test handle).
// This file keeps the one import path the tests use.
export {
  defaultOpenApiPath,
  loadOpenApi,
  openApiWebhookExamples,
  validateAgainstOpenApi,
  validateSendBody,
  type NamedWebhookExample,
  type WebhookEnvelope,
} from "./fake-chatapp/openapi";
export { PLATFORM_ERRORS, platformErrorInfo, type GraphErrorBody, type WebhookError } from "./fake-chatapp/errors";
export { startFakeChatApp, type FakeChatApp } from "./fake-chatapp/server";
export type {
  DeliveredWebhook,
  DeliveryOptions,
  FailNextOptions,
  FakeChatAppOptions,
  FakePhoneNumber,
  FakeTemplate,
  FakeTemplateComponent,
  FakeWaba,
  InboundOptions,
  InvalidRequest,
  MediaSetup,
  PreparedWebhook,
  RecordedRequest,
  SentMessage,
  StatusName,
  StatusOptions,
  TemplateSetup,
  TemplateStatus,
  TemplateStatusOptions,
  WabaSetup,
} from "./fake-chatapp/types";

import type { TemplateSetup, WabaSetup } from "./fake-chatapp/types";

/**
 * The business account most end-to-end tests connect: "Bakery" (WABA 4242) with one number (777)
 * and the approved template order_ready ("Hi {{1}}, order {{2}} is ready."), plus any `more`.
 */
export function bakeryWaba(more: TemplateSetup[] = []): WabaSetup {
  return {
    id: "4242",
    name: "Bakery",
    phoneNumbers: [{ id: "777", display_phone_number: "1 555 010 0100", verified_name: "Bakery", quality_rating: "GREEN" }],
    templates: [
      { name: "order_ready", language: "en_US", components: [{ type: "BODY", text: "Hi {{1}}, order {{2}} is ready." }] },
      ...more,
    ],
  };
}
