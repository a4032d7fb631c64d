// Quiet hours: the recipient's zone from the number, and when a text held back at night may go.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { COUNTRY_ZONES, formatClock, localMinutes, parseClock, quietUntil, zoneForNumber } from "../../src/lib/quiet-hours";

const utc = (iso: string) => Date.parse(iso);
const clock = (text: string) => {
  const minutes = parseClock(text);
  if (minutes === null) throw new Error(`bad clock ${text}`);
  return minutes;
};
/** quietUntil with "HH:MM" bounds, answered as an ISO string for readable failures. */
const until = (when: string, zone: string, start: string, end: string) => {
  const t = quietUntil(utc(when), zone, clock(start), clock(end));
  return t === null ? null : new Date(t).toISOString();
};

describe("clock text", () => {
  test("HH:MM both ways", () => {
    expect(parseClock("00:00")).toBe(0);
    expect(parseClock("07:05")).toBe(425);
    expect(parseClock("21:30")).toBe(1290);
    expect(parseClock("23:59")).toBe(1439);
    expect(formatClock(0)).toBe("00:00");
    expect(formatClock(425)).toBe("07:05");
    expect(formatClock(1439)).toBe("23:59");
    for (let m = 0; m < 24 * 60; m += 7) expect(parseClock(formatClock(m))).toBe(m);
  });

  test("anything but two-digit 24-hour HH:MM is refused", () => {
    for (const bad of ["7:00", "24:00", "12:60", "1200", " 12:00", "12:00 ", "12:0", "012:00", "12-00", "1a:00", "", "12:00:00", "-1:00"]) {
      expect(parseClock(bad)).toBeNull();
    }
    expect(() => formatClock(1440)).toThrow(RangeError);
    expect(() => formatClock(-1)).toThrow(RangeError);
    expect(() => formatClock(1.5)).toThrow(RangeError);
  });
});

describe("local time", () => {
  test("minutes after local midnight, summer and winter", () => {
    expect(localMinutes(utc("2026-01-15T12:34:56Z"), "Europe/Berlin")).toBe(13 * 60 + 34);
    expect(localMinutes(utc("2026-07-15T12:34:56Z"), "Europe/Berlin")).toBe(14 * 60 + 34);
    expect(localMinutes(utc("2026-01-15T03:00:00Z"), "America/New_York")).toBe(22 * 60);
    expect(localMinutes(utc("2026-01-15T00:00:00Z"), "Asia/Kolkata")).toBe(5 * 60 + 30);
    expect(localMinutes(utc("2026-01-15T23:00:00Z"), "UTC")).toBe(23 * 60);
    expect(localMinutes(utc("2026-01-15T04:59:00Z"), "America/New_York")).toBe(23 * 60 + 59);
    expect(localMinutes(utc("2026-01-15T05:00:00Z"), "America/New_York")).toBe(0);
  });

  test("an unknown zone is an error, not a guess", () => {
    expect(() => localMinutes(0, "Mars/Olympus_Mons")).toThrow(RangeError);
  });
});

