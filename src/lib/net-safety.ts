// Outbound targets chosen by API users (webhooks, header media, a cloud number's base_url) must be
// public: a URL that reaches loopback, link-local or private addresses would let an API key probe
// the server's own network (cloud metadata at 169.254.169.254, admin panels on 192.168.x).
// We decide on the parsed address, never on its spelling: IPv6 has many ways to carry an IPv4
// address (::ffff:7f00:1, 64:ff9b::7f00:1, ::127.0.0.1, 2002:7f00:1::), and the URL parser turns
// 2130706433, 0x7f.1 and 017700000001 into 127.0.0.1 before we see them. Checked when the target
// is saved and again before every call, as DNS can change in between.
import { lookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** The IPv4 address an IPv6 address carries, for the forms that carry one; null otherwise. */
function embeddedIPv4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = a.parts;
  const low32 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (a.range()) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "rfc6145": // ::ffff:0:a.b.c.d (SIIT)
    case "rfc6052": // 64:ff9b::a.b.c.d (NAT64), and the local-use 64:ff9b:1::/48
      return low32(p[6], p[7]);
    case "6to4": // 2002:AABB:CCDD::/48
      return low32(p[1], p[2]);
    case "teredo": // 2001:0::/32, the client's address stored inverted in the last 32 bits
      return low32(~p[6] & 0xffff, ~p[7] & 0xffff);
  }
  // ::a.b.c.d, the deprecated IPv4-compatible form (but not :: and ::1, judged as themselves).
  if (p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7] > 1)) return low32(p[6], p[7]);
  return null;
}

/** True unless the address is ordinary public unicast, whatever form it is written in. */
export function isPrivateAddress(ip: string): boolean {
  let addr: Address;
  try {
    addr = ipaddr.parse(ip.replace(/^\[|\]$/g, "").replace(/%.*$/, ""));
  } catch {
    return true; // not an address we can judge: refuse
  }
  if (addr.kind() === "ipv6") {
    const inner = embeddedIPv4(addr as ipaddr.IPv6);
    if (inner) return inner.range() !== "unicast";
  }
  return addr.range() !== "unicast";
}

function isIpLiteral(host: string): boolean {
  return ipaddr.isValid(host);
}

/** Why `url` may not be called, or null when it may (`allowPrivate` lifts the address check). */
export async function outboundTargetProblem(url: string, allowPrivate: boolean): Promise<string | null> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "is not a URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return "must use http or https";
  if (parsed.username || parsed.password) return "must not carry credentials";
  if (allowPrivate) return null;
  const host = parsed.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".local") || host.endsWith(".internal")) {
    return `points at a local host (${host})`;
  }
  let addresses: string[];
  if (isIpLiteral(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      return `host ${host} cannot be resolved`;
    }
    if (addresses.length === 0) return `host ${host} cannot be resolved`;
  }
  // Every address must be public: the client may connect to any of them.
  const blocked = addresses.find(isPrivateAddress);
  return blocked ? `resolves to a private or local address (${blocked})` : null;
}

/** Kept under its old name for webhook and media callers. */
export const webhookTargetProblem = outboundTargetProblem;
