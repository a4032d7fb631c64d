// A pool as the API shows it: its members with their device's name and kind, their caps and
// pauses, and the pool's Messaging Service SID.
import { iso } from "../../lib/time";
import type { DeviceRow } from "../devices/model";
import { sidOf } from "../twilio/resource";
import type { PoolRepository, PoolRow } from "./repository";

/** A pool's id as Twilio's APIs name it: its Messaging Service SID (`MG` and the id in 32 hex digits). */
export const messagingServiceSid = (poolId: number) => sidOf("MG", poolId);

export async function presentPool(
  p: PoolRow,
  repo: Pick<PoolRepository, "members">,
  deviceOf: (workspaceId: number, id: number) => Promise<DeviceRow | null>,
) {
  const members = [];
  for (const m of await repo.members(p.id)) {
    const device = await deviceOf(p.workspaceId, m.deviceId);
    members.push({
      member_id: m.id,
      device_id: m.deviceId,
      device_name: device?.name ?? null,
      kind: device?.kind ?? null,
      sim_number: m.simNumber,
      number: m.number ?? device?.phoneNumber ?? null,
      paused: m.paused,
      daily_limit: m.dailyLimit,
      monthly_limit: m.monthlyLimit,
      count: m.countSegments ? "segments" : "messages",
      monthly_unique_recipients: m.monthlyUniqueRecipients,
      consecutive_failures: m.consecutiveFailures,
      paused_until: m.pausedUntil === null ? null : iso(m.pausedUntil),
    });
  }
  return {
    pool_id: p.id,
    messaging_service_sid: messagingServiceSid(p.id),
    name: p.name,
    strategy: p.strategy,
    geomatch: p.geomatch,
    is_default: p.isDefault,
    failure_threshold: p.failureThreshold,
    failure_backoff_seconds: p.failureBackoffSeconds,
    members,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
  };
}
