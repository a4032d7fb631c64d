// The send path's decisions as pure functions, without a database: when a message expires
// (prepare.ts), which device carries it (device-choice.ts) and which routes a failed one may move
// to (failover.ts). The route tests in this folder run the same rules through the API.
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors";
import { pickDevice } from "../../src/modules/sending/device-choice";
import { routesToTry } from "../../src/modules/sending/failover";
import { TTL_MAX_SECONDS } from "../../src/modules/sending/model";
import { expiryOf } from "../../src/modules/sending/prepare";

const NOW = Date.parse("2026-12-02T10:00:00Z");

function refusal(run: () => unknown): { code: string; data: unknown } {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, data: error.data };
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("expiryOf", () => {
  test("neither ttl nor valid_until: the message never expires", () => {
    expect(expiryOf({}, null, NOW)).toBeNull();
    expect(expiryOf({ ttl: null, validUntil: "  " }, null, NOW)).toBeNull();
  });

  test("ttl counts from when the message is due: now, or its schedule time", () => {
    expect(expiryOf({ ttl: 60 }, null, NOW)).toBe(NOW + 60_000);
    const due = NOW + 3_600_000;
    expect(expiryOf({ ttl: 60 }, due, NOW)).toBe(due + 60_000);
  });

  test("valid_until is an instant with its zone, in either offset form", () => {
    expect(expiryOf({ validUntil: "2026-12-02T11:00:00Z" }, null, NOW)).toBe(Date.parse("2026-12-02T11:00:00Z"));
    expect(expiryOf({ validUntil: "2026-12-02T12:30:00+02:00" }, null, NOW)).toBe(Date.parse("2026-12-02T10:30:00Z"));
    expect(expiryOf({ validUntil: "2026-12-02T12:30+0200" }, null, NOW)).toBe(Date.parse("2026-12-02T10:30:00Z"));
  });

  test("both at once is ambiguous and refused", () => {
    expect(refusal(() => expiryOf({ ttl: 60, validUntil: "2026-12-02T11:00:00Z" }, null, NOW)).code).toBe("ttl_with_valid_until");
  });

  test("a local time without a zone, or no date at all, is refused with the field named", () => {
    for (const validUntil of ["2026-12-02T11:00:00", "tomorrow", "2026-12-02"]) {
      expect(refusal(() => expiryOf({ validUntil }, null, NOW))).toEqual({ code: "invalid_valid_until", data: { field: "valid_until" } });
    }
  });

  test("an instant already past, or before the schedule time, is refused", () => {
    expect(refusal(() => expiryOf({ validUntil: "2026-12-02T10:00:00Z" }, null, NOW)).code).toBe("invalid_valid_until");
    const due = Date.parse("2026-12-03T09:00:00Z");
    const early = refusal(() => expiryOf({ validUntil: "2026-12-03T08:00:00Z" }, due, NOW));
    expect(early).toEqual({ code: "invalid_valid_until", data: { field: "valid_until", schedule_at: "2026-12-03T09:00:00.000Z" } });
  });

  test("at most the ttl's own limit after the message is due, and not a millisecond more", () => {
    const last = new Date(NOW + TTL_MAX_SECONDS * 1000).toISOString();
    expect(expiryOf({ validUntil: last }, null, NOW)).toBe(NOW + TTL_MAX_SECONDS * 1000);
    const over = new Date(NOW + TTL_MAX_SECONDS * 1000 + 1).toISOString();
    expect(refusal(() => expiryOf({ validUntil: over }, null, NOW)).code).toBe("invalid_valid_until");
  });
});

describe("pickDevice", () => {
  type D = { id: number; blockedCode: string | null; online: boolean };
  const phone = (id: number, online: boolean): D => ({ id, blockedCode: null, online });
  const blocked = (id: number): D => ({ id, blockedCode: "131031", online: true });
  const present = (d: D) => d.online;

  test("the first device that is not blocked and is present", () => {
    const picked = pickDevice([phone(1, false), blocked(2), phone(3, true), phone(4, true)], { immediate: true, present });
    expect(picked).toEqual({ device: phone(3, true), offline: null });
  });

  test("a scheduled send may wait for its phone: presence does not count", () => {
    expect(pickDevice([phone(1, false), phone(2, true)], { immediate: false, present }).device?.id).toBe(1);
  });

  test("none usable, immediate, the first absent: it is the offline device the answer names", () => {
    expect(pickDevice([phone(1, false), phone(2, false)], { immediate: true, present })).toEqual({
      device: null,
      offline: phone(1, false),
    });
  });

  test("all blocked: the first takes the send, to be refused in its channel's own words", () => {
    expect(pickDevice([blocked(5), blocked(6)], { immediate: true, present })).toEqual({ device: blocked(5), offline: null });
  });

  test("no device at all: neither", () => {
    expect(pickDevice([], { immediate: true, present })).toEqual({ device: null, offline: null });
  });
});

describe("routesToTry", () => {
  const FINAL = new Set(["recipient_opted_out", "expired"]);
  const failed = { errorCode: "device_offline" };

  test("the routes after the one that failed, in the order the send names", () => {
    expect(routesToTry("sms", ["sms", "cloud", "chatapp"], failed, FINAL)).toEqual(["cloud", "chatapp"]);
    expect(routesToTry("cloud", ["sms", "cloud", "chatapp"], failed, FINAL)).toEqual(["chatapp"]);
  });

  test("the last route, or no order at all: nowhere to go", () => {
    expect(routesToTry("chatapp", ["sms", "cloud", "chatapp"], failed, FINAL)).toEqual([]);
    expect(routesToTry("sms", null, failed, FINAL)).toEqual([]);
  });

  test("a final failure moves nowhere; an unknown code or none moves on", () => {
    expect(routesToTry("sms", ["sms", "cloud"], { errorCode: "recipient_opted_out" }, FINAL)).toEqual([]);
    expect(routesToTry("sms", ["sms", "cloud"], { errorCode: null }, FINAL)).toEqual(["cloud"]);
  });

  test("a failure that may have gone out is never sent again on another route", () => {
    expect(routesToTry("sms", ["sms", "cloud"], { errorCode: "timeout", mayHaveGone: true }, FINAL)).toEqual([]);
  });
});
