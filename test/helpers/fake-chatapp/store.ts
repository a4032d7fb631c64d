// What the fake platform holds: business accounts with their numbers and templates, tokens,
// media, the 24-hour windows, pacing buckets, scripted failures, and the record of everything that
// happened, all read and written by the routes, the webhook sender and the tests.
import { randomBytes } from "node:crypto";
import { authError } from "./errors";
import type { TokenBucket } from "./sending-rules";
import type {
  DeliveredWebhook,
  FailNextOptions,
  FakeChatAppOptions,
  FakePhoneNumber,
  FakeTemplate,
  FakeWaba,
  InvalidRequest,
  MediaSetup,
  PreparedWebhook,
  RecordedRequest,
  SentMessage,
  TemplateSetup,
  WabaSetup,
} from "./types";

export type Caller = { token: string; sees: (wabaId: string) => boolean; wabaIds: () => string[] };

export function createStore(options: FakeChatAppOptions) {
  const baseNow = options.now ?? (() => Date.now());
  // Settings the tests may change while the fake runs.
  const settings = {
    pinnedNow: undefined as number | undefined,
    webhookUrl: options.webhookUrl,
    windowErrors: options.windowErrors ?? ("sync" as "sync" | "async"),
  };
  const now = () => settings.pinnedNow ?? baseNow();

  const wabas = new Map<string, FakeWaba>();
  const phones = new Map<string, { phone: FakePhoneNumber; wabaId: string }>();
  /** Token → WABAs it can see ("all" follows WABAs added later) and whether it still works. */
  const tokens = new Map<string, { wabaIds: string[] | "all"; state: "valid" | "expired" | "revoked" }>();
  const media = new Map<string, MediaSetup>();
  /** Last inbound message time per "phoneNumberId|waId": the 24-hour customer service window. */
  const lastInbound = new Map<string, number>();
  const throughputBuckets = new Map<string, TokenBucket>();
  const pairBuckets = new Map<string, TokenBucket>();
  const script: Array<FailNextOptions & { code: number; times: number }> = [];
  const conversationIds = new Map<string, string>();
  let templateSeq = 0;

  /** What the fake saw and did, for the tests to read. */
  const seen = {
    /** Every accepted send, in order (including ones answered 200 that fail later by webhook). */
    sent: [] as SentMessage[],
    /** Sends refused by schema validation; a well-behaved adapter leaves this empty. */
    invalidRequests: [] as InvalidRequest[],
    /** Every request that reached the fake, whatever the answer. */
    requests: [] as RecordedRequest[],
    /** Every webhook the fake posted, with the server's HTTP status. */
    webhooks: [] as DeliveredWebhook[],
    /** Errors from automatic webhook deliveries (e.g. the server was unreachable). */
    webhookErrors: [] as Error[],
    /** wamids the server marked as read. */
    markedRead: [] as string[],
  };
  const outbox: PreparedWebhook[] = [];

  tokens.set(options.accessToken ?? "good-token", { wabaIds: "all", state: "valid" });

  function addTemplate(wabaId: string, setup: TemplateSetup): FakeTemplate {
    const waba = wabas.get(wabaId);
    if (!waba) throw new Error(`fake-chatapp: no WABA ${wabaId}`);
    const template: FakeTemplate = {
      ...setup,
      id: setup.id ?? String(1_689_556_908_000_000 + ++templateSeq),
      status: setup.status ?? "APPROVED",
      category: setup.category ?? "UTILITY",
      parameter_format: setup.parameter_format ?? "POSITIONAL",
    };
    waba.templates.push(template);
    return template;
  }

  function addPhoneNumber(wabaId: string, phone: FakePhoneNumber): FakePhoneNumber {
    const waba = wabas.get(wabaId);
    if (!waba) throw new Error(`fake-chatapp: no WABA ${wabaId}`);
    waba.phoneNumbers.push(phone);
    phones.set(phone.id, { phone, wabaId });
    return phone;
  }

  function addWaba(setup: WabaSetup): FakeWaba {
    const waba: FakeWaba = {
      id: setup.id,
      name: setup.name,
      currency: setup.currency ?? "USD",
      timezone_id: setup.timezone_id ?? "1",
      message_template_namespace: randomBytes(16)
        .toString("hex")
        .replace(/^(.{8})(.{4})(.{4})(.{4})/, "$1_$2_$3_$4_"),
      phoneNumbers: [],
      templates: [],
    };
    wabas.set(waba.id, waba);
    for (const phone of setup.phoneNumbers ?? []) addPhoneNumber(waba.id, phone);
    for (const template of setup.templates ?? []) addTemplate(waba.id, template);
    return waba;
  }

  for (const setup of options.wabas ?? []) addWaba(setup);
  for (const [name, item] of Object.entries(options.media ?? {})) media.set(name, item);

  function findTemplate(wabaId: string, idOrName: string, language?: string): FakeTemplate | undefined {
    return wabas.get(wabaId)?.templates.find((t) => t.id === idOrName || (t.name === idOrName && (!language || t.language === language)));
  }

  function authenticate(req: Request): Caller | Response {
    const match = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
    if (!match) return authError("An active access token must be used to query information about the current user.");
    const record = tokens.get(match[1]);
    if (!record) return authError("Invalid OAuth access token - Cannot parse access token");
    if (record.state === "expired") return authError("Error validating access token: Session has expired.", 463);
    if (record.state === "revoked")
      return authError(
        "Error validating access token: The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.",
        460,
      );
    const wabaIds = () => (record.wabaIds === "all" ? [...wabas.keys()] : record.wabaIds.filter((id) => wabas.has(id)));
    return { token: match[1], sees: (id) => wabaIds().includes(id), wabaIds };
  }

  return {
    settings,
    now,
    wabas,
    phones,
    tokens,
    media,
    lastInbound,
    throughputBuckets,
    pairBuckets,
    script,
    conversationIds,
    seen,
    outbox,
    addWaba,
    addPhoneNumber,
    addTemplate,
    findTemplate,
    authenticate,
  };
}

export type Store = ReturnType<typeof createStore>;
