// The server's metrics for Prometheus (GET /metrics). Counters and histograms live in this process:
// each server sharing a PostgreSQL database counts what it did itself, and Prometheus adds them up.
// Gauges of the queue, the devices and the webhook outbox are read from the database at each
// scrape, so every server reports the same shared numbers for them.
import { ROUTE_NAMES, type DeviceKind } from "../../core/kinds";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { RequestDone } from "../../http/foundation";
import { VERSION } from "../../version";
import type { BackupStatus } from "../system/backups";
import { allowedSilence } from "../devices/service";
import type { NotificationStatus } from "../notifications/state";
import type { ModuleListeners } from "../listeners";
import { Histogram, Page } from "./exposition";
import { createMetricsRepository, type DeviceState } from "./repository";

/** Request durations, seconds: a send answers in about a millisecond, a dashboard page in tens. */
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Provider calls, seconds, up to the channels' 15-second timeout and past it. */
const DISPATCH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30];

const STATUSES: readonly NotificationStatus[] = ["pending", "sent", "delivered", "failed", "cancelled"];
const DEVICE_STATES: readonly DeviceState[] = ["online", "offline", "blocked", "inactive"];
export const WEBHOOK_RESULTS = ["delivered", "retry", "failed"] as const;
export type WebhookResult = (typeof WEBHOOK_RESULTS)[number];

/** The method label: the usual methods by name, anything else "other", so no caller can add series. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"];
const METHOD_INDEX = new Map(METHODS.slice(0, -1).map((m, i) => [m, i]));
const OTHER_METHOD = METHODS.length - 1;

/** When this process started, in seconds since the epoch. */
const STARTED_AT = Math.round((Date.now() / 1000 - process.uptime()) * 1000) / 1000;

/** A route's requests, keyed by method index × 1000 + status (a number: nothing is built per request). */
interface RouteStats {
  requests: Map<number, number>;
  duration: Histogram;
}
const newRouteStats = (): RouteStats => ({ requests: new Map(), duration: new Histogram(HTTP_BUCKETS) });
const newDispatchHistogram = () => new Histogram(DISPATCH_BUCKETS);
const newStatusCounts = () => new Map(STATUSES.map((s) => [s, 0]));

/** The value under `key`, made and put there first when missing. */
function entry<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

export interface MetricsDeps {
  storage: Storage;
  clock: Clock;
  /** The routes (device kinds) this server carries, and those its worker dispatches. */
  routes: readonly DeviceKind[];
  dispatchedRoutes: readonly DeviceKind[];
  offlineAfterMs: number;
  /** Scheduled backups' status; null when they are off (no PIGEON_BACKUP_DIR, or PostgreSQL). */
  backups: () => BackupStatus | null;
}

