// Phone numbers are parsed at the edge and stored as E.164 only.
import { parsePhoneNumberFromString } from "libphonenumber-js/min";

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
  if (!SHAPE.test(trimmed)) return null;
  const parsed = parsePhoneNumberFromString(trimmed);
  if (!parsed || !parsed.isPossible()) return null;
  return parsed.number;
}
