// The notification state machine. Every status change anywhere (worker, provider callbacks, the
// phone, the chat-app platform, cancel) goes through transition(), which keeps status monotonic,
// writes the log row, refunds credits on failure or cancel, and calls the listeners (events,
// threads) inside the same unit of work.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { CreditService } from "../credits/service";
import { createStatusRepository } from "./repository";
import type { MoveTo, NotificationRecord, NotificationStatus, Stage } from "./model";

export type { MoveTo, NotificationRecord, NotificationStatus, Stage };

/**
 * Status only moves forward: pending → sent → delivered; failed may follow pending or sent (a
 * carrier can reject after the provider accepted); cancelled only follows pending. A repeat, or a
 * report that arrives after a later one, changes nothing. A message awaiting approval goes to
 * pending when approved (the approval module's compare-and-set, not a transition), or to failed
 * (rejected, expired) or cancelled; no channel has it, so nothing reports it sent.
 */
export function canMove(from: NotificationStatus, to: NotificationStatus): boolean {
  switch (from) {
    case "awaiting_approval":
      return to === "pending" || to === "failed" || to === "cancelled";
    case "pending":
      return to !== "pending";
    case "sent":
      return to === "delivered" || to === "failed";
    default:
      return false;
  }
}

export interface TransitionOptions {
  at?: number;
  externalId?: string | null;
  errorCode?: string | null;
  reason?: string | null;
  /** What the log row says happened, e.g. "provider accepted", "status callback". */
  detail?: string | null;
  /**
   * A paired phone reporting on a message it already held when it was cancelled: what the phone
   * did is the truth, so it replaces the unconfirmed cancellation.
   */
  overridesCancel?: boolean;
  /** A failure after which the channel may still have sent it (an attempt cut off): no failover. */
  mayHaveGone?: boolean;
}

/**
 * Asked before a notification fails: true when it moved to another route instead (failover), so
 * it is not failed. Runs inside the transition's transaction.
 */
export type FailoverHook = (
  before: NotificationRecord,
  failure: { errorCode: string | null; reason: string | null; mayHaveGone?: boolean },
) => Promise<boolean>;

export type TransitionListener = (before: NotificationRecord, to: MoveTo, opts: TransitionOptions) => void | Promise<void>;

/** The changes of one unit of work, for a listener that handles them together. */
export type TransitionsListener = (changes: { before: NotificationRecord; to: MoveTo; opts: TransitionOptions }[]) => void | Promise<void>;

/** One move asked of transitionMany. */
export interface TransitionAsk {
  id: number;
  to: MoveTo;
  opts?: TransitionOptions;
}

const STAGE_AFTER: Record<NotificationStatus, Stage> = {
  awaiting_approval: "held",
  pending: "queued",
  sent: "handed",
  delivered: "done",
  failed: "done",
  cancelled: "done",
};

/** What a log line says besides its event. */
export interface LogFields {
  status?: string | null;
  errorCode?: string | null;
  detail?: string | null;
  at?: number;
}

