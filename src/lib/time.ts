// Formatting of stored epoch milliseconds for the wire.

/** ISO 8601 UTC with exactly three fraction digits, e.g. 2026-01-15T12:00:00.000Z. */
export function iso(ms: number): string;
export function iso(ms: number | null | undefined): string | null;
export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** The spec's template timestamp form `YYYY-MM-DD HH:MM:SS`, in UTC. */
export function sqlTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace("T", " ");
}

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** Start of the UTC calendar month that contains `ms`. */
export function monthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
