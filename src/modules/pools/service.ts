// Sender pools: the devices an SMS may go out through and the rule that picks one. A member is a
// paired phone (or one of its SIMs) or a cloud number. `sticky` keeps each recipient on the member
// that last texted them or that they last wrote to, while it can send; a new recipient, and the
// other strategies, take the least loaded usable member (`least_loaded`) or the next in turn
// (`round_robin`). With `geomatch`, members whose number shares the recipient's country calling
// code (and, for +1 numbers, area code) come first. Every choice says why, for the message's log.
import type { Clock } from "../../clock";
import type { Cluster } from "../../core/cluster";
import type { Storage } from "../../db/storage";
import { AppError } from "../../core/errors";
import { createGenerationCache } from "../../lib/generation-cache";
import { iso } from "../../lib/time";
import type { DeviceRow } from "../devices/model";
import { bounded, flag, nameOf, poolInput, strategyOf } from "./input";
import { createPauses, type PoolActor } from "./pauses";
import { presentPool } from "./present";
import { nearest, periodsOf } from "./model";
import type { MemberRow, PoolRepository, PoolRow } from "./repository";

export interface PoolDeps {
  storage: Storage;
  clock: Clock;
  /** Whether other servers share the database (and so may change the pools at any time). */
  cluster: Pick<Cluster, "shared">;
  repo: PoolRepository;
  /** A workspace's device by id (deleted ones are not found). */
  device: (workspaceId: number, id: number) => Promise<DeviceRow | null>;
  /** The workspace's devices, inactive ones too. */
  devicesOf: (workspaceId: number) => Promise<DeviceRow[]>;
  /** Whether a device kind carries SMS, whether it must be online (a paired phone), and whether it sends a data SMS. */
  kindOf: (kind: string) => { sms: boolean; needsPresence: boolean; dataSms?: boolean } | null;
  isOnline: (device: DeviceRow, now: number) => boolean;
  /** pool.member_paused and pool.member_resumed, in the caller's unit of work. */
  emit: (workspaceId: number, type: "pool.member_paused" | "pool.member_resumed", data: Record<string, unknown>) => Promise<void>;
}

/** A pool as the API writes it. */
export interface PoolInput {
  name?: unknown;
  strategy?: unknown;
  geomatch?: unknown;
  is_default?: unknown;
  members?: unknown;
  failure_threshold?: unknown;
  failure_backoff_seconds?: unknown;
}

/**
 * What the earlier items of one request took of a member, chosen but not stored yet: they count as
 * load, and toward its caps (the recipients it had not texted this month, for the unique cap).
 */
export interface PoolPick {
  messages: number;
  segments: number;
  recipients: Set<string>;
}

/** The member a send goes out through, and the line its log gets. */
export interface PoolChoice {
  poolId: number;
  memberId: number;
  device: DeviceRow;
  simNumber: number | null;
  note: string;
  /** Every usable member is at a cap: the message waits until this one's cap resets (ms), else null. */
  holdUntil: number | null;
}

/** Why a member is skipped for a data SMS: its device cannot send one. */
const NO_DATA_SMS = "cannot send a data SMS";

interface Candidate {
  member: MemberRow;
  device: DeviceRow | null;
  /** Why it cannot take the message now; null when it can. */
  skip: string | null;
  number: string | null;
}

