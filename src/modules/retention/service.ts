// Retention: what is finished and older than a cut-off is removed in small units of work, each
// sized to hold the database (and, on SQLite, the event loop) for a few milliseconds, with a turn of
// the event loop between them so requests go on being answered. Never a message still to be sent,
// never an opt-out; the hourly counts keep the statistics of what is removed.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { IDEMPOTENCY_WINDOW_MS } from "../../http/idempotency";
import { DAY, iso } from "../../lib/time";
import { SESSION_IDLE_MS } from "../users/service";
import type { RetentionRepository } from "./repository";

/** How long one unit of work may take before the next is made smaller. */
const BUDGET_MS = 8;
const MIN_PIECE = 1;
const MAX_PIECE = 1000;

export interface PruneReport {
  /** The cut-off: what was finished and created before it. */
  before: string;
  dry_run: boolean;
  notifications: number;
  notification_logs: number;
  thread_messages: number;
  threads: number;
  /** Received MMS attachments kept before the cut-off: their bytes go, their messages stay. */
  attachments: number;
  smsgate_messages: number;
  webhook_deliveries: number;
  webhook_attempts: number;
  events: number;
  sessions: number;
  tokens: number;
  phone_events: number;
  idempotency_keys: number;
  /**
   * What became of the freed space: `returned` (SQLite gave the pages back to the disk), `reused`
   * (an older SQLite database keeps them for new rows until `pigeon prune` runs with no server on
   * it), `converted` (that happened now: the file was rewritten), `autovacuum` (PostgreSQL's).
   */
  space: "returned" | "reused" | "converted" | "autovacuum" | "unchanged";
  pages_freed: number;
}

