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

/** Resolves a host name to every address it has (injectable for tests). */
export type Resolver = (host: string) => Promise<string[]>;

const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * How to call a checked URL so the connection goes to the address that was checked: the host name
 * is resolved once, every address judged, and the request sent to the first of them with the
 * original Host header (and, for https, the original name for SNI and the certificate check). A
 * name that resolves to a public address when checked and to 127.0.0.1 a moment later (DNS
 * rebinding) therefore cannot redirect the call.
 */
export interface CheckedTarget {
  url: string;
  headers: Record<string, string>;
  tls?: { serverName: string };
}

/**
 * A POST to a checked target, as every call Pigeon makes to a customer's URL goes: to the very
 * address checked (its TLS name kept), no redirects followed, cut off after `timeoutMs`.
 */
export function postToTarget(
  doFetch: typeof fetch,
  target: CheckedTarget,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<Response> {
  return doFetch(target.url, {
    method: "POST",
    redirect: "manual",
    signal: AbortSignal.timeout(timeoutMs),
    ...(target.tls ? { tls: target.tls } : {}),
    headers: { ...target.headers, ...headers },
    body,
  });
}

export async function checkOutboundTarget(
  url: string,
  allowPrivate: boolean,
  resolve: Resolver = systemResolver,
): Promise<{ problem: string; target?: undefined } | { problem: null; target: CheckedTarget }> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { problem: "is not a URL" };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return { problem: "must use http or https" };
  if (parsed.username || parsed.password) return { problem: "must not carry credentials" };
  const asIs = { problem: null, target: { url, headers: {} } };
  if (allowPrivate) return asIs;
  const host = parsed.hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "")
    .toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".local") || host.endsWith(".internal")) {
    return { problem: `points at a local host (${host})` };
  }
  if (ipaddr.isValid(host)) return isPrivateAddress(host) ? { problem: `resolves to a private or local address (${host})` } : asIs;
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    return { problem: `host ${host} cannot be resolved` };
  }
  if (addresses.length === 0) return { problem: `host ${host} cannot be resolved` };
  // Every address must be public: a client may connect to any of them.
  const blocked = addresses.find(isPrivateAddress);
  if (blocked) return { problem: `resolves to a private or local address (${blocked})` };
  const pinned = new URL(url);
  pinned.hostname = addresses[0].includes(":") ? `[${addresses[0]}]` : addresses[0];
  return {
    problem: null,
    target: {
      url: pinned.toString(),
      headers: { host: parsed.host },
      ...(parsed.protocol === "https:" ? { tls: { serverName: parsed.hostname } } : {}),
    },
  };
}

/** Why `url` may not be called, or null when it may (`allowPrivate` lifts the address check). */
export async function outboundTargetProblem(url: string, allowPrivate: boolean, resolve?: Resolver): Promise<string | null> {
  return (await checkOutboundTarget(url, allowPrivate, resolve)).problem;
}

/** Kept under its old name for webhook and media callers. */
export const webhookTargetProblem = outboundTargetProblem;