export function createPoolService(deps: PoolDeps) {
  const { storage, clock, repo } = deps;
  /** Round-robin turns, per pool, in this process. */
  const turns = new Map<number, number>();

  // Every send without a device asks for its workspace's default pool. SQLite's one server keeps
  // the answer and drops it when a pool changes; on PostgreSQL it is kept while the cache
  // generation says it is current (a pool's change adds to it: migrations-pg/0015_pools.sql).
  const defaults = new Map<number, number | null>();
  const keptDefaults = createGenerationCache<number, number | null>();
  async function defaultPool(workspaceId: number, generation: number | undefined): Promise<number | null> {
    if (deps.cluster.shared) {
      const kept = keptDefaults.get(workspaceId, generation);
      if (kept !== undefined) return kept;
      const id = (await repo.defaultOf(workspaceId))?.id ?? null;
      keptDefaults.set(workspaceId, id, generation);
      return id;
    }
    const known = defaults.get(workspaceId);
    if (known !== undefined) return known;
    const id = (await repo.defaultOf(workspaceId))?.id ?? null;
    defaults.set(workspaceId, id);
    return id;
  }
  /** A pool of the workspace changed: what is kept of its default is read again (now, and once the change commits). */
  function changed(workspaceId: number) {
    defaults.delete(workspaceId);
    memberDevices = null;
    storage.afterCommit(() => {
      defaults.delete(workspaceId);
      memberDevices = null;
    });
  }

  // The devices that are pool members, so that a message's outcome on any other device costs no
  // read. Read again after a change here, and every few seconds (another server may change pools).
  let memberDevices: { ids: Set<number>; at: number } | null = null;
  async function isMemberDevice(deviceId: number): Promise<boolean> {
    const now = Date.now();
    if (!memberDevices || now - memberDevices.at > 5000) memberDevices = { ids: new Set(await repo.memberDevices()), at: now };
    return memberDevices.ids.has(deviceId);
  }

  const { membersOf } = poolInput({ device: deps.device, kindOf: deps.kindOf });
  const pauses = createPauses({ storage, clock, repo, isMemberDevice, emit: deps.emit });

  const present = (p: PoolRow) => presentPool(p, repo, deps.device);

  async function require(workspaceId: number, id: number): Promise<PoolRow> {
    const p = await repo.get(workspaceId, id);
    if (!p) throw new AppError("not_found", `pool ${id} not found`, { field: "pool_id" });
    return p;
  }

  async function nameFree(workspaceId: number, name: string, id: number | null) {
    const other = await repo.byName(workspaceId, name);
    if (other && other.id !== id)
      throw new AppError("duplicate_pool", `A pool named "${name}" already exists`, { field: "name", pool_id: other.id });
  }

  /**
   * The members of a pool with their devices, and why each cannot take a message now. For a data
   * SMS (`dataSms`), a member whose device cannot send one (a cloud number) is never a choice.
   */
  async function candidates(p: PoolRow, immediate: boolean, now: number, dataSms = false): Promise<Candidate[]> {
    const out: Candidate[] = [];
    for (const member of await repo.members(p.id)) {
      const device = await deps.device(p.workspaceId, member.deviceId);
      let skip: string | null = null;
      if (!device) skip = "its device was removed";
      else if (dataSms && deps.kindOf(device.kind)?.dataSms !== true) skip = NO_DATA_SMS;
      else if (member.paused) skip = "paused";
      else if (member.pausedUntil !== null && member.pausedUntil > now)
        skip = `paused after carrier failures until ${iso(member.pausedUntil)}`;
      else if (device.unhealthyReasons && device.unhealthyReasons.length > 0) skip = `unhealthy (${device.unhealthyReasons.join(", ")})`;
      else if (device.status !== "active") skip = "its device is inactive";
      else if (device.blockedCode !== null) skip = `its device is blocked (${device.blockedCode})`;
      else if (immediate && deps.kindOf(device.kind)?.needsPresence && !deps.isOnline(device, now)) skip = "offline";
      out.push({ member, device, skip, number: member.number ?? device?.phoneNumber ?? null });
    }
    return out;
  }

  const describe = (c: Candidate) =>
    `member ${c.member.id} (device ${c.member.deviceId}${c.member.simNumber ? `, SIM ${c.member.simNumber}` : ""})`;

  /** The member with the fewest messages waiting, counting `picks` (chosen by the same request, not stored yet). */
  async function leastLoaded(list: Candidate[], picks?: Map<number, PoolPick>): Promise<{ pick: Candidate; load: number }> {
    const counts = await repo.waiting([...new Set(list.map((c) => c.member.deviceId))]);
    // A member without a SIM of its own shares its phone's whole queue.
    const load = (c: Candidate) =>
      counts
        .filter((r) => r.deviceId === c.member.deviceId && (c.member.simNumber === null || r.simNumber === c.member.simNumber))
        .reduce((sum, r) => sum + r.n, picks?.get(c.member.id)?.messages ?? 0);
    let best = list[0];
    let bestLoad = load(best);
    for (const c of list.slice(1)) {
      const l = load(c);
      if (l < bestLoad) [best, bestLoad] = [c, l];
    }
    return { pick: best, load: bestLoad };
  }

  return {
    async create(workspaceId: number, input: PoolInput) {
      const name = nameOf(input.name);
      const strategy = input.strategy === undefined ? "sticky" : strategyOf(input.strategy);
      const geomatch = input.geomatch === undefined ? false : flag(input.geomatch, "geomatch");
      const isDefault = input.is_default === undefined ? false : flag(input.is_default, "is_default");
      const failureThreshold = input.failure_threshold === undefined ? 3 : bounded(input.failure_threshold, "failure_threshold", 1, 100);
      const failureBackoffSeconds =
        input.failure_backoff_seconds === undefined
          ? 900
          : bounded(input.failure_backoff_seconds, "failure_backoff_seconds", 10, 7 * 86_400);
      const members = await membersOf(workspaceId, input.members);
      const now = clock.now();
      const id = await storage.transaction(async () => {
        await nameFree(workspaceId, name, null);
        const id = await repo.insert({
          workspaceId,
          name,
          strategy,
          geomatch,
          isDefault,
          failureThreshold,
          failureBackoffSeconds,
          createdAt: now,
          updatedAt: now,
        });
        await repo.replaceMembers(id, members);
        if (isDefault) await repo.clearDefault(workspaceId, id);
        changed(workspaceId);
        return id;
      });
      return present((await repo.get(workspaceId, id))!);
    },

    /**
     * `by`: who changes it. A member paused or resumed by the change (its `paused`, or `resume`
     * lifting a pause after carrier failures) is announced once, in the same unit of work.
     */
    async update(workspaceId: number, id: number, input: PoolInput, by: PoolActor) {
      const current = await require(workspaceId, id);
      const next: PoolRow = {
        ...current,
        name: input.name === undefined ? current.name : nameOf(input.name),
        strategy: input.strategy === undefined ? current.strategy : strategyOf(input.strategy),
        geomatch: input.geomatch === undefined ? current.geomatch : flag(input.geomatch, "geomatch"),
        isDefault: input.is_default === undefined ? current.isDefault : flag(input.is_default, "is_default"),
        failureThreshold:
          input.failure_threshold === undefined ? current.failureThreshold : bounded(input.failure_threshold, "failure_threshold", 1, 100),
        failureBackoffSeconds:
          input.failure_backoff_seconds === undefined
            ? current.failureBackoffSeconds
            : bounded(input.failure_backoff_seconds, "failure_backoff_seconds", 10, 7 * 86_400),
        updatedAt: clock.now(),
      };
      const members = input.members === undefined ? null : await membersOf(workspaceId, input.members);
      await storage.transaction(async () => {
        await nameFree(workspaceId, next.name, id);
        await repo.update(next);
        if (members) {
          const before = await repo.members(id);
          await repo.replaceMembers(id, members);
          await pauses.announceHandChanges(workspaceId, before, await repo.members(id), by);
        }
        if (next.isDefault) await repo.clearDefault(workspaceId, id);
        changed(workspaceId);
      });
      return present((await repo.get(workspaceId, id))!);
    },

    async remove(workspaceId: number, id: number) {
      const p = await require(workspaceId, id);
      await storage.transaction(async () => {
        await repo.remove(p.id);
        changed(workspaceId);
      });
      return { pool_id: p.id, deleted: true };
    },

    get: async (workspaceId: number, id: number) => present(await require(workspaceId, id)),
    /** Whether the workspace has this pool. */
    exists: async (workspaceId: number, id: number) => (await repo.get(workspaceId, id)) !== null,

    /**
     * The numbers the workspace sends from, each with its device and SIM: a device's own number
     * (a cloud number's) and the numbers given to pool members, read in two queries.
     */
    async ownNumbers(workspaceId: number): Promise<{ number: string; deviceId: number; simNumber: number | null }[]> {
      const devices = await deps.devicesOf(workspaceId);
      const own = devices.flatMap((d) => (d.phoneNumber ? [{ number: d.phoneNumber, deviceId: d.id, simNumber: null }] : []));
      return [...own, ...(await repo.memberNumbers(workspaceId))];
    },

    async list(workspaceId: number) {
      const pools = [];
      for (const p of await repo.list(workspaceId)) pools.push(await present(p));
      return { pools };
    },

    /**
     * The member a send to `recipient` goes out through: from the pool named, else the workspace's
     * default pool; null when it names none and has no default. `immediate`: a send for now, which
     * an offline phone cannot take (a scheduled one may wait for it). `opaque`: the recipient is
     * ciphertext (an end-to-end encrypted send), so neither stickiness nor geomatch can read it:
     * the member is the least loaded (sticky) or the next in turn, among all members. `dataSms`: a
     * data SMS, which only the members that send one may take (a pool with none of them refuses
     * it); it leaves the recipient's sticky member as it was, since the text conversation is not
     * its concern.
     */
    async choose(
      workspaceId: number,
      poolRef: number | null,
      recipient: string,
      immediate: boolean,
      generation?: number,
      segments = 1,
      picks?: Map<number, PoolPick>,
      opaque = false,
      dataSms = false,
    ): Promise<PoolChoice | null> {
      const ref = poolRef ?? (await defaultPool(workspaceId, generation));
      if (ref === null) return null;
      const p = await require(workspaceId, ref);
      const now = clock.now();
      const all = await candidates(p, immediate, now, dataSms);
      if (dataSms && all.every((c) => c.device === null || c.skip === NO_DATA_SMS))
        throw new AppError(
          "data_message_unsupported",
          `A data SMS goes out only through a paired phone; pool ${p.id} (${p.name}) has no phone member`,
          { field: "data_message", pool_id: p.id },
        );
      // Carrier-plan caps, counted in the UTC day and month the message goes out in.
      const { day, month, dayEnds, monthEnds } = periodsOf(now);
      const usage = await repo.usage(
        all.filter((c) => c.skip === null).map((c) => c.member.id),
        day,
        month,
        recipient,
      );
      const resets = new Map<number, number>();
      for (const c of all) {
        if (c.skip !== null) continue;
        const m = c.member;
        const u = usage.get(m.id)!;
        // The request's earlier items on this member count as sent.
        const taken = picks?.get(m.id) ?? { messages: 0, segments: 0, recipients: new Set<string>() };
        const unit = m.countSegments ? "segments" : "messages";
        const [today, thisMonth, adds] = m.countSegments
          ? [u.daySegments + taken.segments, u.monthSegments + taken.segments, segments]
          : [u.dayMessages + taken.messages, u.monthMessages + taken.messages, 1];
        const knows = u.knowsRecipient || taken.recipients.has(recipient);
        if (m.dailyLimit !== null && today + adds > m.dailyLimit) {
          c.skip = `at its daily limit (${today} of ${m.dailyLimit} ${unit})`;
          resets.set(m.id, dayEnds);
        } else if (m.monthlyLimit !== null && thisMonth + adds > m.monthlyLimit) {
          c.skip = `at its monthly limit (${thisMonth} of ${m.monthlyLimit} ${unit})`;
          resets.set(m.id, monthEnds);
        } else if (
          m.monthlyUniqueRecipients !== null &&
          !knows &&
          u.uniqueRecipients + taken.recipients.size + 1 > m.monthlyUniqueRecipients
        ) {
          c.skip = `at its monthly limit of ${m.monthlyUniqueRecipients} recipients`;
          resets.set(m.id, monthEnds);
        }
      }
      const skipped = all.filter((c) => c.skip !== null);
      const usable = all.filter((c) => c.skip === null);
      // Every member that could send is at a cap: the one whose cap resets first takes it then.
      if (usable.length === 0 && resets.size > 0) {
        const [memberId, at] = [...resets.entries()].sort((a, b) => a[1] - b[1] || a[0] - b[0])[0];
        const c = all.find((x) => x.member.id === memberId)!;
        return {
          poolId: p.id,
          memberId,
          device: c.device!,
          simNumber: c.member.simNumber,
          holdUntil: at,
          note: `pool ${p.id} (${p.name}, ${p.strategy}): every member is at a cap; waits for ${describe(c)} until ${iso(at)}; ${skipped
            .map((x) => `${describe(x)}: ${x.skip}`)
            .join(", ")}`,
        };
      }
      if (usable.length === 0)
        throw new AppError(
          "pool_unavailable",
          `No member of pool ${p.id} (${p.name}) can send now: ${skipped.map((c) => `${describe(c)} ${c.skip}`).join("; ")}`,
          {
            pool_id: p.id,
            members: skipped.map((c) => ({ member_id: c.member.id, device_id: c.member.deviceId, reason: c.skip })),
          },
        );
      const skippedNote = skipped.length ? `; skipped ${skipped.map((c) => `${describe(c)}: ${c.skip}`).join(", ")}` : "";
      const done = (c: Candidate, why: string): PoolChoice => {
        // The request's later items see this member as loaded by one more, and nearer its caps (bulk items are stored together).
        if (picks) {
          const taken = picks.get(c.member.id) ?? { messages: 0, segments: 0, recipients: new Set<string>() };
          taken.messages++;
          taken.segments += segments;
          if (!usage.get(c.member.id)!.knowsRecipient) taken.recipients.add(recipient);
          picks.set(c.member.id, taken);
        }
        return {
          poolId: p.id,
          memberId: c.member.id,
          device: c.device!,
          simNumber: c.member.simNumber,
          note: `pool ${p.id} (${p.name}, ${p.strategy}): ${describe(c)}, ${why}${skippedNote}`,
          holdUntil: null,
        };
      };
      if (p.strategy === "sticky" && opaque) {
        const { pick, load } = await leastLoaded(usable, picks);
        return done(pick, `the recipient is encrypted, so it cannot be kept: the least loaded (${load} waiting)`);
      }
      if (p.strategy === "sticky") {
        const kept = await repo.sticky(p.id, recipient);
        const keptMember = kept === null ? null : usable.find((c) => c.member.id === kept);
        if (keptMember) return done(keptMember, "kept for this recipient");
        const near = p.geomatch ? nearest(usable, recipient) : { list: usable, why: null };
        const { pick, load } = await leastLoaded(near.list, picks);
        if (!dataSms) await repo.stick(p.id, recipient, pick.member.id, now);
        const lost = kept === null ? "new recipient" : `its member ${kept} cannot send now`;
        return done(pick, `${lost}: the least loaded (${load} waiting)${near.why ? ` in ${near.why}` : ""}`);
      }
      const near = p.geomatch && !opaque ? nearest(usable, recipient) : { list: usable, why: null };
      const region = near.why ? ` in ${near.why}` : "";
      if (p.strategy === "least_loaded") {
        const { pick, load } = await leastLoaded(near.list, picks);
        return done(pick, `the least loaded (${load} waiting)${region}`);
      }
      const turn = turns.get(p.id) ?? 0;
      turns.set(p.id, turn + 1);
      return done(near.list[turn % near.list.length], `next in turn${region}`);
    },

    /** A message stored for a member (inside the send's unit of work): counted in the day and month it is due in. */
    counted: async (memberId: number, at: number, segments: number, recipient: string): Promise<void> => {
      const { day, month } = periodsOf(at);
      await repo.addUsage(memberId, day, month, segments, recipient);
    },

    /** What each member of a pool sent today and this month (UTC), against its caps. */
    async usage(workspaceId: number, id: number) {
      const p = await require(workspaceId, id);
      const now = clock.now();
      const { day, month, dayEnds, monthEnds } = periodsOf(now);
      const members = await repo.members(p.id);
      const usage = await repo.usage(
        members.map((m) => m.id),
        day,
        month,
        null,
      );
      return {
        pool_id: p.id,
        day,
        month,
        day_resets_at: iso(dayEnds),
        month_resets_at: iso(monthEnds),
        members: members.map((m) => {
          const u = usage.get(m.id)!;
          return {
            member_id: m.id,
            device_id: m.deviceId,
            sim_number: m.simNumber,
            count: m.countSegments ? "segments" : "messages",
            today: { messages: u.dayMessages, segments: u.daySegments, limit: m.dailyLimit },
            this_month: { messages: u.monthMessages, segments: u.monthSegments, limit: m.monthlyLimit },
            unique_recipients: { count: u.uniqueRecipients, limit: m.monthlyUniqueRecipients },
          };
        }),
      };
    },

    outcome: pauses.outcome,
    resumeDue: pauses.resumeDue,

    /**
     * Where the waiting messages of a phone that went offline go: another usable phone member of the
     * first pool (by id) holding that phone, the least loaded; null when there is none.
     */
    async rehomeTarget(workspaceId: number, deviceId: number): Promise<{ deviceId: number; simNumber: number | null } | null> {
      const poolIds = [...new Set((await repo.membersOnDevice(workspaceId, deviceId)).map((m) => m.poolId))].sort((a, b) => a - b);
      for (const poolId of poolIds) {
        const p = await repo.get(workspaceId, poolId);
        if (!p) continue;
        const phones = (await candidates(p, true, clock.now())).filter(
          (c) => c.skip === null && c.member.deviceId !== deviceId && deps.kindOf(c.device!.kind)?.needsPresence,
        );
        if (phones.length === 0) continue;
        const { pick } = await leastLoaded(phones);
        return { deviceId: pick.member.deviceId, simNumber: pick.member.simNumber };
      }
      return null;
    },

    /** A message came in from `sender` on `deviceId`: in the pools holding that device, the sender sticks to it. */
    async heardFrom(workspaceId: number, deviceId: number, sender: string, simNumber: number | null): Promise<void> {
      const members = await repo.membersOnDevice(workspaceId, deviceId);
      const byPool = new Map<number, MemberRow[]>();
      for (const m of members) byPool.set(m.poolId, [...(byPool.get(m.poolId) ?? []), m]);
      const now = clock.now();
      for (const [poolId, list] of byPool) {
        const exact = list.find((m) => simNumber !== null && m.simNumber === simNumber);
        const kept = await repo.sticky(poolId, sender);
        // A phone member with no SIM of its own, or the SIM it came in on; a member already kept on this phone stays.
        const pick = exact ?? list.find((m) => m.id === kept) ?? list.find((m) => m.simNumber === null) ?? list[0];
        await repo.stick(poolId, sender, pick.id, now);
      }
    },
  };
}

export type PoolService = ReturnType<typeof createPoolService>;
