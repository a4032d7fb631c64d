// What an inbound rule matches (src/modules/rules/match.ts), as pure functions: keywords are the
// message's first word, compared normalised; patterns run on RE2 and refuse what RE2 cannot run;
// business hours are read in a zone, past midnight belonging to the day they started on.
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors";
import { checkMatch, checkOutsideHours, firstWord, isOutsideHours, matcherOf, normalizeWord } from "../../src/modules/rules/match";

/** The AppError `fn` throws, for its code and field. */
function refusal(fn: () => unknown): { code: string; field: unknown } {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    const e = error as AppError;
    return { code: e.code, field: e.data.field };
  }
  throw new Error("expected a refusal");
}

describe("keywords", () => {
  test("a word is compared upper case, NFKC-normalised, without the punctuation around it", () => {
    expect(normalizeWord("stop!")).toBe("STOP");
    expect(normalizeWord("¡Hola!")).toBe("HOLA");
    expect(normalizeWord("ｓｔｏｐ")).toBe("STOP");
    expect(normalizeWord("co-op")).toBe("CO-OP");
  });

  test("the first word of a message, past leading space", () => {
    expect(firstWord("  Price? please")).toBe("PRICE");
    expect(firstWord("price list")).toBe("PRICE");
    expect(firstWord("")).toBe("");
  });

  test("a keyword matches the first word only", () => {
    const stop = matcherOf(checkMatch({ keyword: "stop" }));
    expect(stop("Stop.")).toBe(true);
    expect(stop("stop sending me these")).toBe(true);
    expect(stop("please stop")).toBe(false);
    expect(stop("stopping by at 5")).toBe(false);
  });

  test("a list of keywords matches any of them", () => {
    const m = matcherOf(checkMatch({ keyword: ["hours", "open"] }));
    expect(m("Open today?")).toBe(true);
    expect(m("hours?")).toBe(true);
    expect(m("closed?")).toBe(false);
  });
});

describe("checkMatch", () => {
  test("keeps keywords normalised, one left of duplicates", () => {
    expect(checkMatch({ keyword: "stop" })).toEqual({ keyword: "STOP" });
    expect(checkMatch({ keyword: ["stop", "STOP!"] })).toEqual({ keyword: "STOP" });
    expect(checkMatch({ keyword: ["stop", "start"] })).toEqual({ keyword: ["STOP", "START"] });
  });

  test("keeps a pattern as given, case_sensitive only when true", () => {
    expect(checkMatch({ regex: "order \\d+", case_sensitive: false })).toEqual({ regex: "order \\d+" });
    expect(checkMatch({ regex: "order \\d+", case_sensitive: true })).toEqual({ regex: "order \\d+", case_sensitive: true });
    expect(checkMatch({ any: true })).toEqual({ any: true });
  });

  test("refuses anything but exactly one of keyword, regex and any", () => {
    expect(refusal(() => checkMatch({}))).toEqual({ code: "validation_error", field: "match" });
    expect(refusal(() => checkMatch({ keyword: "stop", any: true }))).toEqual({ code: "validation_error", field: "match" });
    expect(refusal(() => checkMatch({ any: false }))).toEqual({ code: "validation_error", field: "match.any" });
  });

  test("refuses an empty keyword list, an empty keyword and a keyword of two words", () => {
    for (const keyword of [[], "", "!!", "two words"]) {
      expect(refusal(() => checkMatch({ keyword }))).toEqual({ code: "validation_error", field: "match.keyword" });
    }
  });

  test("refuses a pattern RE2 cannot compile: a syntax error, a backreference, lookaround", () => {
    for (const regex of ["(a", "(a)\\1", "(?=a)b"]) {
      expect(refusal(() => checkMatch({ regex }))).toEqual({ code: "invalid_regex", field: "match.regex" });
    }
  });
});

describe("patterns", () => {
  test("a pattern is found anywhere in the message, case-insensitive unless asked", () => {
    const loose = matcherOf({ regex: "order \\d+" });
    expect(loose("Where is ORDER 12?")).toBe(true);
    expect(loose("where is my order?")).toBe(false);
    const strict = matcherOf({ regex: "order \\d+", case_sensitive: true });
    expect(strict("Where is ORDER 12?")).toBe(false);
    expect(strict("where is order 12?")).toBe(true);
  });

  test("only the message's first 4,096 characters are looked at", () => {
    const m = matcherOf({ regex: "needle" });
    expect(m(`${"x".repeat(4090)}needle`)).toBe(true);
    expect(m(`${"x".repeat(4091)}needle`)).toBe(false);
  });

  test("any matches every message, the empty one too", () => {
    expect(matcherOf({ any: true })("")).toBe(true);
  });
});

