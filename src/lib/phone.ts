// Phone numbers are parsed at the edge and stored as E.164 only.
import { type CountryCode, parsePhoneNumberFromString } from "libphonenumber-js/min";

// Digits with the usual separators; the country code is mandatory (E.164 starts with "+").
const SHAPE = /^\+[\d\s().-]{2,24}$/;

/**
 * The E.164 form of `input`, or null when it is not a phone number with a country code.
 * Accepts separators ("+1 (415) 555-2671") and checks the length plan of the country with
 * libphonenumber-js; it does not insist that the number is assigned, so test ranges pass.
 */
export function toE164(input: unknown): string | null {
  if (typeof input !== "string") return null;
  const trimmed = input.trim();
  const known = recent.get(trimmed);
  if (known !== undefined) return known;
  if (!SHAPE.test(trimmed)) return null;
  const parsed = parsePhoneNumberFromString(trimmed);
  const result = parsed?.isPossible() ? (parsed.number as string) : null;
  // Parsing is a twentieth of a send; the same few numbers come again and again (a business's
  // customers), so recent answers are kept, a bounded number of them.
  if (recent.size >= RECENT_MAX) recent.clear();
  recent.set(trimmed, result);
  return result;
}

const RECENT_MAX = 10_000;
const recent = new Map<string, string | null>();

/** A national number's characters: digits and the usual separators, no leading +. */
const NATIONAL_SHAPE = /^[\d\s().-]{2,24}$/;

/**
 * `input` in E.164, reading a number written without its country code ("030 1234567") as one of
 * `country` (ISO 3166 alpha-2; the workspace's default country); with no country, as toE164.
 * "00" is the international prefix ("0049…" is +49…).
 */
export function toE164In(input: unknown, country: string | null): string | null {
  const direct = toE164(input);
  if (direct !== null || typeof input !== "string") return direct;
  const trimmed = input.trim();
  if (!NATIONAL_SHAPE.test(trimmed)) return null;
  if (/^00[1-9]/.test(trimmed.replace(/\D/g, ""))) return toE164(`+${trimmed.replace(/\D/g, "").slice(2)}`);
  if (country === null) return null;
  const parsed = parsePhoneNumberFromString(trimmed, country as CountryCode);
  return parsed?.isPossible() ? (parsed.number as string) : null;
}
