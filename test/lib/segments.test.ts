// SMS segment counting (src/lib/segments.ts), which credits are charged by: GSM-7 fits 160
// septets in one SMS and 153 in each part of a longer one, the extension table's characters
// take two septets, and one character outside GSM-7 makes the whole text UCS-2 (70 UTF-16 units
// in one SMS, 67 a part).
import { describe, expect, test } from "bun:test";
import { countSegments, ucs2Characters } from "../../src/lib/segments";

describe("countSegments", () => {
  test("GSM-7: 160 septets in one SMS, then 153 a part", () => {
    expect(countSegments("")).toEqual({ encoding: "GSM-7", units: 0, segments: 1 });
    expect(countSegments("a".repeat(160))).toEqual({ encoding: "GSM-7", units: 160, segments: 1 });
    expect(countSegments("a".repeat(161))).toEqual({ encoding: "GSM-7", units: 161, segments: 2 });
    expect(countSegments("a".repeat(306)).segments).toBe(2);
    expect(countSegments("a".repeat(307)).segments).toBe(3);
  });

  test("the GSM-7 alphabet's accented letters, line breaks and symbols are one septet each", () => {
    expect(countSegments("Café à 8h\nÜber £5 @ Øresund")).toEqual({ encoding: "GSM-7", units: 27, segments: 1 });
  });

  test("an extension character (€, braces, brackets, ^ ~ | \\) takes two septets", () => {
    expect(countSegments("€")).toEqual({ encoding: "GSM-7", units: 2, segments: 1 });
    expect(countSegments("{[]}^~|\\")).toEqual({ encoding: "GSM-7", units: 16, segments: 1 });
    expect(countSegments("€".repeat(80))).toEqual({ encoding: "GSM-7", units: 160, segments: 1 });
    expect(countSegments("€".repeat(81))).toEqual({ encoding: "GSM-7", units: 162, segments: 2 });
    // 159 plain septets and one that takes two: past one SMS.
    expect(countSegments(`${"a".repeat(159)}€`).segments).toBe(2);
  });

  test("UCS-2: 70 units in one SMS, then 67 a part", () => {
    expect(countSegments("ł".repeat(70))).toEqual({ encoding: "UCS-2", units: 70, segments: 1 });
    expect(countSegments("ł".repeat(71))).toEqual({ encoding: "UCS-2", units: 71, segments: 2 });
    expect(countSegments("ł".repeat(134)).segments).toBe(2);
    expect(countSegments("ł".repeat(135)).segments).toBe(3);
  });

  test("one character outside GSM-7 makes the whole text UCS-2, counted in UTF-16 units", () => {
    // 100 GSM-7 letters would fit one SMS; with a coffee cup they are 101 units of UCS-2.
    expect(countSegments(`${"a".repeat(100)}☕`)).toEqual({ encoding: "UCS-2", units: 101, segments: 2 });
    // An emoji outside the BMP is two units.
    expect(countSegments("😀".repeat(35))).toEqual({ encoding: "UCS-2", units: 70, segments: 1 });
    expect(countSegments("😀".repeat(36))).toEqual({ encoding: "UCS-2", units: 72, segments: 2 });
    // Lower-case ç is not in GSM-7 (only Ç is).
    expect(countSegments("ç").encoding).toBe("UCS-2");
  });
});

describe("ucs2Characters", () => {
  test("names each character that forces UCS-2 once, in the order they come", () => {
    expect(ucs2Characters("Café ☕ at 8 ☕, ł and 😀")).toEqual(["☕", "ł", "😀"]);
  });

  test("is empty for a text GSM-7 carries, extension characters included", () => {
    expect(ucs2Characters("Total: €12 {incl. VAT}")).toEqual([]);
    expect(ucs2Characters("")).toEqual([]);
  });
});
