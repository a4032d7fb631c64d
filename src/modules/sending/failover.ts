// Failover: a message on a route order whose route failed in a way another could avoid moves to
// the next route that can take it now, and messages stranded on an offline phone move on after a
// grace period.
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { ROUTE_NAMES } from "../../core/kinds";
import { timeOrderedId } from "../../lib/tokens";
import { allowedSilence, OFFLINE_AFTER_MS } from "../devices/service";
import type { NotificationRecord } from "../notifications/model";
import type { SendingContext } from "./context";
import type { Preparing } from "./prepare";
import type { Common, Fallback, Prepared, SendInput } from "./types";

/** Stranded messages looked at per worker tick. */
const STRANDED_BATCH = 100;

/**
 * The routes a failed message may move to, in the order it names: those after the route that
 * failed. None without an order, when the failure says the message may have gone out (a second
 * route could send it twice), or when the failure is final (no route changes it: `final`).
 */
export function routesToTry<K extends string>(
  failed: K,
  routes: readonly K[] | null,
  failure: { errorCode: string | null; mayHaveGone?: boolean },
  final: ReadonlySet<string>,
): K[] {
  if (routes === null || failure.mayHaveGone === true) return [];
  if (failure.errorCode !== null && final.has(failure.errorCode)) return [];
  return routes.slice(routes.indexOf(failed) + 1);
}

