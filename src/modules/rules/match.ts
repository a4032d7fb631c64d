// What an inbound rule matches, and when it holds. A keyword is the message's first word; a regular
// expression runs on RE2's linear-time engine (re2js), so no pattern a user saves can hold the event
// loop however the message reads; business hours are read in the workspace's time zone.
import { RE2JS } from "re2js";
import { AppError } from "../../core/errors";
import { formatClock, localMinutes, localWeekday, parseClock } from "../../lib/quiet-hours";

export interface MatchSpec {
  keyword?: string | string[];
  regex?: string;
  case_sensitive?: boolean;
  any?: boolean;
}

export interface OutsideHours {
  start: string;
  end: string;
  days?: string[];
}

export const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;
const WORKDAYS = ["mon", "tue", "wed", "thu", "fri"];
/** Longer messages are matched on their start: enough for any keyword or pattern a rule needs. */
const MATCHED_LENGTH = 4096;

function invalid(field: string, reason: string, code: "validation_error" | "invalid_regex" = "validation_error"): AppError {
  return new AppError(code, `Invalid body field '${field}': ${reason}`, { field, location: "body", reason });
}

/** A word as keywords are compared: Unicode-normalised, upper case, without the punctuation around it. */
export function normalizeWord(word: string): string {
  return word
    .normalize("NFKC")
    .toUpperCase()
    .replace(/^[\p{P}\p{S}]+|[\p{P}\p{S}]+$/gu, "");
}

/** The message's first word, as keywords are compared ("Price?" and "price list" both give PRICE). */
export function firstWord(body: string): string {
  return normalizeWord(body.trim().split(/\s+/u)[0] ?? "");
}

/** The spec checked and stored as given (keywords normalised); a bad one is a 400 naming the field. */
export function checkMatch(spec: MatchSpec): MatchSpec {
  const given = (["keyword", "regex", "any"] as const).filter((k) => spec[k] !== undefined);
  if (given.length !== 1) throw invalid("match", "give exactly one of keyword, regex or any");
  if (spec.keyword !== undefined) {
    const list = (Array.isArray(spec.keyword) ? spec.keyword : [spec.keyword]).map(normalizeWord);
    if (list.length === 0 || list.some((w) => w === "" || /\s/u.test(w)))
      throw invalid("match.keyword", "each keyword is one word of letters or digits");
    const unique = [...new Set(list)];
    return { keyword: unique.length === 1 ? unique[0] : unique };
  }
  if (spec.regex !== undefined) {
    compile(spec.regex, spec.case_sensitive === true);
    return { regex: spec.regex, ...(spec.case_sensitive ? { case_sensitive: true } : {}) };
  }
  if (spec.any !== true) throw invalid("match.any", "must be true (any message matches)");
  return { any: true };
}

function compile(pattern: string, caseSensitive: boolean) {
  try {
    return RE2JS.compile(pattern, caseSensitive ? 0 : RE2JS.CASE_INSENSITIVE);
  } catch (error) {
    throw invalid(
      "match.regex",
      `${(error as Error).message} (RE2 syntax: no backreferences or lookaround; matching takes time in proportion to the message)`,
      "invalid_regex",
    );
  }
}

/** A test for message bodies; compiled once per rule and kept. */
export function matcherOf(spec: MatchSpec): (body: string) => boolean {
  if (spec.any) return () => true;
  if (spec.keyword !== undefined) {
    const words = new Set(Array.isArray(spec.keyword) ? spec.keyword : [spec.keyword]);
    return (body) => words.has(firstWord(body));
  }
  const re = compile(spec.regex ?? "", spec.case_sensitive === true);
  return (body) => re.matcher(body.slice(0, MATCHED_LENGTH)).find();
}

/** Business hours checked and stored as HH:MM, the days as three-letter names in week order. */
export function checkOutsideHours(input: OutsideHours): Required<OutsideHours> {
  const start = parseClock(input.start);
  const end = parseClock(input.end);
  if (start === null) throw invalid("when.outside_hours.start", 'must be a 24-hour time "HH:MM", e.g. "09:00"');
  if (end === null) throw invalid("when.outside_hours.end", 'must be a 24-hour time "HH:MM", e.g. "17:00"');
  if (start === end) throw invalid("when.outside_hours", "start and end are the same time");
  const days = (input.days ?? WORKDAYS).map((d) => d.trim().toLowerCase().slice(0, 3));
  const unknown = days.find((d) => !(DAYS as readonly string[]).includes(d));
  if (unknown !== undefined) throw invalid("when.outside_hours.days", `unknown day "${unknown}"; days are ${DAYS.join(", ")}`);
  if (days.length === 0) throw invalid("when.outside_hours.days", "name at least one open day");
  return { start: formatClock(start), end: formatClock(end), days: DAYS.filter((d) => days.includes(d)) };
}

/**
 * Whether `at` falls outside the open hours in `zone`: on a day not listed, or before `start` or
 * from `end` on. An `end` before `start` means hours past midnight (open 18:00 to 02:00), which
 * belong to the day they started on.
 */
export function isOutsideHours(hours: Required<OutsideHours>, at: number, zone: string): boolean {
  const start = parseClock(hours.start)!;
  const end = parseClock(hours.end)!;
  const minutes = localMinutes(at, zone);
  const day = localWeekday(at, zone);
  const openOn = (d: number) => hours.days.includes(DAYS[(d + 7) % 7]);
  if (start < end) return !(openOn(day) && minutes >= start && minutes < end);
  // Past midnight: open from start to midnight on an open day, and from midnight to end the day after one.
  if (minutes >= start) return !openOn(day);
  if (minutes < end) return !openOn(day - 1);
  return true;
}