export function createMetricsService(deps: MetricsDeps) {
  const { storage, clock } = deps;
  const repo = createMetricsRepository(storage);
  const channel = (route: DeviceKind) => ROUTE_NAMES[route] ?? route;

  const http = new Map<string, RouteStats>();
  const notifications = new Map<DeviceKind, Map<NotificationStatus, number>>();
  const dispatch = new Map<DeviceKind, Histogram>();
  const webhooks = new Map<WebhookResult, number>(WEBHOOK_RESULTS.map((r) => [r, 0]));
  /** MMS attachment bytes received by this process: kept, or dropped (a cap, bad data). */
  const attachmentBytes = { kept: 0, dropped: 0 };
  // Every series that can be known ahead is there from the start at 0, so rate() sees its first rise.
  for (const route of deps.routes) notifications.set(route, newStatusCounts());
  for (const route of deps.dispatchedRoutes) dispatch.set(route, newDispatchHistogram());

  function reached(route: DeviceKind, status: NotificationStatus): void {
    const byStatus = entry(notifications, route, newStatusCounts);
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }

  /** What other modules add to the page (their own families), in the order they were added. */
  const sections: ((page: Page) => void | Promise<void>)[] = [];

  /** The page: counters as they stand, gauges read now. */
  async function render(): Promise<string> {
    const now = clock.now();
    const silence = (pushToken: string | null) => allowedSilence({ pushToken }, deps.offlineAfterMs);
    const [backlog, devices, storedAttachmentBytes] = await Promise.all([
      repo.backlog(now),
      repo.devices({ stream: now - silence(null), polling: now - silence("polling") }),
      repo.attachmentBytes(),
    ]);
    const page = new Page();

    page
      .family("pigeon_build_info", "gauge", "Always 1; the version of Pigeon this server runs.")
      .sample("pigeon_build_info", { version: VERSION }, 1);

    page.family("pigeon_http_requests_total", "counter", "HTTP requests answered, by method, route pattern and status.");
    for (const [route, stats] of http)
      for (const [key, n] of stats.requests)
        page.sample("pigeon_http_requests_total", { method: METHODS[Math.floor(key / 1000)], route, status: String(key % 1000) }, n);
    page.family("pigeon_http_request_duration_seconds", "histogram", "Time from a request's arrival to its answer, by route pattern.");
    for (const [route, stats] of http) page.histogram("pigeon_http_request_duration_seconds", { route }, stats.duration);

    page.family("pigeon_notifications_total", "counter", "Notification states reached in this process, by channel and status.");
    for (const [route, byStatus] of notifications)
      for (const [status, n] of byStatus) page.sample("pigeon_notifications_total", { channel: channel(route), status }, n);

    page.family("pigeon_queue_depth", "gauge", "Notifications queued, by route: due now, or waiting for a later time.");
    const queue = new Map(deps.routes.map((r) => [r, { due: 0, waiting: 0 }]));
    for (const q of backlog.queue) queue.set(q.route, { due: q.due, waiting: q.waiting });
    for (const [route, q] of queue) {
      page.sample("pigeon_queue_depth", { route: channel(route), state: "due" }, q.due);
      page.sample("pigeon_queue_depth", { route: channel(route), state: "waiting" }, q.waiting);
    }

    page.family("pigeon_dispatch_duration_seconds", "histogram", "Provider calls made by the worker, by channel.");
    for (const [route, h] of dispatch) page.histogram("pigeon_dispatch_duration_seconds", { channel: channel(route) }, h);

    page.family("pigeon_devices", "gauge", "Devices, by kind and state (online, offline, blocked, inactive).");
    const byKind = new Map<string, Map<string, number>>();
    for (const kind of deps.routes) byKind.set(kind, new Map(DEVICE_STATES.map((state) => [state, 0])));
    for (const d of devices) entry(byKind, d.kind, () => new Map()).set(d.state, d.n);
    for (const [kind, states] of byKind) for (const [state, n] of states) page.sample("pigeon_devices", { kind, state }, n);

    page.family("pigeon_webhook_deliveries_total", "counter", "Webhook delivery attempts made in this process, by result.");
    for (const [result, n] of webhooks) page.sample("pigeon_webhook_deliveries_total", { result }, n);
    page.family("pigeon_webhook_outbox_pending", "gauge", "Webhook deliveries not yet delivered or given up.");
    page.sample("pigeon_webhook_outbox_pending", {}, backlog.outbox);

    page.family(
      "pigeon_mms_attachment_received_bytes_total",
      "counter",
      "Bytes of received MMS attachments in this process, by outcome: kept, or dropped (over a cap, or the part was refused).",
    );
    for (const [outcome, n] of Object.entries(attachmentBytes)) page.sample("pigeon_mms_attachment_received_bytes_total", { outcome }, n);
    page.family("pigeon_mms_attachment_stored_bytes", "gauge", "Bytes of received MMS attachments stored now, every workspace's.");
    page.sample("pigeon_mms_attachment_stored_bytes", {}, storedAttachmentBytes);

    // Only with scheduled backups on; the sample once one has succeeded.
    const backup = deps.backups();
    if (backup) {
      page.family("pigeon_backup_last_success_timestamp_seconds", "gauge", "When the newest scheduled backup was taken.");
      if (backup.last_success_at)
        page.sample("pigeon_backup_last_success_timestamp_seconds", {}, Date.parse(backup.last_success_at) / 1000);
    }

    for (const section of sections) await section(page);
    const cpu = process.cpuUsage();
    page.family("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.");
    page.sample("process_cpu_seconds_total", {}, (cpu.user + cpu.system) / 1e6);
    page.family("process_resident_memory_bytes", "gauge", "Resident memory size, in bytes.");
    page.sample("process_resident_memory_bytes", {}, process.memoryUsage.rss());
    page.family("process_start_time_seconds", "gauge", "When the process started, in seconds since the epoch.");
    page.sample("process_start_time_seconds", {}, STARTED_AT);
    return page.text();
  }

  return {
    render,

    /** Adds a module's families to every page (a listener's own counters and gauges). */
    section(write: (page: Page) => void | Promise<void>): void {
      sections.push(write);
    },

    /** An answered request (services.requestFinished): on the hot path, so it only adds numbers. */
    requestFinished(done: RequestDone): void {
      const stats = entry(http, done.route, newRouteStats);
      const status = done.status >= 100 && done.status <= 599 ? done.status : 0;
      const key = (METHOD_INDEX.get(done.method) ?? OTHER_METHOD) * 1000 + status;
      stats.requests.set(key, (stats.requests.get(key) ?? 0) + 1);
      stats.duration.observe(done.durationMs / 1000);
    },

    /** A provider call the worker made for `route`, and how long it took. */
    dispatched(route: DeviceKind, seconds: number): void {
      entry(dispatch, route, newDispatchHistogram).observe(seconds);
    },

    /** A received MMS's attachments once stored: the bytes that came, and how many of them were kept. */
    attachmentsReceived(received: number, kept: number): void {
      attachmentBytes.kept += kept;
      attachmentBytes.dropped += received - kept;
    },

    /** A webhook delivery attempt's result: delivered, to be retried, or given up (failed). */
    webhookDelivery(result: WebhookResult): void {
      webhooks.set(result, (webhooks.get(result) ?? 0) + 1);
    },

    /**
     * Counts each state a notification reaches, once its unit of work has committed: `pending` when
     * a send is accepted (or a failover moves it to another route), then each status change.
     */
    listeners: {
      accepted: (accepted) => {
        for (const a of accepted) reached(a.prepared.device.kind, "pending");
      },
      transitions: (changes) => {
        if (changes.length === 0) return;
        storage.afterCommit(() => {
          for (const c of changes) reached(c.before.route, c.to);
        });
      },
    } satisfies ModuleListeners,
  };
}

export type MetricsService = ReturnType<typeof createMetricsService>;