describe("quiet hours", () => {
  test("a window across midnight (21:00–08:00)", () => {
    // Berlin in January is UTC+1.
    expect(until("2026-01-15T21:30:00Z", "Europe/Berlin", "21:00", "08:00")).toBe("2026-01-16T07:00:00.000Z");
    expect(until("2026-01-16T02:00:00Z", "Europe/Berlin", "21:00", "08:00")).toBe("2026-01-16T07:00:00.000Z");
    expect(until("2026-01-15T12:00:00Z", "Europe/Berlin", "21:00", "08:00")).toBeNull();
    // Just before local midnight and just after: the same morning either way.
    expect(until("2026-01-15T22:59:59Z", "Europe/Berlin", "21:00", "08:00")).toBe("2026-01-16T07:00:00.000Z");
    expect(until("2026-01-15T23:00:00Z", "Europe/Berlin", "21:00", "08:00")).toBe("2026-01-16T07:00:00.000Z");
  });

  test("a window within the day (12:00–14:00)", () => {
    expect(until("2026-01-15T12:30:00Z", "Europe/Berlin", "12:00", "14:00")).toBe("2026-01-15T13:00:00.000Z");
    expect(until("2026-01-15T10:59:00Z", "Europe/Berlin", "12:00", "14:00")).toBeNull();
    expect(until("2026-01-15T13:00:00Z", "Europe/Berlin", "12:00", "14:00")).toBeNull();
    expect(until("2026-01-15T22:00:00Z", "Europe/Berlin", "12:00", "14:00")).toBeNull();
    // In New York (UTC−5) 12:00–14:00 is 17:00–19:00 UTC.
    expect(until("2026-01-15T17:45:00Z", "America/New_York", "12:00", "14:00")).toBe("2026-01-15T19:00:00.000Z");
    expect(until("2026-01-15T12:30:00Z", "America/New_York", "12:00", "14:00")).toBeNull();
  });

  test("the start minute is quiet, the end minute is not", () => {
    // 21:00 local Berlin = 20:00Z; 08:00 local = 07:00Z.
    expect(until("2026-01-15T20:00:00Z", "Europe/Berlin", "21:00", "08:00")).toBe("2026-01-16T07:00:00.000Z");
    expect(until("2026-01-15T19:59:59.999Z", "Europe/Berlin", "21:00", "08:00")).toBeNull();
    expect(until("2026-01-16T06:59:59.999Z", "Europe/Berlin", "21:00", "08:00")).toBe("2026-01-16T07:00:00.000Z");
    expect(until("2026-01-16T07:00:00Z", "Europe/Berlin", "21:00", "08:00")).toBeNull();
    expect(until("2026-01-15T11:00:00Z", "Europe/Berlin", "12:00", "14:00")).toBe("2026-01-15T13:00:00.000Z");
    expect(until("2026-01-15T12:59:00Z", "Europe/Berlin", "12:00", "14:00")).toBe("2026-01-15T13:00:00.000Z");
    // Windows touching midnight on either side.
    expect(until("2026-01-14T23:00:00Z", "Europe/Berlin", "00:00", "06:00")).toBe("2026-01-15T05:00:00.000Z");
    expect(until("2026-01-14T22:59:00Z", "Europe/Berlin", "00:00", "06:00")).toBeNull();
    expect(until("2026-01-15T22:30:00Z", "Europe/Berlin", "22:00", "00:00")).toBe("2026-01-15T23:00:00.000Z");
  });

  test("start === end means no quiet hours at any time", () => {
    for (const hour of [0, 3, 8, 12, 21, 23]) {
      expect(quietUntil(Date.UTC(2026, 0, 15, hour), "Europe/Berlin", 480, 480)).toBeNull();
      expect(quietUntil(Date.UTC(2026, 0, 15, hour), "America/New_York", 0, 0)).toBeNull();
    }
  });

  test("bounds outside a day are refused", () => {
    expect(() => quietUntil(0, "UTC", 1440, 60)).toThrow(RangeError);
    expect(() => quietUntil(0, "UTC", 60, -1)).toThrow(RangeError);
    expect(() => quietUntil(0, "UTC", 60.5, 120)).toThrow(RangeError);
  });

  test("the answer is a whole minute reading `end` locally, in many zones", () => {
    const zones = ["Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe", "Pacific/Chatham", "America/St_Johns", "Pacific/Kiritimati"];
    for (const zone of zones) {
      for (let t = Date.UTC(2026, 0, 1, 0, 17, 23); t < Date.UTC(2026, 11, 31); t += 3 * 86_400_000 + 3_600_000 * 5 + 60_000 * 13) {
        const end = quietUntil(t, zone, clock("22:15"), clock("06:45"));
        if (end === null) continue;
        expect(end).toBeGreaterThan(t);
        expect(end - t).toBeLessThanOrEqual((8 * 60 + 30) * 60_000 + 3_600_000);
        expect(end % 60_000).toBe(0);
        expect(formatClock(localMinutes(end, zone))).toBe("06:45");
      }
    }
  });
});

