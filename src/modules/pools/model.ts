// What a pool's choice and caps reckon with, pure: the UTC day and month a send counts in, and
// the part of a number geomatch compares and the members it puts first.
import { parsePhoneNumberFromString } from "libphonenumber-js/min";

/** The UTC day and month an instant falls in (`2026-11-26`, `2026-11`), and when each ends. */
export function periodsOf(at: number) {
  const d = new Date(at);
  const day = d.toISOString().slice(0, 10);
  return {
    day,
    month: day.slice(0, 7),
    dayEnds: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1),
    monthEnds: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1),
  };
}

/** The prefix two numbers must share to match: +1 and the area code for NANP, else the country calling code. */
export function regionOf(e164: string | null): { country: string; area: string | null } | null {
  if (!e164) return null;
  const parsed = parsePhoneNumberFromString(e164);
  if (!parsed) return null;
  const country = `+${parsed.countryCallingCode}`;
  return { country, area: country === "+1" ? e164.slice(0, 5) : null };
}

/** The usable members in the recipient's region first: the NANP area, then the country; all of them when none matches. */
export function nearest<C extends { number: string | null }>(usable: C[], recipient: string): { list: C[]; why: string | null } {
  const region = regionOf(recipient);
  if (!region) return { list: usable, why: null };
  if (region.area) {
    const area = usable.filter((c) => regionOf(c.number)?.area === region.area);
    if (area.length > 0) return { list: area, why: `area code ${region.area.slice(2)}` };
  }
  const country = usable.filter((c) => regionOf(c.number)?.country === region.country);
  if (country.length > 0) return { list: country, why: `country code ${region.country}` };
  return { list: usable, why: null };
}
