// Which device carries a send: the one it names, its sender pool's member, or the first active
// device of its channel that can carry it now.
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { DELIVERY_DESCRIPTION, ROUTE_DESCRIPTION, type DeliveryType, type DeviceKind } from "../../core/kinds";
import { createGenerationCache } from "../../lib/generation-cache";
import type { DeviceRow } from "../devices/model";
import type { PoolChoice, PoolPick } from "../pools/service";
import type { SendingContext } from "./context";
import type { Common, PrepareCache, SendInput } from "./types";

/**
 * Of the active devices that can carry a send, in their order, the one it goes through: the first
 * that is not blocked and, for an immediate send, is present (a paired phone that reports in; a
 * scheduled send may wait for its phone). When none is, the first device stands, and its reason is
 * the answer: offline when it needs presence and the send is immediate (`offline`), else it takes
 * the send as it is (a blocked device fails it in the channel's own words). No device: neither.
 */
export function pickDevice<D extends { blockedCode: string | null }>(
  candidates: readonly D[],
  opts: { immediate: boolean; present: (device: D) => boolean },
): { device: D | null; offline: D | null } {
  const usable = candidates.find((d) => d.blockedCode === null && (!opts.immediate || opts.present(d)));
  if (usable) return { device: usable, offline: null };
  const first = candidates[0];
  if (first === undefined) return { device: null, offline: null };
  if (opts.immediate && !opts.present(first)) return { device: null, offline: first };
  return { device: first, offline: null };
}

export function createDeviceChoice(ctx: SendingContext) {
  const { deps, CARRIERS, needsPresence, isOnline } = ctx;
  const { clock, devices } = deps;

  // Each workspace's devices are also kept between requests (src/lib/generation-cache.ts),
  // at most a second, and only while every phone among them looks online: a phone's last contact,
  // which says whether it is, is written about once a second and leaves the cache generation
  // alone, so a phone that looks offline is read again (it may have called in since).
  const keptDevices = createGenerationCache<number, { rows: DeviceRow[]; at: number }>();

  /**
   * The workspace's devices, read once per request: a bulk request's items share one read (the
   * `seen` of its prepare calls) instead of a read per item; and once a second while
   * nothing about them changes.
   */
  async function activeDevices(workspaceId: number, seen: PrepareCache | undefined, generation: number | undefined): Promise<DeviceRow[]> {
    const cached = seen?.devices.get(workspaceId);
    if (cached) return cached;
    const now = clock.now();
    const kept = keptDevices.get(workspaceId, generation);
    // A phone that looks offline in what is kept may have called in since: read again then.
    const current = kept && now >= kept.at && now - kept.at < 1000 && kept.rows.every((d) => !needsPresence(d) || isOnline(d, now));
    const rows = current ? kept.rows : await devices.all(workspaceId, false);
    if (rows !== kept?.rows) keptDevices.set(workspaceId, { rows, at: now }, generation);
    seen?.devices.set(workspaceId, rows);
    return rows;
  }

  /**
   * The device to send through: the one named, or the first active one that can carry it now.
   * `kind` narrows the choice to one route's devices (a failover send); a named device of another
   * kind is then left for its own route. `only` narrows the choice among unnamed devices further
   * (to those that send a data SMS).
   */
  async function chooseDevice(
    workspaceId: number,
    channel: DeliveryType,
    ref: string | number | null | undefined,
    immediate: boolean,
    kind: DeviceKind | null,
    seen: PrepareCache | undefined,
    generation: number | undefined,
    only?: (kind: DeviceKind) => boolean,
  ): Promise<DeviceRow> {
    const now = clock.now();
    const carries = (k: DeviceKind) => (kind === null ? CARRIERS[channel].includes(k) : k === kind);
    if (ref !== undefined && ref !== null && String(ref).trim() !== "") {
      const text = String(ref).trim();
      const device = /^\d+$/.test(text) ? await devices.get(workspaceId, Number(text)) : null;
      if (!device) throw new AppError("not_found", `device ${text} not found`, { field: "device_id" });
      if (kind === null || device.kind === kind) {
        if (!carries(device.kind)) {
          throw new AppError("invalid_device", `device ${device.id} is a ${device.kind} device and cannot carry ${channel} messages`, {
            device_id: device.id,
            kind: device.kind,
          });
        }
        if (device.status !== "active") throw new AppError("device_inactive", `device ${device.id} is inactive`, { device_id: device.id });
        if (needsPresence(device) && immediate && !isOnline(device, now)) throw offline(device);
        return device;
      }
    }
    const candidates = (await activeDevices(workspaceId, seen, generation)).filter((d) => carries(d.kind) && (!only || only(d.kind)));
    const picked = pickDevice(candidates, { immediate, present: (d) => !needsPresence(d) || isOnline(d, now) });
    if (picked.device) return picked.device;
    if (picked.offline) throw offline(picked.offline);
    const what = kind !== null ? ROUTE_DESCRIPTION[kind] : DELIVERY_DESCRIPTION[channel];
    throw new AppError("no_active_device", `No active ${what} in this workspace`, { channel, ...(kind !== null ? { route: kind } : {}) });
  }

  /**
   * The sender pool's member for an SMS that names no device: from `pool_id`, else the workspace's
   * default pool. Not on a failover route (its devices are the route's), nor for a send that picks a
   * SIM itself without a pool. Null: no pool applies, the device is chosen as without pools.
   */
  async function poolChoice(
    auth: AuthContext,
    input: SendInput,
    common: Common,
    channel: DeliveryType,
    kind: DeviceKind | null,
    segments: number,
    picks?: Map<number, PoolPick>,
  ): Promise<PoolChoice | null> {
    const named = input.poolId !== undefined && input.poolId !== null;
    const device = input.deviceId !== undefined && input.deviceId !== null && String(input.deviceId).trim() !== "";
    if (named && device) throw new AppError("validation_error", "Give pool_id or device_id, not both", { field: "pool_id" });
    if (named && input.simNumber !== undefined && input.simNumber !== null)
      throw new AppError("validation_error", "sim_number needs device_id: a pool's member names its own SIM", { field: "sim_number" });
    if (named && (channel !== "sms" || kind !== null))
      throw new AppError("validation_error", "pool_id applies to SMS sends without a failover order (routes)", { field: "pool_id" });
    if (!deps.pools || channel !== "sms" || kind !== null || device) return null;
    if (!named && input.simNumber !== undefined && input.simNumber !== null) return null;
    return deps.pools.choose(
      auth.workspaceId,
      named ? Number(input.poolId) : null,
      common.recipient,
      common.scheduleAt === null,
      auth.cacheGeneration,
      segments,
      picks,
      false,
      common.dataMessage != null,
    );
  }

  function offline(device: DeviceRow) {
    return new AppError("device_offline", `Device ${device.id} is offline: the paired phone has not reported for more than 5 minutes`, {
      device_id: device.id,
      last_sync: device.lastSeenAt === null ? null : new Date(device.lastSeenAt).toISOString(),
    });
  }

  return { chooseDevice, poolChoice };
}

export type DeviceChoice = ReturnType<typeof createDeviceChoice>;
