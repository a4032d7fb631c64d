// Customer webhook subscriptions and their deliveries: signed, retried for about a day,
// at-least-once (receivers de-duplicate on the event id).
import type { Cluster } from "../../core/cluster";
import { createHmac } from "node:crypto";
import type { Clock } from "../../clock";
import { AppError } from "../../core/errors";
import { checkOutboundTarget, outboundTargetProblem, postToTarget, type Resolver } from "../../lib/net-safety";
import type { SecretBox } from "../../lib/secrets";
import { iso, MINUTE, HOUR } from "../../lib/time";
import { randomBase62 } from "../../lib/tokens";
import { VERSION } from "../../version";
import { eventEnvelope, EVENT_TYPES, type EventService, type EventType } from "../events/service";
import type { Storage } from "../../db/storage";
import { createWebhookRepository } from "./repository";
import type { DueDelivery, Subscription } from "./model";

/** Waits before retry n (after the nth failed attempt): about a day in all, then we give up. */
export const RETRY_LADDER_MS = [30_000, 2 * MINUTE, 10 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR, 8 * HOUR];
export const MAX_DELIVERY_ATTEMPTS = RETRY_LADDER_MS.length + 1;
const TIMEOUT_MS = 10_000;
/** Of a receiver's answer we keep only the start; nobody needs a megabyte of error page. */
const RESPONSE_LIMIT = 4096;
const BATCH = 20;
const CONCURRENCY = 5;
const MAX_SUBSCRIPTIONS = 25;
/** The error of the attempt row written for a call the server's stop cut off. */
export const INTERRUPTED = "interrupted: the server stopped during this attempt";

