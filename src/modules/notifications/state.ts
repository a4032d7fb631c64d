// The notification state machine. Every status change anywhere (worker, provider callbacks, the
// phone, the chat-app platform, cancel) goes through transition(), which keeps status monotonic,
// writes the log row, refunds credits on failure or cancel, and calls the listeners (events,
// threads) inside the same unit of work.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { CreditService } from "../credits/service";
import { createStatusRepository, type NotificationRecord, type NotificationStatus, type Stage } from "./repository";

export type { NotificationRecord, NotificationStatus, Stage } from "./repository";

/**
 * Status only moves forward: pending → sent → delivered; failed may follow pending or sent (a
 * carrier can reject after the provider accepted); cancelled only follows pending. A repeat, or a
 * report that arrives after a later one, changes nothing.
 */
export function canMove(from: NotificationStatus, to: NotificationStatus): boolean {
  switch (from) {
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

export type TransitionListener = (
  before: NotificationRecord,
  to: Exclude<NotificationStatus, "pending">,
  opts: TransitionOptions,
) => void | Promise<void>;

const STAGE_AFTER: Record<NotificationStatus, Stage> = {
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
  function transition(id: number, to: Exclude<NotificationStatus, "pending">, opts: TransitionOptions = {}): Promise<boolean> {
    return storage.transaction(async () => {
      const before = await repo.byId(id);
      if (!before) return false;
      const reopened = opts.overridesCancel === true && before.status === "cancelled" && before.cancelPending && to !== "cancelled";
      if (!reopened && !canMove(before.status, to)) return false;
      if (
        to === "failed" &&
        !reopened &&
        failover &&
        (await failover(before, { errorCode: opts.errorCode ?? null, reason: opts.reason ?? null, mayHaveGone: opts.mayHaveGone }))
      )
        return true;
      const now = clock.now();
      const at = opts.at ?? now;
      const failing = to === "failed";
      const moved = await repo.move(id, {
        to,
        from: before.status,
        stage: STAGE_AFTER[to],
        at,
        now,
        externalId: opts.externalId ?? null,
        errorCode: failing ? (opts.errorCode ?? null) : null,
        reason: failing || to === "cancelled" ? (opts.reason ?? null) : null,
      });
      if (!moved) return false;
      const detail = opts.detail ?? opts.reason ?? null;
      await log(id, to, {
        status: to,
        errorCode: failing ? opts.errorCode : null,
        detail: reopened ? `${detail ?? to}; the phone already had it when it was cancelled` : detail,
        at,
      });
      if (failing || to === "cancelled") {
        await credits.refund(before.workspaceId, before.cost, id, failing ? `failed: ${opts.errorCode ?? "error"}` : "cancelled");
      }
      for (const listener of listeners) await listener(before, to, opts);
      return true;
    });
  }

  return {
    get: (id: number) => repo.byId(id),
    log,
    logMany,
    transition,
    onTransition(listener: TransitionListener) {
      listeners.push(listener);
    },
    /** Sets the failover that may move a failing notification to its next route. */
    setFailover(hook: FailoverHook) {
      failover = hook;
    },
  };
}

export type NotificationState = ReturnType<typeof createNotificationState>;
