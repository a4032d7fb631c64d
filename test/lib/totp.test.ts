// RFC 6238's published test vectors (Appendix B, the SHA1 rows, 8 digits), RFC 4226's HOTP table,
// base32 both ways (RFC 4648's examples), and the verifier's window and replay rule.
import { describe, expect, test } from "bun:test";
import { base32Decode, base32Encode, hotp, otpauthUri, totp, totpStep, verifyTotp } from "../../src/lib/totp";

const RFC_KEY = new TextEncoder().encode("12345678901234567890");

describe("TOTP", () => {
  test.each([
    [59, "94287082"],
    [1111111109, "07081804"],
    [1111111111, "14050471"],
    [1234567890, "89005924"],
    [2000000000, "69279037"],
    [20000000000, "65353130"],
  ])("RFC 6238 Appendix B, SHA1, T=%p: %p", (seconds, code) => {
    expect(totp(RFC_KEY, seconds * 1000, { digits: 8 })).toBe(code);
  });

  test("RFC 4226 Appendix D's HOTP values for counters 0 to 9", () => {
    const expected = ["755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"];
    expect(expected.map((_, i) => hotp(RFC_KEY, i))).toEqual(expected);
  });

  test("base32 per RFC 4648's examples, and back", () => {
    const cases: [string, string][] = [
      ["", ""],
      ["f", "MY"],
      ["fo", "MZXQ"],
      ["foo", "MZXW6"],
      ["foob", "MZXW6YQ"],
      ["fooba", "MZXW6YTB"],
      ["foobar", "MZXW6YTBOI"],
    ];
    for (const [plain, coded] of cases) {
      expect(base32Encode(new TextEncoder().encode(plain))).toBe(coded);
      expect(new TextDecoder().decode(base32Decode(coded)!)).toBe(plain);
    }
    expect(new TextDecoder().decode(base32Decode("mzxw 6ytb oi==")!)).toBe("foobar");
    expect(base32Decode("MZXW1")).toBeNull();
  });

  test("a code is accepted one step either side, not two, and never at or before the last accepted step", () => {
    const at = 1_700_000_000_000;
    const step = totpStep(at);
    const code = (s: number) => hotp(RFC_KEY, s);
    expect(verifyTotp(RFC_KEY, code(step), at)).toBe(step);
    expect(verifyTotp(RFC_KEY, code(step - 1), at)).toBe(step - 1);
    expect(verifyTotp(RFC_KEY, code(step + 1), at)).toBe(step + 1);
    expect(verifyTotp(RFC_KEY, code(step - 2), at)).toBeNull();
    expect(verifyTotp(RFC_KEY, code(step + 2), at)).toBeNull();
    expect(verifyTotp(RFC_KEY, code(step), at, step)).toBeNull();
    expect(verifyTotp(RFC_KEY, code(step - 1), at, step - 1)).toBeNull();
    expect(verifyTotp(RFC_KEY, code(step + 1), at, step)).toBe(step + 1);
    expect(verifyTotp(RFC_KEY, "12345", at)).toBeNull();
    expect(verifyTotp(RFC_KEY, "abcdef", at)).toBeNull();
  });

  test("the otpauth URI names the issuer, the account and the parameters", () => {
    const uri = new URL(otpauthUri({ issuer: "Pigeon", account: "owner@example.com", secret: "MZXW6YTBOI" }));
    expect(uri.protocol).toBe("otpauth:");
    expect(uri.host).toBe("totp");
    expect(decodeURIComponent(uri.pathname)).toBe("/Pigeon:owner@example.com");
    expect(Object.fromEntries(uri.searchParams)).toEqual({
      secret: "MZXW6YTBOI",
      issuer: "Pigeon",
      algorithm: "SHA1",
      digits: "6",
      period: "30",
    });
  });
});
