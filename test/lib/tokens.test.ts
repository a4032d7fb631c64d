// Ids and secrets from lib/tokens: their alphabets and lengths, and the time order of the ids a
// paired phone is given for its messages.
import { describe, expect, test } from "bun:test";
import { nanoid, randomBase62, timeOrderedId } from "../../src/lib/tokens";

describe("random ids", () => {
  test("nanoid and randomBase62 draw every character of their alphabet, evenly enough, and do not repeat", () => {
    const ids = Array.from({ length: 5000 }, () => nanoid());
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => /^[A-Za-z0-9_-]{21}$/.test(id))).toBe(true);
    const counts = new Map<string, number>();
    for (const c of ids.join("")) counts.set(c, (counts.get(c) ?? 0) + 1);
    // 105,000 characters over 64: about 1,640 each.
    expect(counts.size).toBe(64);
    for (const n of counts.values()) expect(Math.abs(n - 105_000 / 64)).toBeLessThan(250);
    const secrets = Array.from({ length: 2000 }, () => randomBase62(32));
    expect(secrets.every((s) => /^[A-Za-z0-9]{32}$/.test(s))).toBe(true);
    expect(new Set(secrets.join("")).size).toBe(62);
  });

  test("time-ordered ids: 21 characters of the same alphabet, in the order of their times, random after the time", () => {
    const times = [0, 1, 63, 64, 4095, 1_767_225_600_000, 1_767_225_600_001, 1_800_000_000_000, 64 ** 8 - 1];
    const ids = times.map((t) => timeOrderedId(t));
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(ids[0].slice(0, 8)).toBe("--------");
    expect(ids.at(-1)!.slice(0, 8)).toBe("zzzzzzzz");
    const same = Array.from({ length: 1000 }, () => timeOrderedId(1_767_225_600_000));
    expect(new Set(same.map((id) => id.slice(0, 8))).size).toBe(1);
    expect(new Set(same).size).toBe(1000);
  });
});
