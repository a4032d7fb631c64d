// Blocked business numbers: the platform's account-level errors block a number (device.blocked),
// a relink puts it on probation, and a send that succeeds after the block unblocks it.
import { AppError } from "../../core/errors";
import type { DeviceRow } from "../../modules/devices/model";
import type { DispatchOutcome } from "../types";
import { chatappConfigOf } from "./adapter";
import type { ChatappContext } from "./context";

export function createBlocking(ctx: ChatappContext) {
  const { storage, clock, events, repo } = ctx;

  /** A blocked number may send again once relinked after the block, to prove the fix. */
  const onProbation = (device: DeviceRow) =>
    device.blockedAt !== null && (chatappConfigOf(device.config)?.relinkedAt ?? 0) > device.blockedAt;

  async function block(device: DeviceRow, code: string, reason: string): Promise<void> {
    const now = clock.now();
    await storage.transaction(async () => {
      await repo.setBlocked(device.id, code, reason, now);
      await events.emit(device.workspaceId, "device.blocked", {
        device_id: device.id,
        name: device.name,
        kind: device.kind,
        blocked_code: code,
        blocked_reason: reason,
      });
    });
  }

  async function unblock(device: DeviceRow): Promise<void> {
    await storage.transaction(async () => {
      await repo.clearBlocked(device.id, clock.now());
      await events.emit(device.workspaceId, "device.unblocked", { device_id: device.id, name: device.name, kind: device.kind });
    });
  }

  function blockedError(device: DeviceRow) {
    return new AppError(
      "device_blocked",
      `Device ${device.id} is blocked by the platform (${device.blockedCode}: ${device.blockedReason}); fix the problem and relink it`,
      {
        device_id: device.id,
        blocked_code: device.blockedCode,
        blocked_reason: device.blockedReason,
      },
    );
  }

  return {
    onProbation,
    block,
    unblock,
    blockedError,

    /** Before the platform is called: a blocked number fails at once with its pre-blocked error. */
    preflight(device: DeviceRow): DispatchOutcome | null {
      if (device.blockedCode !== null && !onProbation(device)) {
        return {
          kind: "permanent",
          code: "device_blocked",
          reason: `the number is blocked (${device.blockedCode}: ${device.blockedReason})`,
        };
      }
      return null;
    },
  };
}

export type Blocking = ReturnType<typeof createBlocking>;
