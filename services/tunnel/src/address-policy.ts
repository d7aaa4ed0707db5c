// Which management addresses the tunnel service may open sessions to. It connects wherever a
// VTEP's managementIp says, so an address that names this host, the local link, a shared or
// special-purpose network (the IANA special-purpose registries, as ipaddr.js classifies them), a
// cloud's instance services (metadata at 169.254.169.254, fd00:ec2::254, 100.100.100.200,
// 192.0.0.192), every host or none would turn it into a probe of the deployment's own ports.
// An IPv6 address that carries an IPv4 address (mapped, compatible, translated, NAT64, 6to4,
// Teredo) is judged by the IPv4 address it carries too. Those are refused unless the operator
// allows the address's network in VNM_VTEP_ALLOWED_NETWORKS (comma-separated CIDRs; a lab on one
// machine sets 127.0.0.0/8).
import { canonicalIpv6, isIpv4 } from "@vnm/kit";
import ipaddr from "ipaddr.js";

type Network = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** ipaddr.js's range names refused, as a person reads them; a range not named here is refused too (see `what`). */
const RANGE_NAMES: Record<string, string> = {
  unspecified: "an unspecified address",
  broadcast: "the broadcast address",
  multicast: "a multicast address",
  loopback: "a loopback address",
  linkLocal: "a link-local address",
  carrierGradeNat: "a shared (carrier-grade NAT) address",
  reserved: "a reserved special-purpose address",
  as112: "an AS112 (DNS sink) address",
  amt: "an AMT relay address",
  deprecatedSiteLocal: "a deprecated site-local address",
  discard: "a discard-only address",
  rfc6145: "an IPv4-translated address (::ffff:0:0/96)",
  rfc6052: "a local-use NAT64 address (64:ff9b:1::/48)",
  benchmarking: "a benchmarking address",
  as112v6: "an AS112 (DNS sink) address",
  deprecatedOrchid: "an ORCHID address",
  orchid2: "an ORCHIDv2 address",
  droneRemoteIdProtocolEntityTags: "a DRIP entity tag",
  segmentRouting: "a segment routing SID",
  ipv4Compatible: "a deprecated IPv4-compatible address (::a.b.c.d)",
  notGlobal: "an IPv6 address outside global unicast (2000::/3) and unique local (fc00::/7) space",
  cloud: "a cloud's instance-services address (metadata, DNS, time)",
};

const cidrs = (list: string[]): Network[] => list.map((c) => ipaddr.parseCIDR(c));
/** Documentation ranges (RFC 5737, 3849, 9637): examples and tests use them; they route nowhere, so they are taken. */
const DOCUMENTATION = cidrs(["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20"]);
/** Cloud instance services inside ranges otherwise taken (AWS's IPv6 metadata, DNS and NTP); the others lie in refused ranges. */
const CLOUD = cidrs(["fd00:ec2::/32"]);
const GLOBAL_UNICAST = cidrs(["2000::/3"]);
const WELL_KNOWN_NAT64 = cidrs(["64:ff9b::/96"]);
const IPV4_COMPATIBLE = cidrs(["::/96"]);

const inAny = (ip: ipaddr.IPv4 | ipaddr.IPv6, nets: Network[]) => nets.some(([net, bits]) => ip.kind() === net.kind() && ip.match(net, bits));
const v4From = (hi: number, lo: number) => ipaddr.IPv4.parse(`${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`);

