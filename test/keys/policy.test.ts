// The key-limit rules alone (src/core/scopes.ts): scopes, recipient policies, the daily cap's
// reset and the written forms of an expiry.
import { describe, expect, test } from "bun:test";
import {
  dailyCapReached,
  describeRecipients,
  hasScope,
  parseDailyCap,
  parseExpiry,
  parseRecipients,
  parseScopes,
  recipientAllowed,
  recipientsOf,
  requireKeyScope,
  storedRecipients,
  UNLIMITED,
  utcDay,
} from "../../src/core/scopes";
import { AppError } from "../../src/core/errors";

const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof AppError ? e.code : "other";
  }
  return null;
};

describe("scopes", () => {
  test("no scopes means every scope; admin implies every scope; otherwise only those named", () => {
    expect(hasScope(undefined, "send")).toBe(true);
    expect(hasScope(UNLIMITED, "admin")).toBe(true);
    const admin = { ...UNLIMITED, scopes: ["admin" as const] };
    expect(hasScope(admin, "devices")).toBe(true);
    const reader = { ...UNLIMITED, scopes: parseScopes("messages:read, threads:read") };
    expect(hasScope(reader, "messages:read")).toBe(true);
    expect(hasScope(reader, "send")).toBe(false);
    expect(codeOf(() => requireKeyScope(reader, "send"))).toBe("key_scope_denied");
    expect(codeOf(() => requireKeyScope(reader, "threads:read"))).toBeNull();
  });

  test("parsing refuses unknown and empty lists, and keeps each scope once in the table's order", () => {
    expect(parseScopes(["templates", "send", "send"])).toEqual(["send", "templates"]);
    expect(codeOf(() => parseScopes("send,write"))).toBe("validation_error");
    expect(codeOf(() => parseScopes(" , "))).toBe("validation_error");
  });
});

describe("recipients", () => {
  test("each written form parses, is stored, and reads back the same", () => {
    for (const text of ["anyone", "contacts", "tag:vip", "+14155552671,+14155552672"]) {
      const policy = parseRecipients(text);
      expect(describeRecipients(recipientsOf(storedRecipients(policy)))).toBe(text);
    }
    expect(storedRecipients(parseRecipients("anyone"))).toBeNull();
    expect(parseRecipients("tag:VIP")).toEqual({ kind: "tag", tag: "vip" });
    expect(codeOf(() => parseRecipients("+1 nope"))).toBe("validation_error");
    expect(codeOf(() => parseRecipients("tag:"))).toBe("validation_error");
  });

  test("a policy allows exactly the recipients it names", () => {
    const a = "+14155552671";
    expect(recipientAllowed({ kind: "anyone" }, a, null)).toBe(true);
    expect(recipientAllowed({ kind: "contacts" }, a, null)).toBe(false);
    expect(recipientAllowed({ kind: "contacts" }, a, [])).toBe(true);
    expect(recipientAllowed({ kind: "tag", tag: "vip" }, a, ["other"])).toBe(false);
    expect(recipientAllowed({ kind: "tag", tag: "vip" }, a, ["vip"])).toBe(true);
    expect(recipientAllowed(parseRecipients("+14155552672"), a, ["vip"])).toBe(false);
    expect(recipientAllowed(parseRecipients("+14155552671"), a, null)).toBe(true);
  });

  test("a stored value this code did not write allows no one", () => {
    expect(recipientAllowed(recipientsOf("garbage"), "+14155552671", [])).toBe(false);
  });
});

describe("daily cap and expiry", () => {
  test("the cap resets at the next UTC midnight, and the day is the UTC day", () => {
    const now = Date.parse("2026-12-02T23:59:59Z");
    expect(utcDay(now)).not.toBe(utcDay(now + 1000));
    const e = dailyCapReached(5, 5, now);
    expect(e.code).toBe("key_daily_cap");
    expect(e.data.resets_at).toBe("2026-12-03T00:00:00.000Z");
    expect(e.message).toContain("5 messages a day");
    expect(parseDailyCap("none")).toBeNull();
    expect(parseDailyCap(3)).toBe(3);
    expect(codeOf(() => parseDailyCap("0"))).toBe("validation_error");
    expect(codeOf(() => parseDailyCap("1.5"))).toBe("validation_error");
  });

  test("an expiry is a date (its end), an instant, a span, or never; not in the past", () => {
    const now = Date.parse("2026-12-02T12:00:00Z");
    expect(parseExpiry("2027-01-31", now)).toBe(Date.parse("2027-02-01T00:00:00Z"));
    expect(parseExpiry("30d", now)).toBe(now + 30 * 86_400_000);
    expect(parseExpiry("90m", now)).toBe(now + 90 * 60_000);
    expect(parseExpiry("2026-12-03T08:00:00+01:00", now)).toBe(Date.parse("2026-12-03T07:00:00Z"));
    expect(parseExpiry("never", now)).toBeNull();
    expect(codeOf(() => parseExpiry("2026-01-01", now))).toBe("validation_error");
    expect(codeOf(() => parseExpiry("tomorrow", now))).toBe("validation_error");
  });
});
