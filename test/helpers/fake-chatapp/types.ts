// The shapes a test uses to set the fake up and to read back what it saw.
import type { WebhookError } from "./errors";
import type { Json, WebhookEnvelope } from "./openapi";

export interface FakePhoneNumber {
  id: string;
  display_phone_number: string;
  verified_name: string;
  quality_rating: string;
  [field: string]: unknown;
}

export interface FakeTemplateComponent {
  type: string;
  format?: string;
  text?: string;
  [field: string]: unknown;
}

export type TemplateStatus =
  | "APPROVED"
  | "PENDING"
  | "REJECTED"
  | "PAUSED"
  | "DISABLED"
  | "IN_APPEAL"
  | "PENDING_DELETION"
  | "DELETED"
  | "LIMIT_EXCEEDED"
  | "ARCHIVED"
  | "LOCKED";

export interface FakeTemplate {
  id: string;
  name: string;
  language: string;
  status: TemplateStatus | string;
  category: string;
  parameter_format: "POSITIONAL" | "NAMED";
  components: FakeTemplateComponent[];
  [field: string]: unknown;
}

/** A template as tests declare it; id, status (APPROVED), category (UTILITY) and parameter_format (POSITIONAL) have defaults. */
export interface TemplateSetup {
  id?: string;
  name: string;
  language: string;
  status?: TemplateStatus | string;
  category?: string;
  parameter_format?: "POSITIONAL" | "NAMED";
  components: FakeTemplateComponent[];
  [field: string]: unknown;
}

export interface WabaSetup {
  id: string;
  name: string;
  currency?: string;
  timezone_id?: string;
  phoneNumbers?: FakePhoneNumber[];
  templates?: TemplateSetup[];
}

export interface FakeWaba {
  id: string;
  name: string;
  currency: string;
  timezone_id: string;
  message_template_namespace: string;
  phoneNumbers: FakePhoneNumber[];
  templates: FakeTemplate[];
}

export interface SentMessage {
  wamid: string;
  phoneNumberId: string;
  wabaId: string;
  to: string;
  waId: string;
  type: string;
  body: Json;
  /** The fake's clock when the send was accepted. */
  at: number;
  template?: FakeTemplate;
  /** Set when the send was accepted but a failed status webhook with this code follows. */
  failure?: number;
}

export interface InvalidRequest {
  at: number;
  path: string;
  body: unknown;
  details: string;
}

export interface RecordedRequest {
  at: number;
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
}

export interface DeliveredWebhook {
  payload: WebhookEnvelope;
  body: string;
  status: number;
}

/** A webhook built but not yet posted; `effect` is the platform-side change it reports (runs at delivery). */
export interface PreparedWebhook {
  payload: WebhookEnvelope;
  body: string;
  effect?: () => void;
}

export interface DeliveryOptions {
  /** Sign with this secret instead of the app secret (to test that bad signatures are refused). */
  secret?: string;
  /** Send no X-Hub-Signature-256 header at all. */
  omitSignature?: boolean;
}

export type StatusName = "sent" | "delivered" | "read" | "failed";

export interface StatusOptions {
  /** For failed: the platform code (default 131026) or the full errors array. */
  errorCode?: number;
  errors?: WebhookError[];
  details?: string;
  /** Status time in ms (default: the fake's clock). */
  at?: number;
  /** Needed only for a wamid the fake never accepted. */
  phoneNumberId?: string;
  recipientId?: string;
  /** Leave out pricing / conversation (default: present on sent, delivered and read). */
  pricing?: boolean;
  conversation?: boolean;
}

export interface InboundOptions {
  phoneNumberId: string;
  from: string;
  text: string;
  name?: string;
  /** Message time in ms (default: the fake's clock). */
  at?: number;
  /** Quote one of the business's messages, as a user's reply does. */
  contextWamid?: string;
}

export interface TemplateStatusOptions {
  wabaId: string;
  templateId: string;
  name?: string;
  language?: string;
  event: string;
  reason?: string | null;
  otherInfo?: { title: string; description: string };
}

export interface FailNextOptions {
  /** Answer 200 with a wamid, then post a failed status webhook carrying the code. */
  async?: boolean;
  /** Override the HTTP status of Meta's table. */
  status?: number;
  title?: string;
  details?: string;
  /** How many consecutive sends fail this way (default 1). */
  times?: number;
}

export interface MediaSetup {
  size: number;
  contentType: string;
}

export interface FakeChatAppOptions {
  appSecret: string;
  /** A token that can see every WABA (default "good-token"). */
  accessToken?: string;
  /** How webhooks reach the server under test; default global fetch. In-process apps pass app.handle. */
  deliverWebhook?: (req: Request) => Promise<Response>;
  webhookUrl?: string;
  /** Per phone number message throughput (default 80, Meta's default). */
  throughputPerSecond?: number;
  /** Pair limit: one message per pairIntervalMs to a user, with bursts of pairBurst (defaults 6000 and 45). */
  pairIntervalMs?: number;
  pairBurst?: number;
  /** How a freeform send to a closed 24-hour window fails (default "sync": HTTP 400 with 131047). */
  windowErrors?: "sync" | "async";
  /** Statuses posted automatically after each accepted send, in order (default none). */
  autoStatuses?: Array<"sent" | "delivered" | "read">;
  /** "manual" queues the fake's own webhooks until flush() (default "auto": posted right after the answer). */
  webhookDelivery?: "auto" | "manual";
  /** Delay before each automatic webhook, in real ms (default 0). */
  webhookDelayMs?: number;
  /** Clock for windows, pacing and timestamps (default Date.now); setNow/advance pin it. */
  now?: () => number;
  wabas?: WabaSetup[];
  media?: Record<string, MediaSetup>;
  openApiPath?: string;
}
