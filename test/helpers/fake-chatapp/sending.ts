// POST /{version}/{phone-number-id}/messages: the body checked against Meta's schema, then
// scripted failures, pacing, templates, the 24-hour window and media, in the platform's order.
import { fbtraceId, json, platformErrorBody, platformErrorInfo, unsupportedObject } from "./errors";
import { describeErrors, isRecord, passes, validateSendBody, type Json, type OpenApi } from "./openapi";
import { MEDIA_LIMITS, placeholders, TokenBucket } from "./sending-rules";
import type { Caller, Store } from "./store";
import type { FakeChatAppOptions, FakeTemplate, SentMessage } from "./types";
import type { WebhookSender } from "./webhooks";
import { digits, newWamid } from "./wire";

export function createSendRoute(store: Store, spec: OpenApi, options: FakeChatAppOptions, hooks: WebhookSender) {
  const { settings, now, phones, media, lastInbound, throughputBuckets, pairBuckets, script, findTemplate } = store;
  const { sent, invalidRequests, markedRead } = store.seen;
  const { schedule, statusWebhook } = hooks;
  const throughput = options.throughputPerSecond ?? 80;
  const pairIntervalMs = options.pairIntervalMs ?? 6000;
  const pairBurst = options.pairBurst ?? 45;

  function accept(
    phoneNumberId: string,
    wabaId: string,
    body: Json,
    template: FakeTemplate | undefined,
    failure: number | undefined,
    failureDetails?: string,
  ) {
    const to = String(body.to);
    const message: SentMessage = {
      wamid: newWamid(),
      phoneNumberId,
      wabaId,
      to,
      waId: digits(to),
      type: String(body.type),
      body,
      at: now(),
      ...(template ? { template } : {}),
      ...(failure !== undefined ? { failure } : {}),
    };
    sent.push(message);
    if (failure !== undefined) schedule(statusWebhook(message.wamid, "failed", { errorCode: failure, details: failureDetails }));
    else for (const status of options.autoStatuses ?? []) schedule(statusWebhook(message.wamid, status));
    const result: Json = { id: message.wamid };
    if (body.type === "template") result.message_status = "accepted";
    return json(200, { messaging_product: "whatsapp", contacts: [{ input: to, wa_id: message.waId }], messages: [result] });
  }

  /** Template semantics (reference section 4): existence, status, then parameter counts. */
  function checkTemplate(wabaId: string, body: Json): { template: FakeTemplate } | { code: number; details: string } {
    const sentTemplate = isRecord(body.template) ? body.template : {};
    const name = String(sentTemplate.name);
    const language = isRecord(sentTemplate.language) ? String(sentTemplate.language.code) : "";
    const template = findTemplate(wabaId, name, language);
    if (!template || template.name !== name) return { code: 132001, details: `template name (${name}) does not exist in ${language}` };
    if (template.status === "PAUSED") return { code: 132015, details: `Template ${name} is paused` };
    if (template.status === "DISABLED") return { code: 132016, details: `Template ${name} is disabled` };
    if (template.status !== "APPROVED")
      return { code: 132001, details: `template name (${name}) in ${language} is not approved (status ${template.status})` };

    const sentComponents = Array.isArray(sentTemplate.components) ? sentTemplate.components.filter(isRecord) : [];
    const paramsOf = (type: string) => {
      const found = sentComponents.find((c) => String(c.type).toLowerCase() === type);
      return found && Array.isArray(found.parameters) ? found.parameters.filter(isRecord) : [];
    };
    const componentOf = (type: string) => template.components.find((c) => c.type.toUpperCase() === type);

    const header = componentOf("HEADER");
    const headerFormat = header?.format?.toUpperCase() ?? "TEXT";
    if (header && headerFormat === "TEXT") {
      const expected = placeholders(header.text).length;
      const got = paramsOf("header").length;
      if (got !== expected)
        return {
          code: 132000,
          details: `header: number of localizable_params (${got}) does not match the expected number of params (${expected})`,
        };
    } else if (header && ["IMAGE", "VIDEO", "DOCUMENT"].includes(headerFormat)) {
      const params = paramsOf("header");
      const kind = headerFormat.toLowerCase();
      if (params.length !== 1 || params[0].type !== kind) {
        return {
          code: 132012,
          details: `header: Format mismatch, expected ${headerFormat}, received ${params.map((p) => String(p.type).toUpperCase()).join(",") || "UNKNOWN"}`,
        };
      }
    }

    const bodyComponent = componentOf("BODY");
    const expected = placeholders(bodyComponent?.text);
    const got = paramsOf("body");
    if (got.length !== expected.length) {
      return {
        code: 132000,
        details: `body: number of localizable_params (${got.length}) does not match the expected number of params (${expected.length})`,
      };
    }
    if (template.parameter_format === "NAMED") {
      const names = got.map((p) => p.parameter_name);
      if (expected.some((name) => !names.includes(name)))
        return { code: 132000, details: `body: parameter names ${JSON.stringify(names)} do not match ${JSON.stringify(expected)}` };
    }
    return { template };
  }

  /** Links to this fake's /media/ are checked against Meta's limits; other links are taken on trust. */
  function mediaProblem(origin: string, body: Json, template: FakeTemplate | undefined): string | undefined {
    const uses: Array<{ kind: string; object: unknown }> = [];
    if (template && isRecord(body.template) && Array.isArray(body.template.components)) {
      for (const component of body.template.components.filter(isRecord)) {
        for (const param of Array.isArray(component.parameters) ? component.parameters.filter(isRecord) : []) {
          const kind = String(param.type);
          if (kind in MEDIA_LIMITS) uses.push({ kind, object: param[kind] });
        }
      }
    } else if (String(body.type) in MEDIA_LIMITS) {
      uses.push({ kind: String(body.type), object: body[String(body.type)] });
    }
    for (const use of uses) {
      if (!isRecord(use.object) || typeof use.object.link !== "string") continue;
      const link = new URL(use.object.link);
      if (link.origin !== origin || !link.pathname.startsWith("/media/")) continue;
      const item = media.get(decodeURIComponent(link.pathname.slice("/media/".length)));
      const limits = MEDIA_LIMITS[use.kind];
      if (!item) return `Media upload error: could not download ${use.object.link} (HTTP 404)`;
      if (!limits.types.includes(item.contentType)) return `Media upload error: ${item.contentType} is not a supported ${use.kind} type`;
      if (item.size > limits.maxBytes)
        return `Media upload error: ${use.kind} of ${item.size} bytes exceeds the limit of ${limits.maxBytes} bytes`;
    }
    return undefined;
  }

  function invalid(path: string, body: unknown, details: string): Response {
    invalidRequests.push({ at: now(), path, body, details });
    return json(400, platformErrorBody(100, details));
  }

  function handleSend(url: URL, phoneNumberId: string, raw: string, caller: Caller): Response {
    const found = phones.get(phoneNumberId);
    if (!found || !caller.sees(found.wabaId)) return unsupportedObject("POST", phoneNumberId);
    const { wabaId } = found;

    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return invalid(url.pathname, raw, "The request body is not valid JSON");
    }

    // Read receipts and typing indicators share the endpoint but not the Message schema.
    if (isRecord(body) && body.status === "read" && body.type === undefined) {
      if (!passes(spec.validateMarkRead, body)) return invalid(url.pathname, body, describeErrors(spec.validateMarkRead.errors, spec.ajv));
      markedRead.push(String(body.message_id));
      return json(200, { success: true });
    }

    const problems = validateSendBody(body, spec);
    if (problems !== null || !isRecord(body)) return invalid(url.pathname, body, problems ?? "body must be an object");

    const injected = script[0];
    if (injected) {
      if (--injected.times <= 0) script.shift();
      if (injected.async) return accept(phoneNumberId, wabaId, body, undefined, injected.code, injected.details);
      const info = platformErrorInfo(injected.code);
      const errorBody =
        injected.code === 190
          ? {
              error: {
                message: "Error validating access token: Session has expired.",
                type: "OAuthException",
                code: 190,
                error_subcode: 463,
                fbtrace_id: fbtraceId(),
              },
            }
          : platformErrorBody(injected.code, injected.details, injected.title);
      return json(injected.status ?? info.status, errorBody);
    }

    const clock = now();
    const bucket = throughputBuckets.get(phoneNumberId) ?? new TokenBucket(throughput, 1000 / throughput, clock);
    throughputBuckets.set(phoneNumberId, bucket);
    if (!bucket.take(clock)) return json(400, platformErrorBody(130429));

    let template: FakeTemplate | undefined;
    let failure: number | undefined;
    let failureDetails: string | undefined;
    const waId = digits(String(body.to));
    if (body.type === "template") {
      const checked = checkTemplate(wabaId, body);
      if ("code" in checked) return json(platformErrorInfo(checked.code).status, platformErrorBody(checked.code, checked.details));
      template = checked.template;
    } else {
      const last = lastInbound.get(`${phoneNumberId}|${waId}`);
      if (last === undefined || clock - last >= 24 * 3600_000) {
        if (settings.windowErrors === "sync") return json(400, platformErrorBody(131047));
        failure = 131047;
      }
    }

    const pair = pairBuckets.get(`${phoneNumberId}|${waId}`) ?? new TokenBucket(pairBurst, pairIntervalMs, clock);
    pairBuckets.set(`${phoneNumberId}|${waId}`, pair);
    if (!pair.take(clock)) return json(400, platformErrorBody(131056));

    if (failure === undefined) {
      failureDetails = mediaProblem(url.origin, body, template);
      // Meta fetches linked media after accepting the send, so a bad link surfaces as a failed status.
      if (failureDetails) failure = 131053;
    }
    return accept(phoneNumberId, wabaId, body, template, failure, failureDetails);
  }

  return { handleSend };
}
