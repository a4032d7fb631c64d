// The fake's HTTP server and the handle tests hold: it wires the store, the Graph routes, the send
// route and the webhook sender together and exposes the set-up, inspection and webhook calls.
import { fbtraceId, graphParamError, json, unsupportedObject } from "./errors";
import { createGraphRoutes } from "./graph-routes";
import { loadOpenApi, type WebhookEnvelope } from "./openapi";
import { createSendRoute } from "./sending";
import { createStore } from "./store";
import type {
  DeliveryOptions,
  FailNextOptions,
  FakeChatAppOptions,
  InboundOptions,
  MediaSetup,
  PreparedWebhook,
  StatusName,
  StatusOptions,
  TemplateStatus,
  TemplateStatusOptions,
} from "./types";
import { createWebhookSender } from "./webhooks";
import { digits } from "./wire";

/** Starts the fake platform on 127.0.0.1 with a free port. */
export function startFakeChatApp(options: FakeChatAppOptions) {
  const spec = loadOpenApi(options.openApiPath);
  const deliverWebhook = options.deliverWebhook ?? ((req: Request) => fetch(req));
  const store = createStore(options);
  const { settings, now, wabas, tokens, media, lastInbound, script, outbox } = store;
  const { requests } = store.seen;
  const { addWaba, addPhoneNumber, addTemplate, findTemplate, authenticate } = store;

  const hooks = createWebhookSender(store, options, deliverWebhook);
  const { deliver, inboundWebhook, statusWebhook, templateStatusWebhook } = hooks;
  const { handleGraphGet } = createGraphRoutes(store);
  const { handleSend } = createSendRoute(store, spec, options, hooks);

  const zeros: Uint8Array<ArrayBuffer> = new Uint8Array(1024 * 1024);
  function serveMedia(req: Request, name: string): Response {
    const item = media.get(name);
    if (!item) return new Response("not found", { status: 404 });
    const headers = { "content-type": item.contentType, "content-length": String(item.size) };
    if (req.method === "HEAD") return new Response(null, { headers });
    // A Blob of views onto one zero buffer keeps Content-Length exact without holding 100 MB per item.
    const parts: Uint8Array<ArrayBuffer>[] = [];
    for (let left = item.size; left > 0; left -= zeros.length) parts.push(zeros.subarray(0, Math.min(left, zeros.length)));
    return new Response(new Blob(parts), { headers: { "content-type": item.contentType } });
  }

  async function route(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const raw = req.method === "POST" || req.method === "PUT" ? await req.text() : "";
    let recordedBody: unknown = raw || undefined;
    try {
      if (raw) recordedBody = JSON.parse(raw);
    } catch {
      // keep the raw text: an unparsable body is itself worth asserting on
    }
    requests.push({ at: now(), method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), body: recordedBody });

    if (url.pathname.startsWith("/media/") && (req.method === "GET" || req.method === "HEAD")) {
      return serveMedia(req, decodeURIComponent(url.pathname.slice("/media/".length)));
    }
    const match = /^\/(v\d+\.\d+)\/(.+?)\/?$/.exec(url.pathname);
    if (!match) return graphParamError("Unknown path components");
    const caller = authenticate(req);
    if (caller instanceof Response) return caller;
    const [version, path] = [match[1], match[2]];
    const segments = path.split("/").map(decodeURIComponent);
    if (req.method === "GET") return handleGraphGet(url, version, segments, caller);
    if (req.method === "POST" && segments.length === 2 && segments[1] === "messages") return handleSend(url, segments[0], raw, caller);
    return unsupportedObject(req.method, segments[0]);
  }

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      try {
        return await route(req);
      } catch (error) {
        // A bug in the fake should read as one, not as a platform answer the adapter must interpret.
        console.error("fake-chatapp internal error", error);
        return json(500, {
          error: { message: `fake-chatapp bug: ${String(error)}`, type: "FakeChatAppError", code: -1, fbtrace_id: fbtraceId() },
        });
      }
    },
  });
  const baseUrl = `http://127.0.0.1:${server.port}`;

  return {
    /** Base URL, e.g. http://127.0.0.1:PORT; Graph paths go under it (`${url}/v23.0/...`). */
    url: baseUrl,
    /** sent, invalidRequests, requests, webhooks, webhookErrors and markedRead (see the store). */
    ...store.seen,
    /** What was patched in Meta's schemas before validating (see patchSchemas). */
    schemaPatches: spec.patches,

    // clock
    now,
    setNow(ms: number) {
      settings.pinnedNow = ms;
    },
    advance(ms: number) {
      settings.pinnedNow = now() + ms;
    },

    // state
    addWaba,
    addPhoneNumber,
    addTemplate,
    waba: (id: string) => wabas.get(id),
    template: (wabaId: string, idOrName: string, language?: string) => findTemplate(wabaId, idOrName, language),
    setTemplateStatus(wabaId: string, idOrName: string, status: TemplateStatus | string) {
      const template = findTemplate(wabaId, idOrName);
      if (!template) throw new Error(`fake-chatapp: no template ${idOrName} in ${wabaId}`);
      template.status = status;
    },
    /** A token that sees the listed WABAs, or every WABA when none are listed. */
    addToken(token: string, wabaIds?: string[]) {
      tokens.set(token, { wabaIds: wabaIds ?? "all", state: "valid" });
    },
    expireToken(token: string) {
      const record = tokens.get(token);
      if (record) record.state = "expired";
    },
    revokeToken(token: string) {
      const record = tokens.get(token);
      if (record) record.state = "revoked";
    },
    /** Opens (or with `at` far in the past, effectively closes) a window without posting a webhook. */
    openWindow(phoneNumberId: string, waId: string, at: number = now()) {
      lastInbound.set(`${phoneNumberId}|${digits(waId)}`, at);
    },
    closeWindow(phoneNumberId: string, waId: string) {
      lastInbound.delete(`${phoneNumberId}|${digits(waId)}`);
    },
    setWindowErrors(mode: "sync" | "async") {
      settings.windowErrors = mode;
    },
    setWebhookUrl(url: string) {
      settings.webhookUrl = url;
    },
    /** Serves GET/HEAD /media/<name> with this size and type; returns the absolute link. */
    addMedia(name: string, item: MediaSetup): string {
      media.set(name, item);
      return `${baseUrl}/media/${encodeURIComponent(name)}`;
    },

    // error injection
    /** The next send (or `times` sends) answers with this platform code, or accepts and fails by webhook if async. */
    failNext(code: number, opts: FailNextOptions = {}) {
      script.push({ ...opts, code, times: opts.times ?? 1 });
    },

    // webhooks
    inboundWebhook,
    statusWebhook,
    templateStatusWebhook,
    /** A user's text message; it also opens the 24-hour window for that pair. */
    async sendInbound(inbound: InboundOptions, delivery?: DeliveryOptions): Promise<{ wamid: string; response: Response }> {
      const prepared = inboundWebhook(inbound);
      return { wamid: prepared.wamid, response: await deliver(prepared, delivery) };
    },
    sendStatus(wamid: string, status: StatusName, opts?: StatusOptions, delivery?: DeliveryOptions): Promise<Response> {
      return deliver(statusWebhook(wamid, status, opts), delivery);
    },
    /** A template review/quality event; the fake's store follows it (PAUSED pauses sends, and so on). */
    sendTemplateStatus(update: TemplateStatusOptions, delivery?: DeliveryOptions): Promise<Response> {
      return deliver(templateStatusWebhook(update), delivery);
    },
    /** Posts any envelope (e.g. one of examplesFromOpenApi()) signed like the platform signs. */
    deliverPayload(payload: WebhookEnvelope | string, delivery?: DeliveryOptions): Promise<Response> {
      const body = typeof payload === "string" ? payload : JSON.stringify(payload);
      return deliver({ payload: JSON.parse(body) as WebhookEnvelope, body }, delivery);
    },
    deliver,
    /** Posts prepared webhooks one after another, e.g. delivered before sent. */
    async deliverInOrder(list: PreparedWebhook[], delivery?: DeliveryOptions): Promise<Response[]> {
      const responses: Response[] = [];
      for (const prepared of list) responses.push(await deliver(prepared, delivery));
      return responses;
    },
    /** Re-sends the last webhook byte for byte, signature included, as Meta's retries do. */
    redeliverLast: hooks.redeliverLast,
    /** Waits until every automatic webhook scheduled so far has been posted. */
    settle: hooks.settle,
    /** In manual webhookDelivery mode: the queued follow-up webhooks, and a way to post them. */
    outbox,
    async flush(delivery?: DeliveryOptions): Promise<Response[]> {
      const responses: Response[] = [];
      while (outbox.length) responses.push(await deliver(outbox.shift()!, delivery));
      return responses;
    },
    /** The GET handshake Meta performs when a webhook URL is registered. */
    verify(url: string, verifyToken: string, challenge: string): Promise<Response> {
      const target = new URL(url);
      target.searchParams.set("hub.mode", "subscribe");
      target.searchParams.set("hub.challenge", challenge);
      target.searchParams.set("hub.verify_token", verifyToken);
      return deliverWebhook(new Request(target, { method: "GET" }));
    },
    /** Every webhook payload example in Meta's OpenAPI yaml (fresh copies). */
    examplesFromOpenApi(): WebhookEnvelope[] {
      return spec.webhookExamples.map((x) => structuredClone(x.payload));
    },
    stop() {
      server.stop(true);
    },
  };
}

export type FakeChatApp = ReturnType<typeof startFakeChatApp>;
