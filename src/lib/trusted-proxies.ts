// The reverse proxies whose word we take about the original request (PIGEON_TRUSTED_PROXIES,
// loopback by default). Behind a proxy that ends TLS, Pigeon itself sees plain http; the proxy says
// what the phone really called with X-Forwarded-Proto and X-Forwarded-Host. Anyone else could send
// those headers too, so they count only when the connection itself comes from a listed address.
import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type ProxyRange = [Address, number];

export const DEFAULT_TRUSTED_PROXIES = "127.0.0.0/8,::1";

/** An address as ipaddr.js reads it; an IPv4 address in its IPv6-mapped form becomes IPv4. */
function parseAddress(text: string): Address {
  const addr = ipaddr.parse(
    text
      .trim()
      .replace(/^\[|\]$/g, "")
      .replace(/%.*$/, ""),
  );
  return addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? (addr as ipaddr.IPv6).toIPv4Address() : addr;
}

/**
 * Reads a comma-separated list of addresses and CIDR ranges ("10.0.0.5, 172.16.0.0/12, fd00::/8");
 * throws an Error naming the entry it cannot read. An empty list trusts nobody.
 */
export function parseProxyList(raw: string): ProxyRange[] {
  const ranges: ProxyRange[] = [];
  for (const entry of raw
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean)) {
    try {
      if (entry.includes("/")) {
        const [addr, bits] = ipaddr.parseCIDR(entry);
        const plain = addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? null : addr;
        ranges.push(plain ? [plain, bits] : [(addr as ipaddr.IPv6).toIPv4Address(), Math.max(0, bits - 96)]);
      } else {
        const addr = parseAddress(entry);
        ranges.push([addr, addr.kind() === "ipv4" ? 32 : 128]);
      }
    } catch {
      throw new Error(`"${entry}" is not an IP address or CIDR range`);
    }
  }
  return ranges;
}

/** Whether a connection's peer address lies in one of the ranges. */
export function isTrustedPeer(ranges: readonly ProxyRange[], peer: string | null | undefined): boolean {
  if (!peer) return false;
  let addr: Address;
  try {
    addr = parseAddress(peer);
  } catch {
    return false;
  }
  return ranges.some(([range, bits]) => range.kind() === addr.kind() && addr.match(range, bits));
}

/** A host, optionally with a port, as a Host header carries it: a name, IPv4, or [IPv6]. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** The first value of a header a chain of proxies may have appended to ("https, http" → "https"). */
const firstOf = (value: string | null) => value?.split(",")[0]?.trim() || null;

/**
 * The origin the caller used: the request's own, or, when the peer is a trusted proxy, the scheme
 * of X-Forwarded-Proto and the host of X-Forwarded-Host (each only when it reads as one).
 */
export function requestOrigin(request: Request, peer: string | null | undefined, trusted: readonly ProxyRange[]): string {
  const own = new URL(request.url);
  if (!isTrustedPeer(trusted, peer)) return own.origin;
  const proto = firstOf(request.headers.get("x-forwarded-proto"))?.toLowerCase();
  const host = firstOf(request.headers.get("x-forwarded-host"));
  const scheme = proto === "https" || proto === "http" ? proto : own.protocol.slice(0, -1);
  return `${scheme}://${host && HOST.test(host) ? host.toLowerCase() : own.host}`;
}