describe("quiet hours on DST nights", () => {
  // Europe 2026: clocks go forward 29 March 01:00Z (02:00 CET → 03:00 CEST), back 25 October 01:00Z.
  // US 2026: forward 8 March 07:00Z (02:00 EST → 03:00 EDT), back 1 November 06:00Z (02:00 EDT → 01:00 EST).
  const expectEnd = (instant: string | null, zone: string, end: string) => {
    expect(instant).not.toBeNull();
    expect(formatClock(localMinutes(utc(instant!), zone))).toBe(end);
  };

  test("Berlin, spring forward: the night is an hour shorter", () => {
    // 22:30 CET on the 28th; 07:00 the next morning is CEST (UTC+2), not CET.
    const r = until("2026-03-28T21:30:00Z", "Europe/Berlin", "22:00", "07:00");
    expect(r).toBe("2026-03-29T05:00:00.000Z");
    expectEnd(r, "Europe/Berlin", "07:00");
    // From inside the skipped-over night, after the jump (04:00 CEST).
    expect(until("2026-03-29T02:00:00Z", "Europe/Berlin", "22:00", "07:00")).toBe("2026-03-29T05:00:00.000Z");
  });

  test("Berlin, spring forward: an end the clocks jump over means the moment they land", () => {
    // 02:30 does not exist on 29 March; the first instant after the jump is 03:00 CEST = 01:00Z.
    const r = until("2026-03-28T22:30:00Z", "Europe/Berlin", "23:00", "02:30");
    expect(r).toBe("2026-03-29T01:00:00.000Z");
    expectEnd(r, "Europe/Berlin", "03:00");
    // The instant before is still 01:59 CET and still quiet.
    expect(until("2026-03-29T00:59:00Z", "Europe/Berlin", "23:00", "02:30")).toBe("2026-03-29T01:00:00.000Z");
    // The day after, 02:30 exists again.
    expect(until("2026-03-29T22:00:00Z", "Europe/Berlin", "23:00", "02:30")).toBe("2026-03-30T00:30:00.000Z");
  });

  test("Berlin, fall back: the night is an hour longer", () => {
    // 23:00 CEST on the 24th; 07:00 on the 25th is CET (UTC+1).
    const r = until("2026-10-24T21:00:00Z", "Europe/Berlin", "22:00", "07:00");
    expect(r).toBe("2026-10-25T06:00:00.000Z");
    expectEnd(r, "Europe/Berlin", "07:00");
  });

  test("Berlin, fall back: an end that happens twice means the first, unless that is past", () => {
    // 02:30 happens at 00:30Z (CEST) and again at 01:30Z (CET).
    const r = until("2026-10-24T22:00:00Z", "Europe/Berlin", "23:00", "02:30");
    expect(r).toBe("2026-10-25T00:30:00.000Z");
    expectEnd(r, "Europe/Berlin", "02:30");
    // At 02:10 CET (the second pass) the first 02:30 is behind us: the second one is next.
    expect(until("2026-10-25T01:10:00Z", "Europe/Berlin", "02:00", "02:30")).toBe("2026-10-25T01:30:00.000Z");
    // At 02:40 CEST (first pass) quiet hours 02:00–02:30 are over; at 02:10 CET they hold again.
    expect(until("2026-10-25T00:40:00Z", "Europe/Berlin", "02:00", "02:30")).toBeNull();
  });

  test("New York, spring forward", () => {
    // 22:00 EST on the 7th (03:00Z on the 8th); 08:00 EDT = 12:00Z, not 13:00Z.
    const r = until("2026-03-08T03:00:00Z", "America/New_York", "21:00", "08:00");
    expect(r).toBe("2026-03-08T12:00:00.000Z");
    expectEnd(r, "America/New_York", "08:00");
    // 02:30 is skipped: the clocks land at 03:00 EDT = 07:00Z.
    const skipped = until("2026-03-08T04:30:00Z", "America/New_York", "23:00", "02:30");
    expect(skipped).toBe("2026-03-08T07:00:00.000Z");
    expectEnd(skipped, "America/New_York", "03:00");
  });

  test("New York, fall back", () => {
    // 22:00 EDT on 31 October (02:00Z on 1 November); 08:00 EST = 13:00Z.
    const r = until("2026-11-01T02:00:00Z", "America/New_York", "21:00", "08:00");
    expect(r).toBe("2026-11-01T13:00:00.000Z");
    expectEnd(r, "America/New_York", "08:00");
    // 01:30 happens at 05:30Z (EDT) and 06:30Z (EST): the first.
    const twice = until("2026-11-01T03:30:00Z", "America/New_York", "23:00", "01:30");
    expect(twice).toBe("2026-11-01T05:30:00.000Z");
    expectEnd(twice, "America/New_York", "01:30");
  });

  test("Samoa skipped 30 December 2011 entirely: the end on that day is the moment it resumed", () => {
    // 23:00 on the 29th at UTC−10; the next local day is the 31st at UTC+14 from 10:00Z.
    const r = until("2011-12-30T09:00:00Z", "Pacific/Apia", "22:00", "07:00");
    expect(r).toBe("2011-12-30T10:00:00.000Z");
  });
});