/** The IPv4 addresses an IPv6 address carries, by the form that carries them. */
export function embeddedIpv4(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = ip.parts;
  switch (ip.range()) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "rfc6145": // ::ffff:0:a.b.c.d
      return [v4From(p[6]!, p[7]!)];
    case "6to4": // 2002:aabb:ccdd::/48
      return [v4From(p[1]!, p[2]!)];
    case "teredo": // 2001:0:server:flags:port:client (the client's address inverted)
      return [v4From(p[2]!, p[3]!), v4From(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
    case "rfc6052": // 64:ff9b::a.b.c.d; the local-use prefix's position is the site's choice, refused whole
      return inAny(ip, WELL_KNOWN_NAT64) ? [v4From(p[6]!, p[7]!)] : [];
    default: // ::a.b.c.d, except :: and ::1
      return inAny(ip, IPV4_COMPATIBLE) && ip.range() === "unicast" ? [v4From(p[6]!, p[7]!)] : [];
  }
}

/** Why an address is not a device's, as a sentence's middle ("a loopback address"); undefined when it may be one. */
function what(ip: ipaddr.IPv4 | ipaddr.IPv6): string | undefined {
  if (inAny(ip, DOCUMENTATION)) return undefined;
  if (inAny(ip, CLOUD)) return RANGE_NAMES["cloud"];
  const range = ip.range();
  if (ip.kind() === "ipv4") return range === "unicast" || range === "private" ? undefined : (RANGE_NAMES[range] ?? `a special-purpose address (${range})`);
  const v6 = ip as ipaddr.IPv6;
  for (const v4 of embeddedIpv4(v6)) {
    const inner = what(v4);
    if (inner) return `an address carrying ${v4.toString()}, ${inner}`;
  }
  if (range === "ipv4Mapped" || range === "6to4" || range === "teredo" || (range === "rfc6052" && inAny(ip, WELL_KNOWN_NAT64))) return undefined;
  if (range === "uniqueLocal") return undefined;
  if (range === "unicast") {
    if (inAny(ip, IPV4_COMPATIBLE)) return RANGE_NAMES["ipv4Compatible"];
    return inAny(ip, GLOBAL_UNICAST) ? undefined : RANGE_NAMES["notGlobal"];
  }
  return RANGE_NAMES[range] ?? `a special-purpose address (${range})`;
}

/**
 * An address in the one form it is stored in: IPv4 as a dotted quad, IPv6 in its RFC 5952 form,
 * an IPv4-mapped IPv6 address (::ffff:a.b.c.d) as its IPv4 address, so one device has one
 * address. Undefined when it is neither.
 */
export function canonicalAddress(value: string): string | undefined {
  if (isIpv4(value)) return value;
  const v6 = canonicalIpv6(value);
  if (v6 === undefined) return undefined;
  const parsed = ipaddr.IPv6.parse(v6);
  return parsed.isIPv4MappedAddress() ? parsed.toIPv4Address().toString() : v6;
}

export class AddressPolicy {
  private readonly allowed: Network[];

  private constructor(allowed: Network[]) {
    this.allowed = allowed;
  }

  /** VNM_VTEP_ALLOWED_NETWORKS' value; throws naming the entry that is not a CIDR. */
  static parse(raw: string): AddressPolicy {
    const networks: Network[] = [];
    for (const entry of raw.split(",").map((s) => s.trim()).filter(Boolean)) {
      if (!ipaddr.isValidCIDR(entry)) throw new Error(`${JSON.stringify(entry)} is not a network in CIDR form (e.g. 127.0.0.0/8, fd00::/8)`);
      const [addr, bits] = entry.split("/");
      networks.push(ipaddr.parseCIDR(`${canonicalAddress(addr!) ?? addr}/${bits}`));
    }
    return new AddressPolicy(networks);
  }

  /**
   * Undefined when sessions to this (canonical) address may be opened; else why not, as a
   * sentence's end. An allowed network exempts the address itself: an IPv6 form carrying an
   * allowed IPv4 address is another address, and is not exempt (only ::ffff:a.b.c.d is stored as
   * the IPv4 address it maps).
   */
  refusal(address: string): string | undefined {
    // ipaddr.js reads a dotted tail as IPv4-mapped whatever precedes it (::127.0.0.1 as
    // ::ffff:127.0.0.1): it is given the canonical, all-hex form (the WHATWG URL parser's).
    let ip = ipaddr.parse(canonicalAddress(address) ?? address);
    if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
    if (inAny(ip, this.allowed)) return undefined;
    const why = what(ip);
    return why && `must not be ${why} unless its network is in VNM_VTEP_ALLOWED_NETWORKS`;
  }
}
