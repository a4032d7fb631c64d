// What a pool's create and update bodies may hold, checked field by field: its name, strategy,
// bounds and flags, and each member against the workspace's devices (its kind, its SIMs, its
// number). Every refusal names the field.
import { AppError } from "../../core/errors";
import { toE164 } from "../../lib/phone";
import { reportedSimNumbers } from "../devices/service";
import type { DeviceRow } from "../devices/model";
import type { NewMember, PoolStrategy } from "./repository";

export const STRATEGIES: readonly PoolStrategy[] = ["sticky", "round_robin", "least_loaded"];
const MEMBER_FIELDS = [
  "device_id",
  "sim_number",
  "number",
  "paused",
  "resume",
  "daily_limit",
  "monthly_limit",
  "count",
  "monthly_unique_recipients",
];

const MAX_MEMBERS = 50;

export const bad = (message: string, field: string) => new AppError("validation_error", message, { field });

export function nameOf(raw: unknown): string {
  if (typeof raw !== "string" || !raw.trim()) throw bad("name must not be blank", "name");
  if (raw.trim().length > 100) throw bad("name: at most 100 characters", "name");
  return raw.trim();
}
export function strategyOf(raw: unknown): PoolStrategy {
  if (!STRATEGIES.includes(raw as PoolStrategy)) throw bad(`strategy must be one of ${STRATEGIES.join(", ")}`, "strategy");
  return raw as PoolStrategy;
}
export function bounded(raw: unknown, field: string, min: number, max: number): number {
  if (typeof raw !== "number" || !Number.isInteger(raw) || raw < min || raw > max)
    throw bad(`${field} must be a whole number from ${min} to ${max}`, field);
  return raw;
}
export function flag(raw: unknown, field: string): boolean {
  if (typeof raw !== "boolean") throw bad(`${field} must be true or false`, field);
  return raw;
}

/** What checking a pool's members needs: the workspace's devices and what each kind can do. */
export interface MemberDeps {
  /** A workspace's device by id (deleted ones are not found). */
  device: (workspaceId: number, id: number) => Promise<DeviceRow | null>;
  /** Whether a device kind carries SMS, and whether it must be online (a paired phone). */
  kindOf: (kind: string) => { sms: boolean; needsPresence: boolean } | null;
}

/** The members a request gives, checked one by one against the workspace's devices. */
export function poolInput(deps: MemberDeps) {
  async function memberOf(workspaceId: number, raw: unknown, at: number): Promise<NewMember> {
    const field = `members[${at}]`;
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw bad(`${field} must be an object with device_id`, field);
    const m = raw as Record<string, unknown>;
    for (const key of Object.keys(m))
      if (!MEMBER_FIELDS.includes(key)) throw bad(`${field}.${key} is not a member field`, `${field}.${key}`);
    if (typeof m.device_id !== "number" || !Number.isSafeInteger(m.device_id))
      throw bad(`${field}.device_id must be a device id`, `${field}.device_id`);
    const device = await deps.device(workspaceId, m.device_id);
    if (!device) throw new AppError("not_found", `device ${m.device_id} not found`, { field: `${field}.device_id` });
    const kind = deps.kindOf(device.kind);
    if (!kind?.sms)
      throw new AppError("invalid_device", `device ${device.id} is a ${device.kind} device: a pool's members send SMS`, {
        field: `${field}.device_id`,
      });
    let simNumber: number | null = null;
    if (m.sim_number !== undefined && m.sim_number !== null) {
      if (!kind.needsPresence)
        throw new AppError("option_not_supported", `sim_number applies to paired phones; device ${device.id} is a ${device.kind} device`, {
          field: `${field}.sim_number`,
        });
      if (typeof m.sim_number !== "number" || !Number.isInteger(m.sim_number) || m.sim_number < 1 || m.sim_number > 3)
        throw bad(`${field}.sim_number must be 1, 2 or 3`, `${field}.sim_number`);
      const sims = reportedSimNumbers(device);
      if (sims.length > 0 && !sims.includes(m.sim_number))
        throw new AppError("invalid_sim_number", `Device ${device.id} has no SIM ${m.sim_number}; its SIMs are ${sims.join(", ")}`, {
          field: `${field}.sim_number`,
        });
      simNumber = m.sim_number;
    }
    let number: string | null = null;
    if (m.number !== undefined && m.number !== null) {
      number = toE164(m.number);
      if (!number)
        throw new AppError("invalid_phone_number", `Invalid phone number "${String(m.number)}" in ${field}.number`, {
          field: `${field}.number`,
        });
    }
    if (m.paused !== undefined && typeof m.paused !== "boolean") throw bad(`${field}.paused must be true or false`, `${field}.paused`);
    const cap = (key: string): number | null => {
      const v = m[key];
      if (v === undefined || v === null) return null;
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1)
        throw bad(`${field}.${key} must be a whole number of at least 1`, `${field}.${key}`);
      return v;
    };
    if (m.count !== undefined && m.count !== "messages" && m.count !== "segments")
      throw bad(`${field}.count must be "messages" or "segments"`, `${field}.count`);
    return {
      deviceId: device.id,
      simNumber,
      number,
      paused: m.paused === true,
      dailyLimit: cap("daily_limit"),
      monthlyLimit: cap("monthly_limit"),
      countSegments: m.count === "segments",
      monthlyUniqueRecipients: cap("monthly_unique_recipients"),
      resume: m.resume === true,
    };
  }

  async function membersOf(workspaceId: number, raw: unknown): Promise<NewMember[]> {
    if (!Array.isArray(raw) || raw.length === 0) throw bad("members must be a list of at least one member", "members");
    if (raw.length > MAX_MEMBERS) throw bad(`members: at most ${MAX_MEMBERS}`, "members");
    const out: NewMember[] = [];
    for (const [i, m] of raw.entries()) out.push(await memberOf(workspaceId, m, i));
    const seen = new Set<string>();
    for (const [i, m] of out.entries()) {
      const key = `${m.deviceId}:${m.simNumber ?? ""}`;
      if (seen.has(key))
        throw bad(`members[${i}] repeats device ${m.deviceId}${m.simNumber ? ` SIM ${m.simNumber}` : ""}`, `members[${i}]`);
      seen.add(key);
    }
    return out;
  }

  return { membersOf };
}
