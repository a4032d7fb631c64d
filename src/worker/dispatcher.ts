// notifications:dispatch — hands due cloud and chat-app notifications to their channel, paced per
// device, and records what happened. Every state lives in the database: an attempt is marked
// `dispatching` (committed) before the channel is called, so after a crash we know which calls
// may have been cut off and ask the channel about those before sending again.
import type { Cluster } from "../core/cluster";
import type { AttemptOutcome, ChannelAdapter, DispatchOutcome } from "../channels/types";
import { createBatcher } from "../lib/batcher";
import type { Clock } from "../clock";
import type { Storage } from "../db/storage";
import type { DeviceStore } from "../modules/devices/ports";
import type { DeviceRow } from "../modules/devices/model";
import type { NotificationStore } from "../modules/notifications/ports";
import type { NotificationRecord, NotificationState } from "../modules/notifications/state";
import { MINUTE } from "../lib/time";
import { failForDeletedDevice } from "../modules/notifications/lifecycle";
import type { LogFn, Logger } from "../lib/log";

/** Attempts before a retryable failure counts as permanent. */
export const MAX_ATTEMPTS = 5;
const BASE_BACKOFF_MS = 5_000;
const MAX_BACKOFF_MS = 5 * MINUTE;
const CLAIM_BATCH = 200;
/**
 * A call started this close to the end of its pacing window is counted in the next one: it may
 * reach the provider after the window's end.
 */
const PACE_GUARD_MS = 20;
/** Provider calls in flight at once (each device's pace still bounds what it is handed). */
export const DISPATCH_CONCURRENCY = 32;

/** 5 s, 10 s, 20 s, 40 s … after the 1st, 2nd, 3rd, 4th attempt, at most 5 minutes. */
export function backoffMs(attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.max(0, attempts - 1));
}

export interface DispatcherDeps {
  /**
   * The unit of work: claims and outcomes are units of their own (the outcomes of calls that end
   * in the same turn share one commit).
   */
  storage: Storage;
  clock: Clock;
  notifications: NotificationStore;
  devices: DeviceStore;
  state: NotificationState;
  adapters: Partial<Record<NotificationRecord["route"], ChannelAdapter>>;
  /** A device's pacing window and how many it may be handed in one. */
  paceOf: (device: DeviceRow) => { window: number; limit: number };
  /** How long a throttled notification waits: the worker's tick. */
  tickMs: number;
  /** Called after outcomes are recorded (inside their unit), so channels can block or unblock their devices. */
  onOutcomes?: (outcomes: readonly AttemptOutcome[]) => void | Promise<void>;
  log: LogFn;
  /** Each call's outcome, at debug. */
  logger?: Pick<Logger, "enabled" | "debug">;
  /** This server among those sharing the database: its claims carry its id. */
  cluster: Cluster;
  /** Told how long each call to a channel took (the metrics). */
  onCall?: (route: NotificationRecord["route"], seconds: number) => void;
}