export function createNotificationState(storage: Storage, clock: Clock, credits: CreditService) {
  const repo = createStatusRepository(storage);

  const listeners: TransitionListener[] = [];
  const batchListeners: TransitionsListener[] = [];
  let failover: FailoverHook | null = null;

  function log(id: number, event: string, fields: LogFields = {}): Promise<void> {
    return logMany([{ id, event, fields }]);
  }

  /** Several log lines at once (a bulk request's), in one statement where the dialect makes that pay. */
  function logMany(lines: { id: number; event: string; fields: LogFields }[]): Promise<void> {
    const now = clock.now();
    return repo.insertLogs(
      lines.map(({ id, event, fields }) => ({
        notificationId: id,
        at: fields.at ?? now,
        event,
        status: fields.status ?? null,
        errorCode: fields.errorCode ?? null,
        detail: fields.detail ?? null,
      })),
    );
  }

  /** Moves a notification to `to` if the rules allow; returns whether anything changed. */
  async function transition(id: number, to: MoveTo, opts: TransitionOptions = {}): Promise<boolean> {
    return (await transitionMany([{ id, to, opts }]))[0];
  }

  /**
   * Several moves in one unit of work (a batch of outcomes), each as transition() makes it: the
   * rows read in one statement, moved in one a target status (on PostgreSQL), their log lines in
   * one, their events at once; a failing one that has a failover is handed to it alone. Returns,
   * for each, whether anything changed.
   */
  function transitionMany(moves: readonly TransitionAsk[]): Promise<boolean[]> {
    return storage.transaction(async () => {
      // One notification moved twice: in turn, each move seeing the one before it.
      if (new Set(moves.map((m) => m.id)).size < moves.length) {
        const out: boolean[] = [];
        for (const m of moves) out.push((await transitionMany([m]))[0]);
        return out;
      }
      const rows = new Map((await repo.byIds([...new Set(moves.map((m) => m.id))])).map((r) => [r.id, r]));
      const now = clock.now();
      const changed: boolean[] = moves.map(() => false);
      const planned: {
        at: number;
        before: NotificationRecord;
        to: MoveTo;
        opts: TransitionOptions;
        reopened: boolean;
      }[] = [];
      for (const [i, { id, to, opts = {} }] of moves.entries()) {
        const before = rows.get(id);
        if (!before) continue;
        const reopened = opts.overridesCancel === true && before.status === "cancelled" && before.cancelPending && to !== "cancelled";
        if (!reopened && !canMove(before.status, to)) continue;
        // A message that was never approved has no route to fail over to: it was never sent.
        if (
          to === "failed" &&
          !reopened &&
          before.status !== "awaiting_approval" &&
          failover &&
          (await failover(before, { errorCode: opts.errorCode ?? null, reason: opts.reason ?? null, mayHaveGone: opts.mayHaveGone }))
        ) {
          changed[i] = true;
          continue;
        }
        planned.push({ at: i, before, to, opts, reopened });
      }
      const moved = await repo.moveMany(
        planned.map(({ before, to, opts }) => {
          const failing = to === "failed";
          return {
            id: before.id,
            move: {
              to,
              from: before.status,
              stage: STAGE_AFTER[to],
              at: opts.at ?? now,
              now,
              externalId: opts.externalId ?? null,
              errorCode: failing ? (opts.errorCode ?? null) : null,
              reason: failing || to === "cancelled" ? (opts.reason ?? null) : null,
            },
          };
        }),
      );
      const done = planned.filter((p) => moved.has(p.before.id));
      await logMany(
        done.map(({ before, to, opts, reopened }) => {
          const detail = opts.detail ?? opts.reason ?? null;
          return {
            id: before.id,
            event: to,
            fields: {
              status: to,
              errorCode: to === "failed" ? opts.errorCode : null,
              detail: reopened
                ? `${detail ?? to}; the phone already had it when it was cancelled`
                : before.status === "pending" && before.cancelPending && to !== "cancelled"
                  ? `${detail ?? to}; the cancel asked of the phone came too late: this is what the phone did`
                  : detail,
              at: opts.at ?? now,
            },
          };
        }),
      );
      for (const { before, to, opts } of done) {
        if (to === "failed" || to === "cancelled") {
          await credits.refund(
            before.workspaceId,
            before.cost,
            before.id,
            to === "failed" ? `failed: ${opts.errorCode ?? "error"}` : "cancelled",
          );
        }
      }
      for (const d of done) changed[d.at] = true;
      const changes = done.map(({ before, to, opts }) => ({ before, to, opts }));
      for (const listener of batchListeners) await listener(changes);
      for (const { before, to, opts } of changes) for (const listener of listeners) await listener(before, to, opts);
      return changed;
    });
  }

  return {
    get: (id: number) => repo.byId(id),
    getMany: (ids: readonly number[]) => repo.byIds(ids),
    log,
    logMany,
    transition,
    transitionMany,
    /** Runs `listener` for each change, inside its unit of work, after the listeners of onTransitions. */
    onTransition(listener: TransitionListener) {
      listeners.push(listener);
    },
    /** Runs `listener` once for the changes of each transition or transitionMany, inside its unit, before the others. */
    onTransitions(listener: TransitionsListener) {
      batchListeners.push(listener);
    },
    /** Sets the failover that may move a failing notification to its next route. */
    setFailover(hook: FailoverHook) {
      failover = hook;
    },
  };
}

export type NotificationState = ReturnType<typeof createNotificationState>;
