// Safe sending: the numbers a workspace must not text (opt-outs, from keywords, the API, the
// dashboard or an import), the keywords an inbound message may carry, and quiet hours. The send
// path asks `refusal` and `quietHold` before it stores a message; an opt-out fails the messages to
// that number that no channel holds yet, in the same transaction.
import type { DeliveryType } from "../../core/kinds";
import type { Clock } from "../../clock";
import type { Cluster } from "../../core/cluster";
import type { Storage } from "../../db/storage";
import type { OptOutSource } from "./schema";
import { AppError } from "../../core/errors";
import { createGenerationCache } from "../../lib/generation-cache";
import { quietUntil, zoneForNumber } from "../../lib/quiet-hours";
import { resolveTimeZone } from "../../core/schedule";
import { iso } from "../../lib/time";
import type { EventService } from "../events/service";
import type { NotificationState } from "../notifications/state";
import type { OptOutEventRecord, SafetyRepository, SuppressionRecord } from "./repository";
import { applyChange, normalizeKeyword, presentSettings, settingsFrom, type SafetySettings, type SettingsChange } from "./settings";

export interface SafetyDeps {
  storage: Storage;
  clock: Clock;
  /** Whether other servers share the database (and so may change the settings at any time). */
  cluster: Pick<Cluster, "shared">;
  repo: SafetyRepository;
  state: NotificationState;
  events: EventService;
  /** The contact's id and time zone for a number, if the workspace has such a contact. */
  contactOf: (workspaceId: number, phone: string) => Promise<{ id: number; timezone: string | null } | null>;
  /**
   * The keyed digest an erased number's suppression is kept under (src/modules/privacy): a number
   * is suppressed when it, or its digest, is on the list.
   */
  digest?: (phone: string) => string;
}

/** What an opt-out or opt-in carries besides the number. */
export interface ChangeContext {
  source: OptOutSource;
  reason?: string | null;
  /** The inbound message that carried the keyword. */
  threadMessageId?: number | null;
  channel?: DeliveryType | null;
  deviceId?: number | null;
}

export type Keyword = "opt_out" | "opt_in" | "help";

/**
 * What the sends of one request share (sending's PrepareCache holds one a workspace): its safety
 * settings, read once, and, when fetched up front for a bulk request, its recipients' opt-outs.
 */
export interface SafetyMemo {
  /** The request's cache generation (AuthContext.cacheGeneration): what is kept may answer it. */
  cacheGeneration?: number;
  settings?: SafetySettings;
  /** Each number asked about, with its opt-out or null. */
  optOuts?: Map<string, SuppressionRecord | null>;
}