describe("zone of a number", () => {
  test("+1 numbers by area code, 555 test numbers included", () => {
    expect(zoneForNumber("+14165550100")).toBe("America/Toronto");
    expect(zoneForNumber("+12125550100")).toBe("America/New_York");
    expect(zoneForNumber("+14155552671")).toBe("America/New_York"); // San Francisco: the country's zone, not the city's
  });

  test("other countries", () => {
    expect(zoneForNumber("+919876543210")).toBe("Asia/Kolkata");
    expect(zoneForNumber("+81312345678")).toBe("Asia/Tokyo");
    expect(zoneForNumber("+5511912345678")).toBe("America/Sao_Paulo");
    expect(zoneForNumber("+74951234567")).toBe("Europe/Moscow");
    expect(zoneForNumber("+77012345678")).toBe("Asia/Almaty"); // +7 7xx is Kazakhstan
    expect(zoneForNumber("+442071234567")).toBe("Europe/London");
    expect(zoneForNumber("+4930123456")).toBe("Europe/Berlin");
    expect(zoneForNumber("+61291234567")).toBe("Australia/Sydney");
    expect(zoneForNumber("+8613812345678")).toBe("Asia/Shanghai");
  });

  test("a possible number the metadata cannot place falls back to its calling code's main country", () => {
    expect(zoneForNumber("+15555550100")).toBe("America/New_York");
    expect(zoneForNumber("+70001234567")).toBe("Europe/Moscow");
    expect(zoneForNumber("+440001234567")).toBe("Europe/London");
  });

  test("not a phone number, or no country's", () => {
    for (const bad of ["", "not a number", "+", "12125550100", "+1999", "+999123", "+3912"]) expect(zoneForNumber(bad)).toBeNull();
    expect(zoneForNumber("+80012345678")).toBeNull(); // international freephone
  });
});

describe("country table", () => {
  test("every zone is one the runtime's Intl accepts", () => {
    const refused = Object.values(COUNTRY_ZONES).filter((zone) => {
      try {
        new Intl.DateTimeFormat("en", { timeZone: zone });
        return false;
      } catch {
        return true;
      }
    });
    expect(refused).toEqual([]);
    expect(Object.keys(COUNTRY_ZONES).every((c) => /^[A-Z]{2}$/.test(c))).toBe(true);
  });

  test("the hand-picked zones of countries with several", () => {
    expect(COUNTRY_ZONES).toMatchObject({
      US: "America/New_York",
      CA: "America/Toronto",
      MX: "America/Mexico_City",
      BR: "America/Sao_Paulo",
      AR: "America/Argentina/Buenos_Aires",
      RU: "Europe/Moscow",
      AU: "Australia/Sydney",
      ID: "Asia/Jakarta",
      CN: "Asia/Shanghai",
      KZ: "Asia/Almaty",
      CL: "America/Santiago",
      ES: "Europe/Madrid",
      PT: "Europe/Lisbon",
      DE: "Europe/Berlin",
      UA: "Europe/Kyiv",
      MN: "Asia/Ulaanbaatar",
      CD: "Africa/Kinshasa",
      EC: "America/Guayaquil",
      NZ: "Pacific/Auckland",
      MY: "Asia/Kuala_Lumpur",
      UZ: "Asia/Tashkent",
      GL: "America/Nuuk",
      KI: "Pacific/Tarawa",
      FM: "Pacific/Pohnpei",
      PF: "Pacific/Tahiti",
    });
    expect(Object.isFrozen(COUNTRY_ZONES)).toBe(true);
  });

  const zoneTab = "/usr/share/zoneinfo/zone.tab";
  test.skipIf(!existsSync(zoneTab))("every country in zone.tab has a zone that zone.tab lists for it", () => {
    const listed = new Map<string, string[]>();
    for (const line of readFileSync(zoneTab, "utf8").split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      const [country, , zone] = line.split("\t");
      listed.set(country, [...(listed.get(country) ?? []), zone]);
    }
    expect(listed.size).toBeGreaterThan(200);
    const wrong = [...listed].filter(([country, zones]) => !zones.includes(COUNTRY_ZONES[country]));
    expect(wrong).toEqual([]);
  });
});
