// schedule_time `YYYY-MM-DD HH:MM:SS` (24-hour) in an IANA timezone → a UTC instant.
import { formatInTimeZone, fromZonedTime } from "date-fns-tz";
import { AppError } from "./errors";

const FORMAT = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/**
 * IANA names the runtime's ICU data refuses. The POSIX-style zones (CET, EST5EDT, …) became links in
 * tzdata 2024b to the cities below, whose rules match theirs; America/Coyhaique split from Santiago
 * in 2025b and keeps UTC−3 all year, as Punta Arenas does. Any future time reads the same.
 */
const ZONES_ICU_LACKS: Record<string, string> = {
  cet: "Europe/Brussels",
  met: "Europe/Brussels",
  eet: "Europe/Athens",
  wet: "Europe/Lisbon",
  est5edt: "America/New_York",
  cst6cdt: "America/Chicago",
  mst7mdt: "America/Denver",
  pst8pdt: "America/Los_Angeles",
  "america/coyhaique": "America/Punta_Arenas",
};

function runtimeKnows(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The zone to compute offsets with: the name itself when the runtime knows it (links such as
 * US/Eastern or Asia/Calcutta included), else its equivalent from the table above, else null.
 */
export function resolveTimeZone(zone: string): string | null {
  if (zone.trim() === "") return null;
  if (runtimeKnows(zone)) return zone;
  return ZONES_ICU_LACKS[zone.toLowerCase()] ?? null;
}

/** The zone the runtime computes with for `zone` (see resolveTimeZone); 400 invalid_timezone when there is none. */
export function requireTimeZone(zone: string): string {
  const tz = resolveTimeZone(zone);
  if (tz === null) {
    throw new AppError("invalid_timezone", `timezone "${zone}" is not an IANA time zone name (e.g. Europe/Berlin)`, { field: "timezone" });
  }
  return tz;
}

/**
 * The UTC epoch ms of a local wall-clock time in `zone`. A time that does not exist there (the hour
 * skipped when clocks go forward) is refused; a time that happens twice (the hour repeated when
 * clocks go back) means its first occurrence.
 */
export function parseScheduleTime(value: string, zone: string): number {
  const m = FORMAT.exec(value);
  if (!m) {
    throw new AppError("invalid_schedule_time", `schedule_time "${value}" must be YYYY-MM-DD HH:MM:SS (24-hour)`, {
      field: "schedule_time",
    });
  }
  const tz = requireTimeZone(zone);
  const [, y, mo, d, h, mi, s] = m.map(Number);
  const asUtc = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  if (asUtc.getUTCMonth() !== mo - 1 || asUtc.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    throw new AppError("invalid_schedule_time", `schedule_time "${value}" is not a real date and time`, { field: "schedule_time" });
  }
  const iso = value.replace(" ", "T");
  const instant = fromZonedTime(iso, tz).getTime();
  // Round-trip: in a skipped hour the wall clock we get back differs from the one asked for.
  if (formatInTimeZone(instant, tz, "yyyy-MM-dd HH:mm:ss") !== value) {
    throw new AppError(
      "invalid_schedule_time",
      `schedule_time "${value}" does not exist in ${zone} (the clocks skip it for daylight saving)`,
      {
        field: "schedule_time",
      },
    );
  }
  // In a repeated hour, step back an hour if that reads the same: the first occurrence wins.
  const earlier = instant - 3_600_000;
  return formatInTimeZone(earlier, tz, "yyyy-MM-dd HH:mm:ss") === value ? earlier : instant;
}