export interface RetentionDeps {
  storage: Storage;
  repo: RetentionRepository;
  clock: Clock;
  /** PIGEON_RETENTION_DAYS: 0 keeps everything. */
  days: number;
  log: (message: string, error?: unknown) => void;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export function createRetention(deps: RetentionDeps) {
  const { storage, repo, clock } = deps;
  let piece = 50;
  let running: Promise<PruneReport> | null = null;
  /** Set by stop(): a prune under way ends after its current unit of work (each is whole on its own). */
  let stopped = false;

  /**
   * Takes what `find` names and `remove`s it, a unit of work at a time, until a unit finds less
   * than it asked for. The size adapts: halved when a unit passed the budget, doubled when it took
   * under a third of it.
   */
  async function inPieces<T>(find: (limit: number) => Promise<T[]>, remove: (list: T[]) => Promise<void>): Promise<void> {
    for (;;) {
      const started = performance.now();
      const asked = piece;
      const found = await storage.transaction(async () => {
        const list = await find(asked);
        if (list.length > 0) await remove(list);
        return list.length;
      });
      const took = performance.now() - started;
      if (took > BUDGET_MS) piece = Math.max(MIN_PIECE, Math.floor(piece / 2));
      else if (took < BUDGET_MS / 3) piece = Math.min(MAX_PIECE, piece * 2);
      await nextTurn();
      if (found < asked || stopped) return;
    }
  }

  /** Gives SQLite's freed pages back to the disk, a few hundred at a time. */
  async function giveBack(convert: boolean): Promise<Pick<PruneReport, "space" | "pages_freed">> {
    const state = repo.vacuumState();
    if (!state) return { space: "autovacuum", pages_freed: 0 };
    if (!state.incremental) {
      if (!convert) return { space: state.freePages > 0 ? "reused" : "unchanged", pages_freed: 0 };
      repo.makeIncremental();
      return { space: "converted", pages_freed: state.freePages };
    }
    let pages = 256;
    let freed = 0;
    for (let left = state.freePages; left > 0 && !stopped; ) {
      const started = performance.now();
      repo.vacuumStep(Math.min(pages, left));
      const now = repo.vacuumState()?.freePages ?? 0;
      if (now >= left) break;
      freed += left - now;
      left = now;
      const took = performance.now() - started;
      if (took > BUDGET_MS) pages = Math.max(16, Math.floor(pages / 2));
      else if (took < BUDGET_MS / 3) pages = Math.min(4096, pages * 2);
      await nextTurn();
    }
    return { space: freed > 0 ? "returned" : "unchanged", pages_freed: freed };
  }

  async function run(before: number, options: { dryRun?: boolean; convert?: boolean }): Promise<PruneReport> {
    const now = clock.now();
    const idleSince = now - SESSION_IDLE_MS;
    const idempotentSince = now - IDEMPOTENCY_WINDOW_MS;
    if (options.dryRun) {
      const counted = await repo.countBefore(before, now, idleSince, idempotentSince);
      return { before: iso(before), dry_run: true, ...counted, space: "unchanged", pages_freed: 0 };
    }
    const report: PruneReport = {
      before: iso(before),
      dry_run: false,
      notifications: 0,
      notification_logs: 0,
      thread_messages: 0,
      threads: 0,
      attachments: 0,
      smsgate_messages: 0,
      webhook_deliveries: 0,
      webhook_attempts: 0,
      events: 0,
      sessions: 0,
      tokens: 0,
      phone_events: 0,
      idempotency_keys: 0,
      space: "unchanged",
      pages_freed: 0,
    };
    for (const workspace of await repo.workspaceIds()) {
      await inPieces(
        (limit) => repo.findFinished(workspace, before, limit),
        async (list) => {
          const removed = await repo.removeNotifications(list);
          for (const [k, v] of Object.entries(removed)) report[k as keyof typeof removed] += v;
        },
      );
    }
    for (const workspace of await repo.workspaceIds()) {
      await inPieces(
        (limit) => repo.findOldAttachments(workspace, before, limit),
        async (list) => {
          report.attachments += await repo.removeAttachments(list);
        },
      );
    }
    for (const subscription of await repo.subscriptionIds()) {
      await inPieces(
        (limit) => repo.findFinishedDeliveries(subscription, before, limit),
        async (list) => {
          const removed = await repo.removeDeliveries(list);
          report.webhook_deliveries += removed.deliveries;
          report.webhook_attempts += removed.attempts;
        },
      );
    }
    for (const workspace of await repo.workspaceIds()) {
      await inPieces(
        (limit) => repo.findSpentEvents(workspace, before, limit),
        async (list) => {
          report.events += await repo.removeEvents(list);
        },
      );
    }
    // Expired rows go whatever the cut-off; phone events (kept to spot a re-delivery) by it.
    for (;;) {
      const limit = Math.max(piece, 100);
      const removed = await storage.transaction(() => repo.removeExpired(now, idleSince, before, limit));
      report.sessions += removed.sessions;
      report.tokens += removed.tokens;
      report.phone_events += removed.phone_events;
      await nextTurn();
      if (stopped || (removed.sessions < limit && removed.tokens < limit && removed.phone_events < limit)) break;
    }
    report.idempotency_keys = await inPiecesCount((limit) => repo.removeIdempotency(idempotentSince, limit));
    Object.assign(report, await giveBack(options.convert === true));
    return report;
  }

  /** Calls `remove` (which removes at most `limit` rows and says how many) until it removes fewer. */
  async function inPiecesCount(remove: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    for (;;) {
      const limit = Math.max(piece, 100);
      const n = await storage.transaction(() => remove(limit));
      total += n;
      await nextTurn();
      if (n < limit || stopped) return total;
    }
  }

  return {
    days: deps.days,
    /**
     * Removes what finished before `before` (ms) and everything expired; with `dryRun` only counts
     * it. `convert` (the CLI, when no server holds the database) lets an older SQLite database be
     * rewritten once so it can give space back. One prune at a time: a second call waits for the first.
     */
    async prune(before: number, options: { dryRun?: boolean; convert?: boolean } = {}): Promise<PruneReport> {
      while (running) await running.catch(() => undefined);
      const current = run(before, options);
      running = current;
      try {
        return await current;
      } finally {
        running = null;
      }
    },
    /** The server is stopping: a prune under way ends after its current unit of work. */
    stop(): void {
      stopped = true;
    },
    /** retention:prune, hourly: with PIGEON_RETENTION_DAYS set, what finished more than that many days ago. */
    async tick(): Promise<void> {
      if (deps.days <= 0) return;
      const report = await this.prune(clock.now() - deps.days * DAY);
      if (report.notifications > 0 || report.webhook_deliveries > 0 || report.events > 0)
        deps.log(
          `retention removed ${report.notifications} notifications, ${report.webhook_deliveries} webhook deliveries and ${report.events} events from before ${report.before}`,
        );
    },
  };
}

export type Retention = ReturnType<typeof createRetention>;