export function createDispatcher(deps: DispatcherDeps) {
  const { storage, clock, notifications, devices, state, adapters } = deps;
  // A device the platform asked to slow down (per business number): skipped until then.
  const slowDown = new Map<number, { until: number; streak: number }>();
  let stopping = false;

  /** Due work this tick may take, within each device's per-minute pacing: one unit of work. */
  function claimBatch(): Promise<{ n: NotificationRecord; device: DeviceRow }[]> {
    return storage.transaction(claimInTransaction);
  }

  async function claimInTransaction(): Promise<{ n: NotificationRecord; device: DeviceRow }[]> {
    const now = clock.now();
    await notifications.lockClaims();
    // Candidates (only their ids, devices and due times), then their devices and each device's
    // count in its pacing window, a statement each.
    const candidates = await notifications.dueCandidates(now, CLAIM_BATCH * 4);
    const deviceIds = [...new Set(candidates.flatMap((c) => (c.deviceId === null ? [] : [c.deviceId])))];
    const found = new Map((await devices.byIds(deviceIds)).map((d) => [d.id, d]));
    const budget = new Map<number, number>();
    const windows = new Map<number, number[]>();
    for (const device of found.values()) {
      const pace = deps.paceOf(device);
      const since = now - (now % pace.window);
      budget.set(device.id, pace.limit);
      const ids = windows.get(since) ?? [];
      ids.push(device.id);
      windows.set(since, ids);
    }
    for (const [since, ids] of windows)
      for (const [id, n] of await notifications.dispatchedSinceMany(ids, since)) budget.set(id, budget.get(id)! - n);
    const chosen: number[] = [];
    const gone: number[] = [];
    for (const c of candidates) {
      if (chosen.length >= CLAIM_BATCH) break;
      if (c.deviceId === null) continue;
      const device = found.get(c.deviceId);
      if (!device) {
        gone.push(c.id);
        continue;
      }
      if ((slowDown.get(device.id)?.until ?? 0) > now) continue;
      const left = budget.get(device.id)!;
      if (left <= 0) continue; // paced: waits for the next window, no error to anyone
      budget.set(device.id, left - 1);
      chosen.push(c.id);
    }
    if (gone.length > 0) await failForDeletedDevice(state, gone);
    // Taken in one statement, returned as they now are; one another server took first is left out
    // (its device's budget stays spent for this tick: a pace is never passed, at worst not filled).
    const order = new Map(chosen.map((id, i) => [id, i]));
    const claimed = (await notifications.claimMany(chosen, now, deps.cluster.id))
      .sort((a, b) => order.get(a.id)! - order.get(b.id)!)
      .map((n) => ({ n, device: found.get(n.deviceId!)! }));
    await state.logMany(
      claimed.map(({ n, device }) => ({
        id: n.id,
        event: "attempt",
        fields: { status: "pending", detail: `attempt ${n.attempts} via device ${device.id}` },
      })),
    );
    return claimed;
  }

  /** Each channel reads what its calls in the batch need, in one go (ChannelAdapter.prepare). */
  async function prepare(batch: readonly { n: NotificationRecord }[]): Promise<void> {
    for (const route of new Set(batch.map((b) => b.n.route))) {
      const adapter = adapters[route];
      if (!adapter?.prepare) continue;
      try {
        await adapter.prepare(batch.filter((b) => b.n.route === route).map((b) => b.n));
      } catch (error) {
        deps.log(`channel ${route} could not prepare a batch; each call reads its own`, error);
      }
    }
  }

  async function attempt(n: NotificationRecord, device: DeviceRow): Promise<DispatchOutcome> {
    const adapter = adapters[n.route];
    if (!adapter) return { kind: "permanent", code: "no_channel", reason: `no channel carries ${n.route} notifications` };
    if (n.needsReconcile) {
      if (!adapter.reconcile) {
        return {
          kind: "permanent",
          code: "outcome_unknown",
          reason: "an earlier attempt was cut off and this channel cannot say whether it took the message",
        };
      }
      let candidates: string[];
      try {
        candidates = await adapter.reconcile(n, device);
      } catch (error) {
        return { kind: "uncertain", reason: `cannot ask the provider about an interrupted attempt: ${(error as Error).message}` };
      }
      // Identical notifications (same recipient and text) match the same provider messages: take
      // the first one no other notification owns. This loop runs without awaiting, and the unique
      // index on external_id guards the claim, so two checks never take one message.
      const now = clock.now();
      const ordered =
        n.externalId && candidates.includes(n.externalId) ? [n.externalId, ...candidates.filter((c) => c !== n.externalId)] : candidates;
      for (const candidate of ordered) {
        if (await notifications.claimExternalId(n.id, candidate, now)) {
          return {
            kind: "accepted",
            externalId: candidate,
            detail: `the provider already had it as ${candidate} (found after an interrupted attempt)`,
          };
        }
      }
    }
    // Past its valid_until nothing goes out: reached here only by a message whose interrupted
    // attempt the provider turned out not to have (or one that expired while the batch ran).
    if (n.validUntil !== null && n.validUntil <= clock.now()) {
      return { kind: "permanent", code: "expired", reason: "not sent before its valid_until (ttl)" };
    }
    const started = performance.now();
    try {
      return await adapter.send(n, device);
    } catch (error) {
      deps.log(`channel ${n.route} threw while sending notification ${n.id}`, error, { notification_id: n.id, device_id: device.id });
      return { kind: "uncertain", reason: `channel error: ${(error as Error).message}` };
    } finally {
      deps.onCall?.(n.route, (performance.now() - started) / 1000);
    }
  }

  // When each device's last contact was last written by this server.
  const touched = new Map<number, number>();

  /**
   * Records contact with a device once its outcome's unit has committed, at most once a second a
   * device: a hint for people (the device list's "last seen"), not part of the outcome. Written
   * inside each outcome's unit, the device's row was a lock every outcome of that device waited on
   * through the commit of the one before (on PostgreSQL, a flush to disk each).
   */
  function touchLater(deviceId: number, now: number): void {
    if ((touched.get(deviceId) ?? 0) > now - 1_000) return;
    touched.set(deviceId, now);
    storage.afterCommit(() => {
      devices
        .touch(deviceId, now)
        .catch((error: unknown) => deps.log(`could not record contact with device ${deviceId}`, error, { device_id: deviceId }));
    });
  }

  /**
   * Calls claimed in one pacing window and made in a later one (or in the last moments of their own,
   * which the provider may see in the next): the window each goes out in, written with its outcome.
   * Until then every claim counts it as claimed and not yet recorded, in whatever window.
   */
  const restamps = new Map<number, number>();

  function countInWindow(n: NotificationRecord, device: DeviceRow): void {
    const { window } = deps.paceOf(device);
    const claimedAt = n.dispatchedAt ?? 0;
    const end = claimedAt - (claimedAt % window) + window;
    const now = clock.now();
    if (now >= end - PACE_GUARD_MS) restamps.set(n.id, Math.max(now, end));
  }

  /**
   * Outcomes that end while others are being recorded are recorded together next
   * (src/lib/batcher.ts), in one unit of work: the accepted ones (nearly all) with a statement a
   * kind for all of them (recordAccepted), the others one by one. A crash before the unit is on
   * disk leaves their attempts `dispatching`, which the channel is asked about before any retry.
   */
  const recordTogether = createBatcher<AttemptOutcome, null>(
    (asks) =>
      storage.transaction(async () => {
        // First, while they are still `dispatching`: the late calls counted in their windows.
        const late = asks.flatMap((a) => (restamps.has(a.n.id) ? [{ id: a.n.id, at: restamps.get(a.n.id)! }] : []));
        for (const { id } of late) restamps.delete(id);
        if (late.length > 0) await notifications.restampMany(late);
        const accepted = asks.filter((a) => a.outcome.kind === "accepted");
        if (accepted.length > 0) await recordAccepted(accepted);
        for (const a of asks)
          if (a.outcome.kind !== "accepted") await storage.transaction(() => recordInTransaction(a.n, a.device, a.outcome));
        return asks.map(() => null);
      }),
    // Two at a time: while one unit waits for its commit, the next gathers and writes.
    { max: 200, parallel: 2 },
  );

  /** Writes an attempt's outcome (state, log), with the others that end about then (recordTogether). */
  async function record(n: NotificationRecord, device: DeviceRow, outcome: DispatchOutcome): Promise<void> {
    await recordTogether("outcomes", { n, device, outcome });
  }

  /**
   * The accepted outcomes of a batch, as recordInTransaction records each: the provider's ids
   * checked in one statement, the moves to `sent`, their log lines and events through
   * state.transitionMany; an id another notification already owns goes the one-by-one way.
   */
  async function recordAccepted(list: AttemptOutcome[]): Promise<void> {
    const now = clock.now();
    const externalId = (o: DispatchOutcome) => (o.kind === "accepted" ? o.externalId : "");
    const taken = await notifications.externalIdsTaken(list.map((a) => ({ id: a.n.id, externalId: externalId(a.outcome) })));
    // Two of the batch given one id: the later ones are checked again once the first is stored.
    const seen = new Set<string>();
    const later = new Set<AttemptOutcome>();
    for (const a of list) {
      if (!taken.has(a.n.id) && seen.has(externalId(a.outcome))) later.add(a);
      seen.add(externalId(a.outcome));
    }
    const current = list.filter((a) => !later.has(a));
    const clean = current.filter((a) => !taken.has(a.n.id));
    await state.transitionMany(
      clean.map(({ n, outcome }) => ({
        id: n.id,
        to: "sent" as const,
        opts: {
          externalId: externalId(outcome),
          detail: (outcome.kind === "accepted" ? outcome.detail : undefined) ?? `accepted as ${externalId(outcome)}`,
        },
      })),
    );
    for (const { device } of clean) {
      touchLater(device.id, now);
      slowDown.delete(device.id);
    }
    for (const { n, outcome } of current) {
      if (!taken.has(n.id)) continue;
      // While this call was in flight, an identical notification's recovery check claimed the
      // message it created. Ask the provider again: the other's own message may be ours now.
      await notifications.requeue(n.id, now, now, { countAttempt: false, reconcile: true });
      await state.log(n.id, "retry", {
        status: "pending",
        detail: `the provider's ${externalId(outcome)} was claimed by an identical notification; checking again`,
      });
    }
    await deps.onOutcomes?.(current);
    if (later.size > 0) await recordAccepted([...later]);
  }

  async function recordInTransaction(n: NotificationRecord, device: DeviceRow, outcome: DispatchOutcome): Promise<void> {
    const now = clock.now();
    switch (outcome.kind) {
      case "accepted":
        // The batch form records it, its channel's hook included.
        await recordAccepted([{ n, device, outcome }]);
        return;
      case "throttled": {
        // Back off the whole device (a business number's throughput), doubling while it lasts.
        const streak = (slowDown.get(device.id)?.streak ?? 0) + 1;
        const wait = Math.min(60_000, deps.tickMs * 2 ** (streak - 1));
        slowDown.set(device.id, { until: now + wait, streak });
        await notifications.requeue(n.id, now + wait, now, { countAttempt: false, reconcile: false });
        await state.log(n.id, "throttled", { status: "pending", detail: `${outcome.reason}; device ${device.id} waits ${wait / 1000} s` });
        break;
      }
      case "permanent":
        await state.transition(n.id, "failed", {
          errorCode: outcome.code,
          reason: outcome.reason,
          detail: `attempt ${n.attempts}: ${outcome.reason}`,
        });
        break;
      case "retryable":
      case "uncertain": {
        const code = outcome.kind === "retryable" ? outcome.code : "outcome_unknown";
        if (n.attempts >= MAX_ATTEMPTS) {
          await state.transition(n.id, "failed", {
            errorCode: code,
            reason: `gave up after ${n.attempts} attempts: ${outcome.reason}`,
            detail: `attempt ${n.attempts}: ${outcome.reason}; no attempts left`,
            // The last call may have reached the provider: another route could send it twice.
            mayHaveGone: outcome.kind === "uncertain" || (outcome.kind === "retryable" && outcome.reconcile === true),
          });
          break;
        }
        const at = now + backoffMs(n.attempts);
        const reconcile = outcome.kind === "uncertain" || (outcome.kind === "retryable" && outcome.reconcile === true);
        await notifications.requeue(n.id, at, now, { countAttempt: true, reconcile });
        await state.log(n.id, "retry", {
          status: "pending",
          errorCode: code,
          detail: `attempt ${n.attempts} of ${MAX_ATTEMPTS}: ${outcome.reason}; next try at ${new Date(at).toISOString()}`,
        });
        break;
      }
    }
    await deps.onOutcomes?.([{ n, device, outcome }]);
  }

  /**
   * One tick: claim what is due and hand it over, many calls at a time, batch after batch until a
   * batch comes up short (nothing more is due, or every device with work waiting has used its pacing
   * window: the next tick, at the next second, finds the windows open again). A backlog drains at
   * the devices' pace, not at one batch a tick; a run longer than a tick just goes on (the scheduler
   * skips the ticks it overlaps). Safe to run twice.
   *
   * A pipeline, so neither the database nor the providers wait for the other: the next batch is
   * claimed while the last calls of this one are in flight (once the calls left to start would last
   * about as long as a claim takes, so a crash leaves at most two batches claimed and not yet
   * attempted, each then asked about like any interrupted attempt), and a call's outcome is recorded with the
   * others of its moment while its slot goes on to the next call. Outcomes not yet recorded hold
   * back the next claim beyond two batches of them.
   */
  async function dispatchDue(): Promise<number> {
    const queue: { n: NotificationRecord; device: DeviceRow }[] = [];
    let total = 0;
    let exhausted = false;
    let claiming: Promise<void> | null = null;
    const recording = new Set<Promise<void>>();
    const failures: unknown[] = [];
    // When the next batch is claimed: once the calls left to start would last about as long as a
    // claim takes (measured as the run goes), at least two a slot, never more than a batch.
    let started = 0;
    const began = performance.now();
    let claimMs = 0;
    const lowWater = () => {
      const perMs = started / Math.max(1, performance.now() - began);
      return Math.min(CLAIM_BATCH, Math.max(2 * DISPATCH_CONCURRENCY, Math.ceil(perMs * claimMs * 1.5)));
    };
    const refill = () => {
      if (claiming || exhausted || stopping) return;
      if (recording.size >= 2 * CLAIM_BATCH) return;
      const claimStart = performance.now();
      claiming = claimBatch()
        .then(async (batch) => {
          await prepare(batch);
          claimMs = performance.now() - claimStart;
          queue.push(...batch);
          total += batch.length;
          if (batch.length < CLAIM_BATCH) exhausted = true;
        })
        // A claim that fails ends the tick's claiming (its unit rolled back: nothing was taken).
        .catch((error: unknown) => {
          exhausted = true;
          failures.push(error);
        })
        .finally(() => {
          claiming = null;
        });
    };
    const slot = async () => {
      for (;;) {
        if (queue.length < lowWater()) refill();
        if (queue.length === 0 || stopping) {
          if (!claiming || stopping) return;
          await claiming;
          continue;
        }
        const { n, device } = queue.shift()!;
        countInWindow(n, device);
        started++;
        const outcome = await attempt(n, device);
        if (deps.logger?.enabled("debug")) traceOutcome(n, device, outcome);
        const written: Promise<void> = record(n, device, outcome).then(
          () => void recording.delete(written),
          (error: unknown) => {
            recording.delete(written);
            failures.push(error);
          },
        );
        recording.add(written);
        // Waits for outcomes to be written before more calls start, when they pile up.
        if (recording.size >= 2 * CLAIM_BATCH) await Promise.race(recording);
      }
    };
    try {
      await Promise.all(Array.from({ length: DISPATCH_CONCURRENCY }, slot));
    } finally {
      await claiming;
      await Promise.all(recording);
      if (queue.length > 0) await release(queue.splice(0).map((b) => b.n));
    }
    if (failures.length > 0) throw failures[0];
    return total;
  }

  /**
   * A call's outcome at debug. The reason is what the notification's log says too: the channels
   * keep the provider's echo of its credentials out of it.
   */
  function traceOutcome(n: NotificationRecord, device: DeviceRow, outcome: DispatchOutcome): void {
    const what = outcome.kind === "accepted" ? `accepted as ${outcome.externalId}` : `${outcome.kind}: ${outcome.reason}`;
    deps.logger?.debug(`notification ${n.id} via ${n.route} on device ${device.id}: ${what}`, {
      notification_id: n.id,
      device_id: device.id,
      outcome: outcome.kind,
      code: "code" in outcome ? outcome.code : undefined,
    });
  }

  /** Claimed but never handed over (we are stopping): back to the queue as they were. */
  async function release(list: NotificationRecord[]): Promise<void> {
    await storage.transaction(async () => {
      const now = clock.now();
      for (const n of list) {
        await notifications.requeue(n.id, now, now, { countAttempt: false, reconcile: n.needsReconcile });
        await state.log(n.id, "released", { status: "pending", detail: "the server is stopping; not handed over, back in the queue" });
      }
    });
  }

  /**
   * At start-up (and, with several servers, every few seconds on the leader): attempts a crash cut
   * off go back to the queue, to be checked with the channel first. Only claims no live server
   * holds are taken.
   */
  function recoverInterrupted(): Promise<number> {
    return storage.transaction(async () => {
      const ids = await notifications.recoverInterrupted(clock.now(), deps.cluster.abandoned);
      for (const id of ids) {
        await state.log(id, "interrupted", {
          status: "pending",
          detail: "the server stopped during this attempt; the channel will be asked before sending again",
        });
      }
      return ids.length;
    });
  }

  /** Shutting down: no new attempt starts; the calls in flight finish and are recorded. */
  function stop(): void {
    stopping = true;
  }

  return { dispatchDue, recoverInterrupted, stop };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