export interface DeliveryResult {
  delivered: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

/** `X-Pigeon-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>`. */
export function signWebhook(secret: string, timestamp: number, rawBody: string): string {
  return `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${rawBody}`).digest("hex")}`;
}

export interface WebhookDeps {
  storage: Storage;
  clock: Clock;
  events: EventService;
  /** Signing secrets are stored sealed: they must be used again, so they cannot be digests. */
  secrets: SecretBox;
  allowPrivate: boolean;
  fetch?: typeof fetch;
  /** How host names are resolved for the address check (tests inject one). */
  resolve?: Resolver;
  log: (message: string, error?: unknown) => void;
  /** This server among those sharing the database: deliveries it claims carry its id. */
  cluster: Cluster;
  /** Told each attempt's result once it is recorded (the metrics): delivered, retry, or failed (given up). */
  onDelivery?: (result: "delivered" | "retry" | "failed") => void;
}

/**
 * Another shape of delivery than Pigeon's (SMSGate's, for webhooks registered through its API): the
 * body and signature headers for one delivery, or null when the event is not for this subscription
 * (another phone's, an MMS for an SMS webhook), which then counts as done without a call.
 */
export type DeliveryFormat = (
  d: DueDelivery,
  timestamp: number,
) => { body: string; headers: Record<string, string> } | null | Promise<{ body: string; headers: Record<string, string> } | null>;

export function createWebhookService(deps: WebhookDeps) {
  const { clock, events, secrets, cluster } = deps;
  const { storage } = deps;
  const repo = createWebhookRepository(storage);
  const doFetch = deps.fetch ?? fetch;
  const formats = new Map<string, DeliveryFormat>();
  let stopping = false;

  function present(row: Subscription, withSecret = false) {
    return {
      webhook_id: row.id,
      url: row.url,
      events: row.events,
      description: row.description,
      status: row.status,
      consecutive_failures: row.consecutiveFailures,
      failing_since: iso(row.failingSince),
      ...(withSecret ? { secret: secrets.open(row.secret) } : { secret_hint: `…${secrets.open(row.secret).slice(-4)}` }),
      created_at: iso(row.createdAt),
      updated_at: iso(row.updatedAt),
    };
  }

  async function require(workspaceId: number, id: number): Promise<Subscription> {
    const row = await repo.subscription(workspaceId, id);
    if (!row) throw new AppError("not_found", `webhook ${id} not found`);
    return row;
  }

  async function checkUrl(url: string) {
    const problem = await outboundTargetProblem(url, deps.allowPrivate, deps.resolve);
    if (problem) throw new AppError("invalid_webhook_url", `Webhook url ${problem}`, { field: "url" });
  }

  function checkEvents(input: string[] | string): string[] {
    const list = input === "*" ? ["*"] : Array.isArray(input) ? [...new Set(input)] : [input];
    if (list.length === 0)
      throw new AppError("validation_error", "Invalid body field 'events': must name at least one event, or \"*\"", {
        field: "events",
        location: "body",
      });
    const unknown = list.filter((e) => e !== "*" && !(EVENT_TYPES as readonly string[]).includes(e));
    if (unknown.length) {
      throw new AppError(
        "validation_error",
        `Invalid body field 'events': unknown event ${unknown.join(", ")}; known: ${EVENT_TYPES.join(", ")} or "*"`,
        {
          field: "events",
          location: "body",
          unknown,
        },
      );
    }
    return list.includes("*") ? ["*"] : list;
  }

  /** One attempt: sign, POST with a timeout, no redirects, read at most a little of the answer. */
  async function attempt(d: DueDelivery): Promise<DeliveryResult> {
    const started = performance.now();
    // Checked again now (DNS may have changed), and the call goes to the very address checked.
    const checked = await checkOutboundTarget(d.url, deps.allowPrivate, deps.resolve);
    if (checked.problem !== null)
      return { delivered: false, statusCode: null, latencyMs: 0, error: `target refused: url ${checked.problem}` };
    const target = checked.target;
    const timestamp = Math.floor(clock.now() / 1000);
    let body: string;
    let signed: Record<string, string>;
    if (d.format === "pigeon") {
      body = JSON.stringify(eventEnvelope(d.eventId, d.type as EventType, d.workspaceId, d.eventCreatedAt, d.data));
      signed = {
        "x-pigeon-event": d.eventId,
        "x-pigeon-event-type": d.type,
        "x-pigeon-delivery": d.id,
        "x-pigeon-signature": signWebhook(secrets.open(d.secret), timestamp, body),
      };
    } else {
      const shaped = await formats.get(d.format)?.(d, timestamp);
      if (shaped === undefined) return { delivered: false, statusCode: null, latencyMs: 0, error: `no delivery format ${d.format}` };
      if (shaped === null) return { delivered: true, statusCode: null, latencyMs: 0, error: null };
      ({ body, headers: signed } = shaped);
    }
    try {
      const res = await postToTarget(
        doFetch,
        target,
        { "content-type": "application/json", "user-agent": `Pigeon-Webhooks/${VERSION}`, ...signed },
        body,
        TIMEOUT_MS,
      );
      const snippet = await readLimited(res);
      const latencyMs = Math.round(performance.now() - started);
      if (res.status >= 200 && res.status < 300) return { delivered: true, statusCode: res.status, latencyMs, error: null };
      const redirect = res.status >= 300 && res.status < 400 ? " (redirects are not followed)" : "";
      return {
        delivered: false,
        statusCode: res.status,
        latencyMs,
        error: `HTTP ${res.status}${redirect}${snippet ? `: ${snippet.slice(0, 200)}` : ""}`,
      };
    } catch (error) {
      const e = error as Error;
      const reason = e.name === "TimeoutError" ? `no answer within ${TIMEOUT_MS / 1000} s` : e.message;
      return { delivered: false, statusCode: null, latencyMs: Math.round(performance.now() - started), error: reason };
    }
  }

  function record(d: DueDelivery, r: DeliveryResult): Promise<void> {
    const now = clock.now();
    return storage.transaction(async () => {
      await repo.insertAttempt(d.id, { at: now, statusCode: r.statusCode, latencyMs: r.latencyMs, error: r.error });
      const told = (result: "delivered" | "retry" | "failed") => storage.afterCommit(() => deps.onDelivery?.(result));
      if (r.delivered) {
        await repo.markDelivered(d.id, now, r.statusCode);
        await repo.subscriptionSucceeded(d.subscriptionId);
        // An event another format does not send (statusCode null) was never called for: not counted.
        if (r.statusCode !== null) told("delivered");
        return;
      }
      await repo.subscriptionFailedOnce(d.subscriptionId);
      const attempts = d.attempts + 1;
      if (attempts >= MAX_DELIVERY_ATTEMPTS) {
        // A day of failures on one delivery: stop, and pause the subscription until re-enabled.
        await repo.markGivenUp(d.id, r.statusCode, r.error);
        await repo.markSubscriptionFailing(d.subscriptionId, now);
        told("failed");
      } else {
        await repo.markRetry(d.id, now + RETRY_LADDER_MS[attempts - 1], r.statusCode, r.error);
        told("retry");
      }
    });
  }

  /**
   * Each delivery is marked `delivering` (committed) only just before its own call, so after a
   * crash the ones left `delivering` are exactly the calls that were cut off mid-flight: only those
   * can reach a receiver twice. Stopping takes no new delivery; what waits stays pending.
   */
  async function deliver(list: DueDelivery[]): Promise<(DeliveryResult | null)[]> {
    const results: (DeliveryResult | null)[] = list.map(() => null);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, list.length) }, async () => {
        while (next < list.length && !stopping) {
          const i = next++;
          if (!(await repo.claimDelivery(list[i].id, cluster.id))) continue;
          const result = await attempt(list[i]);
          await record(list[i], result);
          results[i] = result;
        }
      }),
    );
    return results;
  }

  return {
    present,

    /** Registers how deliveries of another format are shaped and signed. */
    addFormat(name: string, format: DeliveryFormat) {
      formats.set(name, format);
    },

    async create(
      workspaceId: number,
      input: {
        url: string;
        events: string[] | string;
        description?: string;
        /** Subscribed to no event type: it gets only what is addressed to it (an inbound rule's matches). */
        addressedOnly?: boolean;
      } & Partial<Pick<Subscription, "format" | "externalId" | "smsgateEvent" | "smsgateDeviceId">>,
    ) {
      await checkUrl(input.url);
      const eventsList = input.addressedOnly ? [] : checkEvents(input.events);
      if ((await repo.countSubscriptions(workspaceId)) >= MAX_SUBSCRIPTIONS) {
        throw new AppError("conflict", `A workspace can have at most ${MAX_SUBSCRIPTIONS} webhooks`, { limit: MAX_SUBSCRIPTIONS });
      }
      const now = clock.now();
      const row = await repo.insertSubscription({
        workspaceId,
        url: input.url,
        events: eventsList,
        description: input.description ?? "",
        format: input.format ?? "pigeon",
        externalId: input.externalId ?? null,
        smsgateEvent: input.smsgateEvent ?? null,
        smsgateDeviceId: input.smsgateDeviceId ?? null,
        secret: secrets.seal(`whsec_${randomBase62(32)}`),
        createdAt: now,
        updatedAt: now,
      });
      return present(row, true);
    },

    list: async (workspaceId: number) => ({ webhooks: (await repo.subscriptions(workspaceId)).map((r) => present(r)) }),
    get: async (workspaceId: number, id: number) => present(await require(workspaceId, id)),

    async update(
      workspaceId: number,
      input: {
        webhook_id: number;
        url?: string;
        events?: string[] | string;
        description?: string;
        status?: "active" | "disabled";
        rotate_secret?: boolean;
      },
    ) {
      const row = await require(workspaceId, input.webhook_id);
      if (input.url !== undefined) await checkUrl(input.url);
      const eventsList = input.events !== undefined ? checkEvents(input.events) : null;
      const now = clock.now();
      const change = {
        updatedAt: now,
        ...(input.url !== undefined ? { url: input.url } : {}),
        ...(eventsList ? { events: eventsList } : {}),
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(input.rotate_secret ? { secret: secrets.seal(`whsec_${randomBase62(32)}`) } : {}),
        // A status set by hand starts the failure count afresh.
        ...(input.status !== undefined ? { status: input.status, consecutiveFailures: 0, failingSince: null } : {}),
      };
      await storage.transaction(async () => {
        await repo.updateSubscription(row.id, change);
        // Re-enabled: what waited while it was failing goes out now.
        if (input.status === "active") await repo.resumePendingOf(row.id, now);
      });
      return present(await require(workspaceId, row.id), input.rotate_secret === true);
    },

    async remove(workspaceId: number, id: number) {
      const row = await require(workspaceId, id);
      await storage.transaction(async () => {
        await repo.markSubscriptionDeleted(row.id, clock.now());
        await repo.failPendingOf(row.id);
      });
      return { webhook_id: id, deleted: true };
    },

    /** Sends a webhook.test event to one subscription now and reports how it went. */
    async test(workspaceId: number, id: number) {
      const row = await require(workspaceId, id);
      const { eventId, deliveryIds } = await events.emitTest(workspaceId, row.id, {
        message: "This is a test event from Pigeon",
        webhook_id: row.id,
      });
      // Sent whatever the subscription's status, so its owner can see whether a fix worked.
      const [result] = await deliver([(await repo.delivery(deliveryIds[0]))!]);
      if (!result) throw new AppError("service_unavailable", "Pigeon is stopping; the test event will be delivered after the restart");
      return {
        event_id: eventId,
        delivery_id: deliveryIds[0],
        delivered: result.delivered,
        status_code: result.statusCode,
        latency_ms: result.latencyMs,
        error: result.error,
      };
    },

    async deliveries(workspaceId: number, id: number, page = 1, limit = 20) {
      const row = await require(workspaceId, id);
      const rows = [];
      for (const d of await repo.deliveriesOf(row.id, limit, (page - 1) * limit)) {
        const attempts = await repo.attemptsOf(d.id);
        rows.push({
          delivery_id: d.id,
          event_id: d.eventId,
          event_type: d.type,
          status: d.status,
          attempts: attempts.map((a) => ({ at: iso(a.at), status_code: a.statusCode, latency_ms: a.latencyMs, error: a.error })),
          next_attempt_at: d.status === "pending" ? iso(d.nextAttemptAt) : null,
          created_at: iso(d.createdAt),
          delivered_at: iso(d.deliveredAt),
        });
      }
      return { deliveries: rows, pagination: { page, limit, total: await repo.countDeliveriesOf(row.id) } };
    },

    /** webhooks:deliver — what is due, a few at a time. Safe to run twice. */
    async deliverDue(): Promise<number> {
      const list = await repo.dueDeliveries(clock.now(), BATCH);
      if (list.length === 0) return 0;
      await deliver(list);
      return list.length;
    },

    /**
     * At start-up: deliveries whose call a crash cut off are sent again (receivers de-duplicate on
     * the event id); each gets an attempt row saying so. Returns how many.
     */
    recoverInterrupted(): Promise<number> {
      return storage.transaction(async () => {
        const now = clock.now();
        let released = 0;
        for (const id of await repo.abandonedDeliveries(now, cluster.abandoned)) {
          if (!(await repo.releaseDelivering(id))) continue;
          await repo.insertAttempt(id, { at: now, statusCode: null, latencyMs: 0, error: INTERRUPTED });
          released++;
        }
        return released;
      });
    },

    /** Shutting down: no new delivery starts; the calls in flight finish and are recorded. */
    stop(): void {
      stopping = true;
    },
  };
}

/** The start of an answer's body, at most `limit` bytes (the rest is not read). */
export async function readLimited(res: Response, limit = RESPONSE_LIMIT): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, limit));
}

export type WebhookService = ReturnType<typeof createWebhookService>;
