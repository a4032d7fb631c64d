// Accepting prepared sends: the plan's monthly SMS allowance and the credit balance checked over
// a request's items, then the writes (the notifications, the debits, the log lines) in the
// caller's unit of work, with concurrent single sends of one key stored together. And a preview:
// what a send would do, writing nothing.
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { dailyCapReached } from "../../core/scopes";
import { ROUTE_NAMES } from "../../core/kinds";
import { createBatcher } from "../../lib/batcher";
import { monthStart } from "../../lib/time";
import { timeOrderedId } from "../../lib/tokens";
import type { NewNotification } from "../notifications/model";
import type { LogFields } from "../notifications/state";
import type { SendingContext } from "./context";
import type { Preparing } from "./prepare";
import type { ItemResult, Prepared, SendInput } from "./types";

export function createAccepting(ctx: SendingContext, prepare: Preparing["prepare"]) {
  const { deps, traits, storeListeners, announceAccepted } = ctx;
  const { storage, clock, notifications, state, credits, usage } = deps;

  /** A preview's check of the plan's monthly SMS allowance (accept checks a request's items at once). */
  async function refusedByPlan(auth: AuthContext, p: Prepared, now: number): Promise<AppError | null> {
    if (p.channel !== "sms" || auth.plan.monthlySmsLimit === null) return null;
    if (storage.inTransaction) await usage.holdAllowance(auth.accountId);
    const used = await usage.accountSmsSince(auth.accountId, monthStart(now));
    return used < auth.plan.monthlySmsLimit ? null : allowanceSpent(auth, used);
  }

  /** The 402 of a plan whose monthly SMS allowance is used up. */
  function allowanceSpent(auth: AuthContext, used: number): AppError {
    return new AppError(
      "free_tier_exhausted",
      `The ${auth.plan.code} plan allows ${auth.plan.monthlySmsLimit} SMS a month and all are used; it renews on the 1st (UTC)`,
      { limit: auth.plan.monthlySmsLimit, used },
    );
  }

  /**
   * What a send would do, writing nothing: the prepared message (route, device, cost, quiet-hour
   * hold) and the refusal a real send would answer with, if any (an opt-out, an offline phone, a
   * recipient off the key's list, the key's daily cap, the plan or the balance).
   */
  async function preview(auth: AuthContext, input: SendInput): Promise<{ prepared: Prepared | null; refusal: AppError | null }> {
    try {
      const prepared = await prepare(auth, input);
      const now = clock.now();
      const cap = auth.keyId !== null ? (auth.limits?.dailyCap ?? null) : null;
      const used = cap === null ? 0 : await deps.keyDays.sent(auth.keyId!, now);
      const refusal =
        (cap !== null && used >= cap ? dailyCapReached(cap, used, now) : null) ??
        (await refusedByPlan(auth, prepared, now)) ??
        (await credits.shortfall(auth.workspaceId, prepared.cost));
      return { prepared, refusal };
    } catch (error) {
      if (error instanceof AppError) return { prepared: null, refusal: error };
      throw error;
    }
  }

  /** The notification row a prepared send is stored as. */
  function rowOf(auth: AuthContext, p: Prepared, now: number): NewNotification {
    return {
      workspaceId: auth.workspaceId,
      apiKeyId: auth.keyId,
      deliveryType: p.channel,
      route: p.device.kind,
      deviceId: p.device.id,
      recipient: p.recipient,
      recipientName: p.recipientName,
      templateId: p.template?.id ?? null,
      templateVars: p.templateVars,
      message: p.message,
      scheduleAt: p.scheduleAt,
      timezone: p.timezone,
      nextAttemptAt: p.scheduleAt ?? now,
      segments: p.segments,
      cost: p.cost,
      // A paired phone knows each message by an id of ours (the companion-app protocol's "id").
      externalId: traits.get(p.device.kind)?.choosesExternalId ? timeOrderedId(now) : null,
      channelPayload: p.channelPayload ?? null,
      simNumber: p.simNumber,
      priority: p.priority,
      hooks: p.hooks,
      withDeliveryReport: p.withDeliveryReport,
      validUntil: p.validUntil,
      routes: p.routes,
      fallback: p.fallback,
      encrypted: p.encrypted === true,
      createdAt: now,
      dataMessage: p.dataMessage ?? null,
      awaitingApproval: auth.needsApproval,
      agentSession: auth.agentSession ?? null,
      approvalReason: p.reason ?? null,
    };
  }

  /**
   * What a stored send's log says at once besides its first line (accepted or scheduled, made from
   * the notification's columns when read: firstLine in the notification repository): the routes
   * skipped, the pool's choice, a quiet-hours hold. Most sends have none.
   */
  function acceptedLines(id: number, p: Prepared): { id: number; event: string; fields: LogFields }[] {
    const lines: { id: number; event: string; fields: LogFields }[] = [];
    for (const skip of p.skipped) {
      lines.push({
        id,
        event: "route_skipped",
        fields: {
          status: "pending",
          errorCode: String(skip.error.publicCode ?? skip.error.code),
          detail: `route ${ROUTE_NAMES[skip.route]} skipped: ${skip.error.message}`,
        },
      });
    }
    if (p.poolNote) lines.push({ id, event: p.poolHeld ? "pool_held" : "pool", fields: { status: "pending", detail: p.poolNote } });
    if (p.quietHold) {
      lines.push({
        id,
        event: "quiet_hours",
        fields: {
          status: "pending",
          detail: `held for the recipient's quiet hours (${p.quietHold.zone}) until ${new Date(p.quietHold.until).toISOString()}`,
        },
      });
    }
    return lines;
  }

  /**
   * Stores the prepared items and returns every item's result, in order. The plan's monthly SMS
   * allowance and the credit balance are read once (their rows held for the unit where the dialect
   * has row locks) and each item is checked against what the items before it used, so an item
   * refused by its plan or its credits leaves nothing, and the others stand. Then the writes, each
   * kind at once: the notifications, the debits and the log lines (on PostgreSQL a statement each,
   * whatever the number of items; on SQLite a statement a row, as before). Anything that fails
   * after a write fails the whole unit. Called inside a unit of work (`storage.transaction`), so
   * the caller may write what belongs with it (an idempotent reply) in the same one; the accept
   * listeners hear of the stored items once it commits.
   */
  async function accept(auth: AuthContext, items: (Prepared | AppError)[]): Promise<ItemResult[]> {
    if (!storage.inTransaction) throw new Error("sending.accept runs inside a unit of work (storage.transaction)");
    const now = clock.now();
    const prepared = items.filter((item): item is Prepared => !(item instanceof AppError));
    const limit = auth.plan.monthlySmsLimit;
    let smsUsed = 0;
    if (limit !== null && prepared.some((p) => p.channel === "sms")) {
      await usage.holdAllowance(auth.accountId);
      smsUsed = await usage.accountSmsSince(auth.accountId, monthStart(now));
    }
    let balance = prepared.some((p) => p.cost > 0) ? await credits.holdBalance(auth.workspaceId) : 0;
    // The key's daily cap: its counter row for today (UTC) held for this unit, so concurrent accepts
    // of the key, on any server, count one after another. Every stored item counts, whatever
    // becomes of it later (cancelled or failed): the cap bounds send attempts.
    const cap = auth.keyId !== null && prepared.length > 0 ? (auth.limits?.dailyCap ?? null) : null;
    let keySends = cap === null ? 0 : await deps.keyDays.hold(auth.keyId!, now);

    const results: ItemResult[] = [];
    const stored: { at: number; prepared: Prepared }[] = [];
    for (const item of items) {
      if (item instanceof AppError) {
        results.push({ ok: false, error: item });
        continue;
      }
      if (cap !== null && keySends >= cap) {
        results.push({ ok: false, error: dailyCapReached(cap, keySends, now) });
        continue;
      }
      if (item.channel === "sms" && limit !== null && smsUsed >= limit) {
        results.push({ ok: false, error: allowanceSpent(auth, smsUsed) });
        continue;
      }
      if (item.cost > 0 && balance < item.cost) {
        results.push({ ok: false, error: credits.insufficientFor(item.cost, balance) });
        continue;
      }
      if (item.channel === "sms") smsUsed++;
      balance -= item.cost;
      keySends++;
      // A key that needs approval: stored awaiting it, its credits reserved as for any send.
      if (auth.needsApproval) item.awaitingApproval = true;
      stored.push({ at: results.length, prepared: item });
      // Filled in once the rows are written.
      results.push({ ok: true, accepted: { notificationId: 0, prepared: item } });
    }
    if (stored.length === 0) return results;

    const ids = await notifications.insertMany(stored.map((s) => rowOf(auth, s.prepared, now)));
    if (cap !== null) await deps.keyDays.add(auth.keyId!, now, stored.length);
    await credits.debitMany(
      auth.workspaceId,
      stored.map((s, i) => ({ amount: s.prepared.cost, notificationId: ids[i] })),
    );
    // Each outbound thread message follows from its notification (threads.catchUp).
    const lines = stored.flatMap((s, i) => acceptedLines(ids[i], s.prepared));
    if (lines.length > 0) await state.logMany(lines);
    const accepted = stored.map((s, i) => ({ notificationId: ids[i], prepared: s.prepared }));
    stored.forEach((s, i) => {
      results[s.at] = { ok: true, accepted: accepted[i] };
    });
    // What must be written with them (a pool member's usage), in this unit of work.
    for (const listener of storeListeners) await listener(accepted);
    // What awaits approval is not announced to its channel: approval announces it (src/modules/approval).
    const going = accepted.filter((a) => !a.prepared.awaitingApproval);
    if (going.length > 0) storage.afterCommit(() => announceAccepted(going));
    return results;
  }

  /**
   * The single sends of one key that come while an earlier one is being stored, stored together
   * (src/lib/batcher.ts): one unit of work and one `accept` for all their items, each request's
   * items in its own order after those that came before it, so each is checked against the
   * allowance and the balance the ones before it left, as if they had come one by one. Each
   * request gets its own items' results. A unit that fails fails every request in it, as a unit of
   * a request alone would. Without `storeTogether`, one unit a request.
   */
  const storeTogether = createBatcher<{ auth: AuthContext; items: (Prepared | AppError)[] }, ItemResult[]>(
    (asks) =>
      storage.transaction(async () => {
        const results = await accept(
          asks[0].auth,
          asks.flatMap((a) => a.items),
        );
        let at = 0;
        return asks.map((a) => {
          const own = results.slice(at, at + a.items.length);
          at += a.items.length;
          return own;
        });
      }),
    // Two at a time: while one unit waits for its commit, the next gathers and writes.
    { parallel: 2 },
  );

  /** Stores a request's prepared items in a unit of work (a single send's with others' under load, see storeTogether). */
  function acceptTogether(auth: AuthContext, items: (Prepared | AppError)[]): Promise<ItemResult[]> {
    // A bulk request is already a batch: its unit runs beside the others instead of after them.
    if (!deps.storeTogether || items.length > 1) return storage.transaction(() => accept(auth, items));
    return storeTogether(`${auth.workspaceId}|${auth.keyId}|${auth.accountId}|${auth.plan.id}`, { auth, items });
  }

  return {
    preview,
    accept,
    acceptTogether,
    /** SMS the account has sent this calendar month (UTC): what its plan's allowance counts. */
    smsUsedThisMonth: async (accountId: number): Promise<number> => usage.accountSmsSince(accountId, monthStart(deps.clock.now())),
  };
}