describe("business hours", () => {
  test("are stored as HH:MM with three-letter days in week order, workdays by default", () => {
    expect(checkOutsideHours({ start: "09:00", end: "17:30" })).toEqual({
      start: "09:00",
      end: "17:30",
      days: ["mon", "tue", "wed", "thu", "fri"],
    });
    expect(checkOutsideHours({ start: "18:00", end: "02:00", days: ["Saturday", " FRI ", "sun"] }).days).toEqual(["sun", "fri", "sat"]);
  });

  test("refuse a time not written HH:MM, start equal to end, an unknown day and no day", () => {
    expect(refusal(() => checkOutsideHours({ start: "9:00", end: "17:00" })).field).toBe("when.outside_hours.start");
    expect(refusal(() => checkOutsideHours({ start: "09:00", end: "24:00" })).field).toBe("when.outside_hours.end");
    expect(refusal(() => checkOutsideHours({ start: "09:00", end: "09:00" })).field).toBe("when.outside_hours");
    expect(refusal(() => checkOutsideHours({ start: "09:00", end: "17:00", days: ["mon", "funday"] })).field).toBe(
      "when.outside_hours.days",
    );
    expect(refusal(() => checkOutsideHours({ start: "09:00", end: "17:00", days: [] })).field).toBe("when.outside_hours.days");
  });

  // 2026-01-14 is a Wednesday, 2026-01-16 a Friday, 2026-01-17 a Saturday.
  const at = (iso: string) => Date.parse(iso);
  const office = checkOutsideHours({ start: "09:00", end: "17:00" });

  test("outside is before start, from end on, and any day not listed", () => {
    expect(isOutsideHours(office, at("2026-01-14T12:00:00Z"), "UTC")).toBe(false);
    expect(isOutsideHours(office, at("2026-01-14T09:00:00Z"), "UTC")).toBe(false);
    expect(isOutsideHours(office, at("2026-01-14T08:59:00Z"), "UTC")).toBe(true);
    expect(isOutsideHours(office, at("2026-01-14T17:00:00Z"), "UTC")).toBe(true);
    expect(isOutsideHours(office, at("2026-01-17T12:00:00Z"), "UTC")).toBe(true);
  });

  test("are read on the zone's clock", () => {
    // 14:00 UTC is 09:00 in New York in January (UTC-5).
    expect(isOutsideHours(office, at("2026-01-14T14:00:00Z"), "America/New_York")).toBe(false);
    expect(isOutsideHours(office, at("2026-01-14T13:59:00Z"), "America/New_York")).toBe(true);
    // 01:30 UTC on a Friday is 10:30 in Tokyo (UTC+9): open there, closed on UTC's clock.
    expect(isOutsideHours(office, at("2026-01-16T01:30:00Z"), "Asia/Tokyo")).toBe(false);
    expect(isOutsideHours(office, at("2026-01-16T01:30:00Z"), "UTC")).toBe(true);
    // 01:30 UTC on a Monday is still Sunday evening in New York: closed there, whatever the hour.
    expect(isOutsideHours(checkOutsideHours({ start: "00:00", end: "23:59" }), at("2026-01-19T01:30:00Z"), "America/New_York")).toBe(true);
    expect(isOutsideHours(checkOutsideHours({ start: "00:00", end: "23:59" }), at("2026-01-19T01:30:00Z"), "UTC")).toBe(false);
  });

  test("hours past midnight belong to the day they started on", () => {
    const friday = checkOutsideHours({ start: "18:00", end: "02:00", days: ["fri"] });
    expect(isOutsideHours(friday, at("2026-01-16T20:00:00Z"), "UTC")).toBe(false);
    expect(isOutsideHours(friday, at("2026-01-17T01:00:00Z"), "UTC")).toBe(false);
    expect(isOutsideHours(friday, at("2026-01-17T02:00:00Z"), "UTC")).toBe(true);
    expect(isOutsideHours(friday, at("2026-01-17T20:00:00Z"), "UTC")).toBe(true);
    expect(isOutsideHours(friday, at("2026-01-16T01:00:00Z"), "UTC")).toBe(true);
    expect(isOutsideHours(friday, at("2026-01-16T10:00:00Z"), "UTC")).toBe(true);
  });
});
