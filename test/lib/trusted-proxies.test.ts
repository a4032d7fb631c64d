// Which peers' X-Forwarded-Proto/-Host Pigeon believes when it builds the URLs it gives phones.
import { describe, expect, test } from "bun:test";
import { DEFAULT_TRUSTED_PROXIES, isTrustedPeer, parseProxyList, requestOrigin } from "../../src/lib/trusted-proxies";

const loopback = parseProxyList(DEFAULT_TRUSTED_PROXIES);
const forwarded = (headers: Record<string, string>) => new Request("http://127.0.0.1:8080/mobile/v1/webhooks", { headers });

describe("trusted proxies", () => {
  test("loopback by default, in whichever form the socket reports it", () => {
    for (const peer of ["127.0.0.1", "127.5.6.7", "::1", "::ffff:127.0.0.1"]) expect(isTrustedPeer(loopback, peer)).toBe(true);
    for (const peer of ["10.0.0.1", "::ffff:10.0.0.1", "fe80::1", "", null, "garbage"]) expect(isTrustedPeer(loopback, peer)).toBe(false);
  });

  test("addresses and CIDR ranges of both families", () => {
    const ranges = parseProxyList(" 10.0.0.5, 172.16.0.0/12 ,fd00::/8");
    expect(isTrustedPeer(ranges, "10.0.0.5")).toBe(true);
    expect(isTrustedPeer(ranges, "10.0.0.6")).toBe(false);
    expect(isTrustedPeer(ranges, "172.31.255.1")).toBe(true);
    expect(isTrustedPeer(ranges, "fd12::3")).toBe(true);
    expect(isTrustedPeer(ranges, "127.0.0.1")).toBe(false);
    expect(parseProxyList("")).toEqual([]);
    expect(() => parseProxyList("10.0.0.1,nope")).toThrow('"nope"');
  });

  test("a trusted peer's forwarded scheme and host make the origin; anyone else's are ignored", () => {
    const headers = { "x-forwarded-proto": "https", "x-forwarded-host": "SMS.example.com" };
    expect(requestOrigin(forwarded(headers), "127.0.0.1", loopback)).toBe("https://sms.example.com");
    expect(requestOrigin(forwarded(headers), "203.0.113.9", loopback)).toBe("http://127.0.0.1:8080");
    expect(requestOrigin(forwarded(headers), undefined, loopback)).toBe("http://127.0.0.1:8080");
    // A chain of proxies: the first value is the client's side.
    expect(requestOrigin(forwarded({ "x-forwarded-proto": "https, http" }), "::1", loopback)).toBe("https://127.0.0.1:8080");
    // What cannot be a scheme or a host is not used.
    expect(
      requestOrigin(forwarded({ "x-forwarded-proto": "javascript", "x-forwarded-host": "evil.example/path?x" }), "::1", loopback),
    ).toBe("http://127.0.0.1:8080");
    expect(requestOrigin(forwarded({ "x-forwarded-host": "[2001:db8::1]:8443" }), "::1", loopback)).toBe("http://[2001:db8::1]:8443");
  });
});