export function createSafetyService(deps: SafetyDeps) {
  const { storage, clock, repo, state, events } = deps;
  /** The keys a number may be suppressed under: itself, and its digest once erased. */
  const keysOf = (phone: string) => (deps.digest ? [phone, deps.digest(phone)] : [phone]);
  /** Whether a set of suppressed keys holds the number (the digest is made only when the set is not empty). */
  const holds = (set: Set<string>, phone: string) =>
    set.has(phone) || (set.size > 0 && deps.digest !== undefined && set.has(deps.digest(phone)));
  const suppressionOf = async (workspaceId: number, phone: string): Promise<SuppressionRecord | null> => {
    const rows = await repo.suppressionsAmong(workspaceId, keysOf(phone));
    return rows.find((r) => r.phone === phone) ?? rows[0] ?? null;
  };
  // Read on every send: on SQLite kept in memory, replaced on every write (the one server owns the
  // database). On PostgreSQL another server may change them at any time: they are kept while the
  // cache generation a request read says they are current (src/lib/generation-cache.ts), and read
  // again otherwise, so an opt-out taken by one server stops sends through every other at once.
  const inMemory = !deps.cluster.shared;
  const cache = new Map<number, SafetySettings>();
  const keptSettings = createGenerationCache<number, SafetySettings>();

  async function settings(workspaceId: number, memo?: SafetyMemo): Promise<SafetySettings> {
    if (memo?.settings) return memo.settings;
    if (!inMemory) {
      const generation = memo?.cacheGeneration;
      let read = keptSettings.get(workspaceId, generation);
      if (!read) {
        read = settingsFrom(await repo.settings(workspaceId));
        keptSettings.set(workspaceId, read, generation);
      }
      if (memo) memo.settings = read;
      return read;
    }
    let s = cache.get(workspaceId);
    if (!s) {
      s = settingsFrom(await repo.settings(workspaceId));
      cache.set(workspaceId, s);
    }
    return s;
  }

  async function updateSettings(workspaceId: number, change: SettingsChange) {
    await storage.transaction(async () => {
      const values = applyChange(await repo.settings(workspaceId), change);
      await repo.saveSettings(workspaceId, values, clock.now());
    });
    cache.delete(workspaceId);
    return presentSettings(await settings(workspaceId));
  }

  // The numbers each workspace suppresses, in memory: every send asks, and almost every answer is
  // "no". Loaded on first use and kept in step by optOut and optIn (one process owns the database).
  const suppressed = new Map<number, Set<string>>();
  async function suppressedIn(workspaceId: number): Promise<Set<string>> {
    let set = suppressed.get(workspaceId);
    if (!set) {
      set = new Set(await repo.suppressedPhones(workspaceId));
      suppressed.set(workspaceId, set);
    }
    return set;
  }

  /**
   * Drops a workspace's set now and again once the unit of work that changed it is over (see
   * optOut and optIn), so a read in between cannot leave an uncommitted state behind.
   */
  function forget(workspaceId: number) {
    suppressed.delete(workspaceId);
    storage.afterCommit(() => suppressed.delete(workspaceId));
  }

  /** Runs a change to a workspace's suppressions as a unit; its set is read afresh afterwards, whatever the outcome. */
  async function changing<T>(workspaceId: number, fn: () => Promise<T>): Promise<T> {
    try {
      return await storage.transaction(fn);
    } finally {
      suppressed.delete(workspaceId);
    }
  }

  // On PostgreSQL, each workspace's suppressed numbers kept while the cache generation says they
  // are current, when there are at most KEPT_NUMBERS of them (more: each number is read as asked).
  const KEPT_NUMBERS = 20_000;
  const keptNumbers = createGenerationCache<number, Set<string> | "too many">(1000);
  async function keptSuppressed(workspaceId: number, generation: number | undefined): Promise<Set<string> | null> {
    if (generation === undefined) return null;
    let kept = keptNumbers.get(workspaceId, generation);
    if (kept === undefined) {
      const phones = await repo.suppressedPhones(workspaceId, KEPT_NUMBERS + 1);
      kept = phones.length > KEPT_NUMBERS ? "too many" : new Set(phones);
      keptNumbers.set(workspaceId, kept, generation);
    }
    return kept === "too many" ? null : kept;
  }

  /** The 403 a send to a suppressed number gets, or null when it may go. */
  async function refusal(workspaceId: number, phone: string, memo?: SafetyMemo): Promise<AppError | null> {
    if (inMemory && !holds(await suppressedIn(workspaceId), phone)) return null;
    let row: SuppressionRecord | null;
    if (memo?.optOuts?.has(phone)) row = memo.optOuts.get(phone) ?? null;
    else {
      const kept = inMemory ? null : await keptSuppressed(workspaceId, memo?.cacheGeneration);
      if (kept && !holds(kept, phone)) return null;
      row = await suppressionOf(workspaceId, phone);
    }
    if (!row) return null;
    return new AppError(
      "recipient_opted_out",
      `${phone} opted out of messages from this workspace (${row.source}) and cannot be texted until they opt in again`,
      {
        phone,
        opted_out_at: iso(row.optedOutAt),
        source: row.source,
        reason: row.reason,
      },
    );
  }

  /**
   * Reads the opt-outs of many numbers at once into `memo` (a bulk request's recipients), so that
   * refusal answers each without a read of its own. SQLite answers from the in-memory set anyway.
   */
  async function readOptOuts(workspaceId: number, phones: string[], memo: SafetyMemo): Promise<void> {
    if (inMemory || phones.length < 2) return;
    const kept = await keptSuppressed(workspaceId, memo.cacheGeneration);
    const numbers = [...new Set(phones)];
    // With the workspace's numbers kept, only those among them are read (for their rows).
    const asked = kept ? numbers.filter((phone) => holds(kept, phone)) : numbers;
    // Each number is read under its digest too (an erased number's suppression), answered as the number.
    const numberOf = new Map<string, string>();
    const keys: string[] = [];
    for (const phone of asked)
      for (const key of keysOf(phone)) {
        numberOf.set(key, phone);
        keys.push(key);
      }
    const found = new Map<string, SuppressionRecord>();
    for (let i = 0; i < keys.length; i += 500)
      for (const row of await repo.suppressionsAmong(workspaceId, keys.slice(i, i + 500))) {
        const phone = numberOf.get(row.phone) ?? row.phone;
        if (row.phone === phone || !found.has(phone)) found.set(phone, row);
      }
    memo.optOuts = new Map(numbers.map((phone) => [phone, found.get(phone) ?? null]));
  }

  /**
   * When a message due at `at` may arrive: null if quiet hours do not hold it, else the end of the
   * recipient's quiet hours. Their time zone is their contact's, else their number's country's.
   */
  async function quietHold(
    workspaceId: number,
    phone: string,
    at: number,
    memo?: SafetyMemo,
  ): Promise<{ until: number; zone: string } | null> {
    const quiet = (await settings(workspaceId, memo)).quietHours;
    if (!quiet) return null;
    // A contact's zone may be a name the runtime only knows by its equivalent (EST5EDT): resolved.
    const own = (await deps.contactOf(workspaceId, phone))?.timezone;
    const zone = (own ? resolveTimeZone(own) : null) ?? zoneForNumber(phone);
    if (!zone) return null;
    const until = quietUntil(at, zone, quiet.start, quiet.end);
    return until === null ? null : { until, zone };
  }

  /** A change that happened: the in-memory set dropped, the audit row written, the event emitted. */
  async function record(
    workspaceId: number,
    phone: string,
    action: "opted_out" | "opted_in",
    ctx: ChangeContext,
    at: number,
  ): Promise<void> {
    forget(workspaceId);
    const change = {
      reason: ctx.reason ?? null,
      threadMessageId: ctx.threadMessageId ?? null,
      channel: ctx.channel ?? null,
      deviceId: ctx.deviceId ?? null,
    };
    await repo.addEvent({ workspaceId, phone, action, source: ctx.source, ...change, at });
    await events.emit(workspaceId, action === "opted_out" ? "contact.opted_out" : "contact.opted_in", {
      phone,
      source: ctx.source,
      reason: change.reason,
      message_id: change.threadMessageId,
      channel: change.channel,
      device_id: change.deviceId,
      contact_id: (await deps.contactOf(workspaceId, phone))?.id ?? null,
      at: iso(at),
    });
  }

  /**
   * Suppresses a number: audited, announced (contact.opted_out), and every message to it that no
   * channel holds yet fails with recipient_opted_out (refunded). False when it was suppressed already.
   */
  function optOut(workspaceId: number, phone: string, ctx: ChangeContext): Promise<boolean> {
    return changing(workspaceId, async () => {
      const now = clock.now();
      if (!(await repo.suppress(workspaceId, phone, now, ctx.source, ctx.reason ?? null))) return false;
      await record(workspaceId, phone, "opted_out", ctx, now);
      for (const id of await repo.waitingTo(workspaceId, phone)) {
        await state.transition(id, "failed", {
          errorCode: "recipient_opted_out",
          reason: `${phone} opted out (${ctx.source}) before the message went`,
          detail: `recipient opted out (${ctx.source}); not sent`,
        });
      }
      return true;
    });
  }

  /** Lifts a suppression: audited and announced (contact.opted_in). False when there was none. */
  function optIn(workspaceId: number, phone: string, ctx: ChangeContext): Promise<boolean> {
    return changing(workspaceId, async () => {
      const now = clock.now();
      let lifted = false;
      for (const key of keysOf(phone)) if (await repo.unsuppress(workspaceId, key)) lifted = true;
      if (!lifted) return false;
      await record(workspaceId, phone, "opted_in", ctx, now);
      return true;
    });
  }

  /** Which keyword a whole inbound text is, if any. */
  async function keywordOf(workspaceId: number, text: string): Promise<Keyword | null> {
    const word = normalizeKeyword(text);
    if (word === "") return null;
    const s = await settings(workspaceId);
    if (s.optOutKeywords.includes(word)) return "opt_out";
    if (s.optInKeywords.includes(word)) return "opt_in";
    if (s.helpKeywords.includes(word)) return "help";
    return null;
  }

  async function presentEvent(workspaceId: number, e: OptOutEventRecord) {
    return {
      id: e.id,
      phone: e.phone,
      action: e.action,
      source: e.source,
      reason: e.reason,
      message_id: e.threadMessageId,
      channel: e.channel,
      device_id: e.deviceId,
      contact_id: (await deps.contactOf(workspaceId, e.phone))?.id ?? null,
      at: iso(e.at),
    };
  }

  /** A number suppressed now, as the audit entry that suppressed it (written with it, always there). */
  async function presentActive(workspaceId: number, s: SuppressionRecord) {
    return presentEvent(workspaceId, (await repo.lastOptOut(workspaceId, s.phone))!);
  }

  /** The audit (every change, newest first) or, with `active`, the numbers suppressed now. */
  async function list(workspaceId: number, q: { phone: string | null; active: boolean; page: number; limit: number }) {
    const offset = (q.page - 1) * q.limit;
    if (q.active) {
      if (q.phone !== null) {
        const row = await suppressionOf(workspaceId, q.phone);
        const entries = row && q.page === 1 ? [await presentActive(workspaceId, row)] : [];
        return { entries, pagination: { page: q.page, limit: q.limit, total: row ? 1 : 0 } };
      }
      const { rows, total } = await repo.active(workspaceId, offset, q.limit);
      const entries = [];
      for (const r of rows) entries.push(await presentActive(workspaceId, r));
      return { entries, pagination: { page: q.page, limit: q.limit, total } };
    }
    const { rows, total } = await repo.events(workspaceId, q.phone, offset, q.limit);
    const entries = [];
    for (const e of rows) entries.push(await presentEvent(workspaceId, e));
    return { entries, pagination: { page: q.page, limit: q.limit, total } };
  }

  /** A number's state, for a contact or the API's answers. */
  async function status(workspaceId: number, phone: string) {
    const row = await suppressionOf(workspaceId, phone);
    return {
      phone,
      opted_out: row !== null,
      opted_out_at: iso(row?.optedOutAt ?? null),
      source: row?.source ?? null,
      reason: row?.reason ?? null,
    };
  }

  return {
    settings,
    presentSettings: async (workspaceId: number) => presentSettings(await settings(workspaceId)),
    updateSettings,
    refusal,
    readOptOuts,
    quietHold,
    optOut,
    optIn,
    /** Drops what this server keeps of a workspace's suppressions (after an erasure rewrote them). */
    forget: (workspaceId: number) => forget(workspaceId),
    keywordOf,
    list,
    status,
  };
}

export type SafetyService = ReturnType<typeof createSafetyService>;
