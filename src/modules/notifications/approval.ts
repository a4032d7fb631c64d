// Approval before a send: what a key that needs approval sends is stored awaiting_approval, its
// credits reserved, and goes nowhere until a person decides. Approved, it becomes pending (due at
// its schedule, else at once) and takes the normal path; rejected, or left undecided past the
// approval time to live, it fails (approval_rejected, approval_expired) and is refunded by the
// state machine; it may also be cancelled. Every decision is a compare-and-set on the status, so
// of two decisions made at once only one counts.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { iso } from "../../lib/time";
import type { ApprovalRepository } from "./approval-repository";
import type { NotificationRecord } from "./model";
import type { NotificationRepository } from "./repository";
import { presentNotification } from "./service";
import type { NotificationState } from "./state";

/** At most this many expire per run; the next run takes the rest. */
const EXPIRE_BATCH = 200;
/** At most this many messages in one decision. */
export const MAX_DECISION_IDS = 500;

export interface ApprovalDeps {
  storage: Storage;
  clock: Clock;
  repo: ApprovalRepository;
  notifications: NotificationRepository;
  state: NotificationState;
  /** PIGEON_APPROVAL_TTL_SECONDS in milliseconds: how long a message may await approval. */
  ttlMs: () => number;
  /** An API key's name (who sent it). */
  keyName: (keyId: number) => Promise<string | null>;
  /** Writes the `notification.approved` event, inside the decision's unit of work. */
  emitApproved: (n: NotificationRecord, data: Record<string, unknown>) => Promise<void>;
  /** After commit: the channels carrying the approved messages are told (a paired phone is woken). */
  announce: (approved: NotificationRecord[]) => void;
}

/** What a decision did: the ids it changed, and those it left, with their status then. */
export interface DecisionResult {
  decided: number[];
  skipped: { notification_id: number; status: string | null }[];
}

export function createApproval(deps: ApprovalDeps) {
  const { storage, clock, repo, notifications, state } = deps;

  async function present(n: NotificationRecord, names: Map<number, string | null>) {
    if (n.apiKeyId !== null && !names.has(n.apiKeyId)) names.set(n.apiKeyId, await deps.keyName(n.apiKeyId));
    return {
      ...presentNotification(n),
      key_name: n.apiKeyId === null ? null : (names.get(n.apiKeyId) ?? null),
      expires_at: iso(n.createdAt + deps.ttlMs()),
    };
  }

  /** A page of the workspace's messages awaiting approval, newest first, with who sent them and when each expires. */
  async function list(workspaceId: number, page = 1, limit = 50) {
    const { rows, total } = await notifications.list(workspaceId, { status: "awaiting_approval" }, (page - 1) * limit, limit);
    const names = new Map<number, string | null>();
    const items = [];
    for (const n of rows) items.push(await present(n, names));
    return { notifications: items, pagination: { page, limit, total } };
  }

  async function skippedOf(workspaceId: number, id: number) {
    return { notification_id: id, status: (await notifications.get(workspaceId, id))?.status ?? null };
  }

  /** Approves the workspace's messages among `ids` that still await approval; `decidedBy` names who did. */
  async function approve(workspaceId: number, ids: readonly number[], decidedBy: string): Promise<DecisionResult> {
    const unique = [...new Set(ids)];
    const result = await storage.transaction(async () => {
      const out: DecisionResult = { decided: [], skipped: [] };
      const approved: NotificationRecord[] = [];
      const now = clock.now();
      for (const id of unique) {
        if (!(await repo.approve(workspaceId, id, now, decidedBy))) {
          out.skipped.push(await skippedOf(workspaceId, id));
          continue;
        }
        const n = (await notifications.get(workspaceId, id))!;
        await state.log(id, "approved", { status: "pending", detail: `approved by ${decidedBy}`, at: now });
        await deps.emitApproved(n, presentNotification(n));
        approved.push(n);
        out.decided.push(id);
      }
      if (approved.length > 0) storage.afterCommit(() => deps.announce(approved));
      return out;
    });
    return result;
  }

  /** Fails messages that still await approval (rejected or expired), each refunded by the transition. */
  async function fail(
    workspaceId: number,
    ids: readonly number[],
    decidedBy: string,
    how: { errorCode: "approval_rejected" | "approval_expired"; reason: string; detail: string },
  ): Promise<DecisionResult> {
    const unique = [...new Set(ids)];
    return storage.transaction(async () => {
      const out: DecisionResult = { decided: [], skipped: [] };
      const now = clock.now();
      for (const id of unique) {
        if (!(await repo.markRejected(workspaceId, id, now, decidedBy))) {
          out.skipped.push(await skippedOf(workspaceId, id));
          continue;
        }
        if (await state.transition(id, "failed", { ...how, at: now })) out.decided.push(id);
        else out.skipped.push(await skippedOf(workspaceId, id));
      }
      return out;
    });
  }

  /** Rejects the workspace's messages among `ids` that still await approval, with the approver's reason if given. */
  function reject(workspaceId: number, ids: readonly number[], decidedBy: string, reason?: string | null): Promise<DecisionResult> {
    const why = reason?.trim() ? reason.trim() : "rejected by an approver";
    return fail(workspaceId, ids, decidedBy, {
      errorCode: "approval_rejected",
      reason: why,
      detail: `rejected by ${decidedBy}: ${why}`,
    });
  }

  /**
   * approval:expire — fails what awaited approval longer than the approval time to live, as read
   * now (so a server restarted with a shorter one expires what waited that long already).
   */
  async function expireDue(): Promise<number> {
    const due = await repo.expired(clock.now() - deps.ttlMs(), EXPIRE_BATCH);
    let expired = 0;
    for (const { id, workspaceId } of due) {
      const r = await fail(workspaceId, [id], "expiry", {
        errorCode: "approval_expired",
        reason: "not approved within the approval time to live",
        detail: "approval expired: nobody approved it in time",
      });
      expired += r.decided.length;
    }
    return expired;
  }

  return { list, approve, reject, expireDue };
}

export type Approval = ReturnType<typeof createApproval>;
