// The health a paired phone reports in its system:ping webhook: the app's HealthService checks
// (battery:level, battery:charging, connection:status, connection:cellular, messages:failed) read
// into one summary, and the reasons that summary makes the phone unhealthy.
import type { PhoneHealth } from "../../modules/devices/schema";

/** Below this battery level, off the charger, a phone is unhealthy (it may die mid-queue). */
export const LOW_BATTERY_PERCENT = 15;

/** The app's CellularNetworkType enum, by ordinal. */
const CELLULAR = ["none", "unknown", "2g", "3g", "4g", "5g"];

type Check = { status?: unknown; observedValue?: unknown };

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

/**
 * The summary of a system:ping payload (`{health: {status, version, checks: {...}}}`), or null
 * when it carries no checks. A check the app did not send stays null.
 */
export function readPing(payload: Record<string, unknown>, at: number): PhoneHealth | null {
  const health = payload.health;
  if (!health || typeof health !== "object") return null;
  const h = health as { status?: unknown; version?: unknown; checks?: unknown };
  if (!h.checks || typeof h.checks !== "object") return null;
  const checks = h.checks as Record<string, Check | undefined>;
  const value = (name: string) => num(checks[name]?.observedValue);
  const level = value("battery:level");
  // battery:charging is a set of flags: 1 charging, 2 on AC, 4 on USB.
  const power = value("battery:charging");
  const connected = value("connection:status");
  const cellular = value("connection:cellular");
  return {
    status: str(h.status),
    batteryLevel: level === null ? null : Math.max(0, Math.min(100, Math.round(level))),
    charging: power === null ? null : (power & 1) !== 0,
    plugged: power === null ? null : (power & 6) !== 0,
    connected: connected === null ? null : connected !== 0,
    cellular: cellular === null ? null : (CELLULAR[cellular] ?? "unknown"),
    failedMessages: value("messages:failed"),
    failedStatus: str(checks["messages:failed"]?.status),
    appVersion: str(h.version),
    reportedAt: at,
  };
}

/**
 * Why a reported health is unhealthy: `low_battery` (under 15 % and neither charging nor plugged
 * in) and `no_connection` (the app says it has no internet connection). Empty when healthy.
 */
export function unhealthyReasons(h: PhoneHealth): string[] {
  const reasons: string[] = [];
  if (h.batteryLevel !== null && h.batteryLevel < LOW_BATTERY_PERCENT && !h.charging && !h.plugged) reasons.push("low_battery");
  if (h.connected === false) reasons.push("no_connection");
  return reasons;
}
