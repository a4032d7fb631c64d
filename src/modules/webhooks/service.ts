// Customer webhook subscriptions and their deliveries: signed, retried for about a day,
// at-least-once (receivers de-duplicate on the event id).
import type { Database, Statement } from "bun:sqlite";
import { createHmac } from "node:crypto";
import type { Clock } from "../../clock";
import { AppError } from "../../http/errors";
import { checkOutboundTarget, outboundTargetProblem, type Resolver } from "../../lib/net-safety";
import type { SecretBox } from "../../lib/secrets";
import { iso, MINUTE, HOUR } from "../../lib/time";
import { randomBase62 } from "../../lib/tokens";
import { VERSION } from "../../version";
import { eventEnvelope, EVENT_TYPES, type EventService, type EventType } from "../events/service";

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

interface SubscriptionRow {
  id: number;
  workspace_id: number;
  url: string;
  events: string;
  description: string;
  secret: string;
  status: "active" | "failing" | "disabled";
  consecutive_failures: number;
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

interface DueDelivery {
  id: string;
  subscription_id: number;
  event_id: string;
  attempts: number;
  url: string;
  secret: string;
  workspace_id: number;
  type: EventType;
  data: string;
  event_created_at: number;
}

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
  sqlite: Database;
  clock: Clock;
  events: EventService;
  /** Signing secrets are stored sealed: they must be used again, so they cannot be digests. */
  secrets: SecretBox;
  allowPrivate: boolean;
  fetch?: typeof fetch;
  /** How host names are resolved for the address check (tests inject one). */
  resolve?: Resolver;
  log: (message: string, error?: unknown) => void;
}