export function createFailover(ctx: SendingContext, prepareRoute: Preparing["prepareRoute"]) {
  const { deps, traits, threadPerDevice, announceAccepted } = ctx;
  const { storage, clock, devices, notifications, state, credits, threads } = deps;
  /**
   * Failures no other route changes: the recipient opted out, the message expired or was
   * cancelled, and those each channel names as final (ChannelTraits.finalFailures: a recipient
   * who stopped the messages at the provider).
   */
  const FINAL_FAILURES = new Set([
    "recipient_opted_out",
    "expired",
    "outcome_unknown",
    "cancelled",
    ...deps.channels.flatMap((c) => c.finalFailures ?? []),
  ]);

  /** The sent message in its conversation: on a channel that keeps them per device, its device's. */
  async function addToThread(workspaceId: number, p: Prepared, notificationId: number, at: number): Promise<void> {
    await threads.add({
      workspaceId,
      channel: p.channel,
      threadDeviceId: threadPerDevice(p.device) ? p.device.id : 0,
      peer: p.recipient,
      peerName: p.recipientName,
      direction: "outbound",
      body: p.message,
      notificationId,
      deviceId: p.device.id,
      at,
    });
  }

  /**
   * Failover: called inside the transaction that would fail a notification. When it follows a
   * route order and the failure is one another route could avoid, the same notification moves to
   * the next route that can take it now (its device chosen, the text in that channel's form, the
   * credits moved from the old route's cost to the new one's) and true is returned: it is not
   * failed. A failure that says the message may have gone out, or that no route can change (an
   * opt-out, an expiry), is left to fail.
   */
  async function failover(
    n: NotificationRecord,
    failure: { errorCode: string | null; reason: string | null; mayHaveGone?: boolean; stranded?: boolean },
  ): Promise<boolean> {
    const routes = n.routes;
    const rest = routesToTry(n.route, routes, failure, FINAL_FAILURES);
    if (routes === null || rest.length === 0) return false;
    let auth: AuthContext;
    try {
      auth = await deps.callerFor(n.workspaceId);
    } catch {
      return false;
    }
    const fallback = n.fallback as Fallback | null;
    const input: SendInput = {
      channel: n.deliveryType,
      recipient: n.recipient,
      message: n.message,
      simNumber: n.simNumber,
      priority: n.priority,
      withDeliveryReport: n.withDeliveryReport,
    };
    const common: Common = {
      recipient: n.recipient,
      recipientName: n.recipientName,
      template: null,
      templateVars: null,
      message: n.message,
      scheduleAt: null,
      timezone: n.timezone,
      validUntil: n.validUntil,
      quietHold: null,
      fallback,
    };
    const why = `${ROUTE_NAMES[n.route]} failed (${failure.errorCode ?? "error"}: ${failure.reason ?? "no reason given"})`;
    // Written when the message moves or fails now; a stranded one that stays where it is logs nothing.
    const skips: { code: string; detail: string }[] = [];
    const writeSkips = async () => {
      for (const skip of skips) await state.log(n.id, "route_skipped", { status: "pending", errorCode: skip.code, detail: skip.detail });
    };
    for (const kind of rest) {
      let p: Prepared;
      try {
        // In a savepoint: a debit that fails leaves nothing behind for the next route.
        p = await storage.transaction(async () => {
          const next = await prepareRoute(auth, input, common, kind, routes);
          await credits.debit(n.workspaceId, next.cost, n.id);
          return next;
        });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        skips.push({
          code: String(error.publicCode ?? error.code),
          detail: `after ${why}, route ${ROUTE_NAMES[kind]} skipped: ${error.message}`,
        });
        continue;
      }
      const now = clock.now();
      await credits.refund(n.workspaceId, n.cost, n.id, `failover from ${ROUTE_NAMES[n.route]}`);
      const moved = await notifications.reroute(
        n.id,
        {
          route: kind,
          deliveryType: p.channel,
          deviceId: p.device.id,
          templateId: p.template?.id ?? null,
          templateVars: p.templateVars,
          message: p.message,
          segments: p.segments,
          cost: p.cost,
          externalId: traits.get(kind)?.choosesExternalId ? timeOrderedId(now) : null,
          simNumber: p.simNumber,
        },
        now,
      );
      if (!moved) return false;
      await writeSkips();
      if (p.channel !== n.deliveryType || (threadPerDevice(p.device) && p.device.id !== n.deviceId)) {
        await threads.removeOutbound(n.id);
        await addToThread(n.workspaceId, p, n.id, now);
      }
      await state.log(n.id, "failover", {
        status: "pending",
        errorCode: failure.errorCode,
        detail: `${why}; moved to route ${ROUTE_NAMES[kind]} via device ${p.device.id}`,
      });
      // The new route's channel hears of it as of a new message once this unit of work commits.
      const accepted = [{ notificationId: n.id, prepared: { ...p, scheduleAt: null } }];
      storage.afterCommit(() => announceAccepted(accepted));
      return true;
    }
    if (!failure.stranded) await writeSkips();
    return false;
  }

  // Stranded messages no route could take: not looked at again before this instant.
  const strandedRetry = new Map<number, number>();

  /**
   * notifications:failover — a message on a failover order that waits on a paired phone which has
   * been offline for `graceMs` moves to its next route. One the phone took up stays with it (it
   * may still send it); one no other route can take now waits, and is looked at again a grace
   * period later.
   */
  async function failoverStranded(graceMs: number): Promise<number> {
    const now = clock.now();
    const offlineAfter = deps.offlineAfterMs ?? OFFLINE_AFTER_MS;
    const streamCut = now - allowedSilence({ pushToken: null }, offlineAfter) - graceMs;
    const pollCut = now - allowedSilence({ pushToken: "polling" }, offlineAfter) - graceMs;
    let moved = 0;
    for (const [id, at] of strandedRetry) if (at <= now) strandedRetry.delete(id);
    for (const id of await notifications.stranded(now, streamCut, pollCut, STRANDED_BATCH)) {
      if (strandedRetry.has(id)) continue;
      const done = await storage.transaction(async () => {
        const n = await state.get(id);
        if (n?.status !== "pending" || n.stage !== "queued" || n.dispatchedAt !== null) return true;
        const silent = n.deviceId === null ? null : ((await devices.byId(n.deviceId))?.lastSeenAt ?? null);
        const reason = `device ${n.deviceId} has been offline ${silent === null ? "since it was paired" : `since ${new Date(silent).toISOString()}`}`;
        return failover(n, { errorCode: "device_offline", reason, stranded: true });
      });
      if (done) moved++;
      else strandedRetry.set(id, now + graceMs);
    }
    return moved;
  }

  return { failover, failoverStranded };
}
