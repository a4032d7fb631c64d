// What a pool's choice and caps reckon with (src/modules/pools/model.ts), as pure functions: the
// UTC day and month a send counts in with when each ends, and the prefix geomatch compares.
import { describe, expect, test } from "bun:test";
import { periodsOf, regionOf } from "../../src/modules/pools/model";
import { ABROAD, RECIPIENT } from "../helpers/numbers";

describe("periodsOf", () => {
  test("the UTC day and month an instant falls in, and the instants they end at", () => {
    expect(periodsOf(Date.parse("2026-11-26T15:04:05Z"))).toEqual({
      day: "2026-11-26",
      month: "2026-11",
      dayEnds: Date.parse("2026-11-27T00:00:00Z"),
      monthEnds: Date.parse("2026-12-01T00:00:00Z"),
    });
  });

  test("the last instant of a year ends its day, month and year together", () => {
    const p = periodsOf(Date.parse("2026-12-31T23:59:59.999Z"));
    expect(p).toMatchObject({ day: "2026-12-31", month: "2026-12" });
    expect(p.dayEnds).toBe(Date.parse("2027-01-01T00:00:00Z"));
    expect(p.monthEnds).toBe(p.dayEnds);
  });

  test("midnight belongs to the day it starts; February of a leap year has 29 days", () => {
    expect(periodsOf(Date.parse("2028-02-29T00:00:00Z"))).toMatchObject({ day: "2028-02-29", month: "2028-02" });
    expect(periodsOf(Date.parse("2028-02-10T12:00:00Z")).monthEnds).toBe(Date.parse("2028-03-01T00:00:00Z"));
  });
});

describe("regionOf", () => {
  test("a North American number: +1 and its area code", () => {
    expect(regionOf(RECIPIENT)).toEqual({ country: "+1", area: "+1415" });
  });

  test("elsewhere, the country calling code alone", () => {
    expect(regionOf(ABROAD)).toEqual({ country: "+44", area: null });
    expect(regionOf("+33612345678")).toEqual({ country: "+33", area: null });
  });

  test("nothing for no number or one that cannot be read", () => {
    expect(regionOf(null)).toBeNull();
    expect(regionOf("")).toBeNull();
    expect(regionOf("not a number")).toBeNull();
  });
});