export function createWebhookService(deps: WebhookDeps) {
  const { sqlite, clock, events, secrets } = deps;
  const doFetch = deps.fetch ?? fetch;
  let stopping = false;

  const byId: Statement<SubscriptionRow, [number, number]> = sqlite.prepare(
    "SELECT * FROM webhook_subscription WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL",
  );
  const listAll: Statement<SubscriptionRow, [number]> = sqlite.prepare("SELECT * FROM webhook_subscription WHERE workspace_id = ? AND deleted_at IS NULL ORDER BY id");
  const countLive: Statement<{ n: number }, [number]> = sqlite.prepare("SELECT count(*) AS n FROM webhook_subscription WHERE workspace_id = ? AND deleted_at IS NULL");
  const insert: Statement<SubscriptionRow> = sqlite.prepare(
    "INSERT INTO webhook_subscription (workspace_id, url, events, description, secret, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'active', ?, ?) RETURNING *",
  );
  const DELIVERY_COLUMNS = `d.id, d.subscription_id, d.event_id, d.attempts, s.url, s.secret, e.workspace_id, e.type, e.data, e.created_at AS event_created_at
    FROM webhook_delivery d JOIN webhook_subscription s ON s.id = d.subscription_id JOIN event e ON e.id = d.event_id`;
  const due: Statement<DueDelivery, [number, number]> = sqlite.prepare(`
    SELECT ${DELIVERY_COLUMNS}
    WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND s.status = 'active' AND s.deleted_at IS NULL
    ORDER BY d.next_attempt_at, d.created_at LIMIT ?`);
  const oneDelivery: Statement<DueDelivery, [string]> = sqlite.prepare(`SELECT ${DELIVERY_COLUMNS} WHERE d.id = ?`);
  const claim = sqlite.prepare("UPDATE webhook_delivery SET status = 'delivering', attempts = attempts + 1 WHERE id = ? AND status = 'pending'");
  const insertAttempt = sqlite.prepare("INSERT INTO webhook_attempt (delivery_id, at, status_code, latency_ms, error) VALUES (?, ?, ?, ?, ?)");
  const markDelivered = sqlite.prepare("UPDATE webhook_delivery SET status = 'delivered', delivered_at = ?, last_status_code = ?, last_error = NULL WHERE id = ?");
  const markRetry = sqlite.prepare("UPDATE webhook_delivery SET status = 'pending', next_attempt_at = ?, last_status_code = ?, last_error = ? WHERE id = ?");
  const markGivenUp = sqlite.prepare("UPDATE webhook_delivery SET status = 'failed', last_status_code = ?, last_error = ? WHERE id = ?");
  const subscriptionOk = sqlite.prepare("UPDATE webhook_subscription SET consecutive_failures = 0 WHERE id = ?");
  const subscriptionFailed = sqlite.prepare("UPDATE webhook_subscription SET consecutive_failures = consecutive_failures + 1 WHERE id = ?");
  const subscriptionFailing = sqlite.prepare(
    "UPDATE webhook_subscription SET status = 'failing', failing_since = ?, updated_at = ? WHERE id = ? AND status = 'active'",
  );
  const cutOff: Statement<{ id: string }, []> = sqlite.prepare("SELECT id FROM webhook_delivery WHERE status = 'delivering'");
  const interrupted = sqlite.prepare("UPDATE webhook_delivery SET status = 'pending' WHERE status = 'delivering'");
  const dropPending = sqlite.prepare("UPDATE webhook_delivery SET status = 'failed', last_error = 'subscription deleted' WHERE subscription_id = ? AND status IN ('pending', 'delivering')");
  const resume = sqlite.prepare("UPDATE webhook_delivery SET next_attempt_at = ? WHERE subscription_id = ? AND status = 'pending'");
  const deliveriesOf: Statement<
    { id: string; event_id: string; type: string; status: string; attempts: number; next_attempt_at: number; created_at: number; delivered_at: number | null },
    [number, number, number]
  > = sqlite.prepare(`
    SELECT d.id, d.event_id, e.type, d.status, d.attempts, d.next_attempt_at, d.created_at, d.delivered_at
    FROM webhook_delivery d JOIN event e ON e.id = d.event_id
    WHERE d.subscription_id = ? ORDER BY d.created_at DESC, d.rowid DESC LIMIT ? OFFSET ?`);
  const deliveryCount: Statement<{ n: number }, [number]> = sqlite.prepare("SELECT count(*) AS n FROM webhook_delivery WHERE subscription_id = ?");
  const attemptsOf: Statement<{ at: number; status_code: number | null; latency_ms: number; error: string | null }, [string]> = sqlite.prepare(
    "SELECT at, status_code, latency_ms, error FROM webhook_attempt WHERE delivery_id = ? ORDER BY id",
  );

  function present(row: SubscriptionRow, withSecret = false) {
    return {
      webhook_id: row.id,
      url: row.url,
      events: JSON.parse(row.events) as string[],
      description: row.description,
      status: row.status,
      consecutive_failures: row.consecutive_failures,
      failing_since: iso(row.failing_since),
      ...(withSecret ? { secret: secrets.open(row.secret) } : { secret_hint: `…${secrets.open(row.secret).slice(-4)}` }),
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    };
  }

  function require(workspaceId: number, id: number): SubscriptionRow {
    const row = byId.get(workspaceId, id);
    if (!row) throw new AppError("not_found", `webhook ${id} not found`);
    return row;
  }

  async function checkUrl(url: string) {
    const problem = await outboundTargetProblem(url, deps.allowPrivate, deps.resolve);
    if (problem) throw new AppError("invalid_webhook_url", `Webhook url ${problem}`, { field: "url" });
  }

  function checkEvents(input: string[] | string): string[] {
    const list = input === "*" ? ["*"] : Array.isArray(input) ? [...new Set(input)] : [input];
    if (list.length === 0) throw new AppError("validation_error", "Invalid body field 'events': must name at least one event, or \"*\"", { field: "events", location: "body" });
    const unknown = list.filter((e) => e !== "*" && !(EVENT_TYPES as readonly string[]).includes(e));
    if (unknown.length) {
      throw new AppError("validation_error", `Invalid body field 'events': unknown event ${unknown.join(", ")}; known: ${EVENT_TYPES.join(", ")} or "*"`, {
        field: "events",
        location: "body",
        unknown,
      });
    }
    return list.includes("*") ? ["*"] : list;
  }

  /** One attempt: sign, POST with a timeout, no redirects, read at most a little of the answer. */
  async function attempt(d: DueDelivery): Promise<DeliveryResult> {
    const started = performance.now();
    // Checked again now (DNS may have changed), and the call goes to the very address checked.
    const checked = await checkOutboundTarget(d.url, deps.allowPrivate, deps.resolve);
    if (checked.problem !== null) return { delivered: false, statusCode: null, latencyMs: 0, error: `target refused: url ${checked.problem}` };
    const target = checked.target;
    const body = JSON.stringify(eventEnvelope(d.event_id, d.type, d.workspace_id, d.event_created_at, JSON.parse(d.data)));
    const timestamp = Math.floor(clock.now() / 1000);
    try {
      const res = await doFetch(target.url, {
        method: "POST",
        redirect: "manual",
        signal: AbortSignal.timeout(TIMEOUT_MS),
        ...(target.tls ? { tls: target.tls } : {}),
        headers: {
          ...target.headers,
          "content-type": "application/json",
          "user-agent": `Pigeon-Webhooks/${VERSION}`,
          "x-pigeon-event": d.event_id,
          "x-pigeon-event-type": d.type,
          "x-pigeon-delivery": d.id,
          "x-pigeon-signature": signWebhook(secrets.open(d.secret), timestamp, body),
        },
        body,
      });
      const snippet = await readLimited(res);
      const latencyMs = Math.round(performance.now() - started);
      if (res.status >= 200 && res.status < 300) return { delivered: true, statusCode: res.status, latencyMs, error: null };
      const redirect = res.status >= 300 && res.status < 400 ? " (redirects are not followed)" : "";
      return { delivered: false, statusCode: res.status, latencyMs, error: `HTTP ${res.status}${redirect}${snippet ? `: ${snippet.slice(0, 200)}` : ""}` };
    } catch (error) {
      const e = error as Error;
      const reason = e.name === "TimeoutError" ? `no answer within ${TIMEOUT_MS / 1000} s` : e.message;
      return { delivered: false, statusCode: null, latencyMs: Math.round(performance.now() - started), error: reason };
    }
  }

  function record(d: DueDelivery, r: DeliveryResult) {
    const now = clock.now();
    sqlite.transaction(() => {
      insertAttempt.run(d.id, now, r.statusCode, r.latencyMs, r.error);
      if (r.delivered) {
        markDelivered.run(now, r.statusCode, d.id);
        subscriptionOk.run(d.subscription_id);
        return;
      }
      subscriptionFailed.run(d.subscription_id);
      const attempts = d.attempts + 1;
      if (attempts >= MAX_DELIVERY_ATTEMPTS) {
        // A day of failures on one delivery: stop, and pause the subscription until re-enabled.
        markGivenUp.run(r.statusCode, r.error, d.id);
        subscriptionFailing.run(now, now, d.subscription_id);
      } else {
        markRetry.run(now + RETRY_LADDER_MS[attempts - 1], r.statusCode, r.error, d.id);
      }
    })();
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
          if (claim.run(list[i].id).changes !== 1) continue;
          const result = await attempt(list[i]);
          record(list[i], result);
          results[i] = result;
        }
      }),
    );
    return results;
  }

  return {
    present,

    async create(workspaceId: number, input: { url: string; events: string[] | string; description?: string }) {
      await checkUrl(input.url);
      const eventsList = checkEvents(input.events);
      if (countLive.get(workspaceId)!.n >= MAX_SUBSCRIPTIONS) {
        throw new AppError("conflict", `A workspace can have at most ${MAX_SUBSCRIPTIONS} webhooks`, { limit: MAX_SUBSCRIPTIONS });
      }
      const now = clock.now();
      const row = insert.get(workspaceId, input.url, JSON.stringify(eventsList), input.description ?? "", secrets.seal(`whsec_${randomBase62(32)}`), now, now)!;
      return present(row, true);
    },

    list: (workspaceId: number) => ({ webhooks: listAll.all(workspaceId).map((r) => present(r)) }),
    get: (workspaceId: number, id: number) => present(require(workspaceId, id)),

    async update(
      workspaceId: number,
      input: { webhook_id: number; url?: string; events?: string[] | string; description?: string; status?: "active" | "disabled"; rotate_secret?: boolean },
    ) {
      const row = require(workspaceId, input.webhook_id);
      if (input.url !== undefined) await checkUrl(input.url);
      const eventsList = input.events !== undefined ? checkEvents(input.events) : null;
      const now = clock.now();
      const set: string[] = ["updated_at = ?"];
      const args: (string | number | null)[] = [now];
      if (input.url !== undefined) set.push("url = ?"), args.push(input.url);
      if (eventsList) set.push("events = ?"), args.push(JSON.stringify(eventsList));
      if (input.description !== undefined) set.push("description = ?"), args.push(input.description);
      if (input.rotate_secret) set.push("secret = ?"), args.push(secrets.seal(`whsec_${randomBase62(32)}`));
      if (input.status !== undefined) {
        set.push("status = ?", "consecutive_failures = 0", "failing_since = NULL");
        args.push(input.status);
      }
      sqlite.transaction(() => {
        sqlite.run(`UPDATE webhook_subscription SET ${set.join(", ")} WHERE id = ?`, [...args, row.id]);
        // Re-enabled: what waited while it was failing goes out now.
        if (input.status === "active") resume.run(now, row.id);
      })();
      return present(require(workspaceId, row.id), input.rotate_secret === true);
    },

    remove(workspaceId: number, id: number) {
      const row = require(workspaceId, id);
      sqlite.transaction(() => {
        sqlite.run("UPDATE webhook_subscription SET deleted_at = ?, updated_at = ? WHERE id = ?", [clock.now(), clock.now(), row.id]);
        dropPending.run(row.id);
      })();
      return { webhook_id: id, deleted: true };
    },

    /** Sends a webhook.test event to one subscription now and reports how it went. */
    async test(workspaceId: number, id: number) {
      const row = require(workspaceId, id);
      const { eventId, deliveryIds } = events.emitTest(workspaceId, row.id, { message: "This is a test event from Pigeon", webhook_id: row.id });
      // Sent whatever the subscription's status, so its owner can see whether a fix worked.
      const [result] = await deliver([oneDelivery.get(deliveryIds[0])!]);
      if (!result) throw new AppError("service_unavailable", "Pigeon is stopping; the test event will be delivered after the restart");
      return { event_id: eventId, delivery_id: deliveryIds[0], delivered: result.delivered, status_code: result.statusCode, latency_ms: result.latencyMs, error: result.error };
    },

    deliveries(workspaceId: number, id: number, page = 1, limit = 20) {
      const row = require(workspaceId, id);
      const rows = deliveriesOf.all(row.id, limit, (page - 1) * limit).map((d) => ({
        delivery_id: d.id,
        event_id: d.event_id,
        event_type: d.type,
        status: d.status,
        attempts: attemptsOf.all(d.id).map((a) => ({ at: iso(a.at), status_code: a.status_code, latency_ms: a.latency_ms, error: a.error })),
        next_attempt_at: d.status === "pending" ? iso(d.next_attempt_at) : null,
        created_at: iso(d.created_at),
        delivered_at: iso(d.delivered_at),
      }));
      return { deliveries: rows, pagination: { page, limit, total: deliveryCount.get(row.id)!.n } };
    },

    /** webhooks:deliver — what is due, a few at a time. Safe to run twice. */
    async deliverDue(): Promise<number> {
      const list = due.all(clock.now(), BATCH);
      if (list.length === 0) return 0;
      await deliver(list);
      return list.length;
    },

    /**
     * At start-up: deliveries whose call a crash cut off are sent again (receivers de-duplicate on
     * the event id); each gets an attempt row saying so. Returns how many.
     */
    recoverInterrupted(): number {
      return sqlite.transaction(() => {
        const ids = cutOff.all().map((r) => r.id);
        const now = clock.now();
        for (const id of ids) insertAttempt.run(id, now, null, 0, INTERRUPTED);
        interrupted.run();
        return ids.length;
      })();
    },

    /** Shutting down: no new delivery starts; the calls in flight finish and are recorded. */
    stop(): void {
      stopping = true;
    },
  };
}

async function readLimited(res: Response): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < RESPONSE_LIMIT) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, RESPONSE_LIMIT));
}

export type WebhookService = ReturnType<typeof createWebhookService>;
