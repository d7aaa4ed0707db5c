// Which management addresses the tunnel service may open sessions to. It connects wherever a
// VTEP's managementIp says, so an address that names this host, the local link (the cloud's
// metadata address among them), every host or none would turn it into a probe of the
// deployment's own ports. Those are refused unless the operator allows their network in
// VNM_VTEP_ALLOWED_NETWORKS (comma-separated CIDRs; a lab on one machine sets 127.0.0.0/8).
import { canonicalIpv6, isIpv4 } from "@vnm/kit";
import ipaddr from "ipaddr.js";

/** The special-purpose ranges refused by default (ipaddr.js's range names), as a person reads them. */
const REFUSED: Record<string, string> = {
  unspecified: "an unspecified address",
  broadcast: "the broadcast address",
  multicast: "a multicast address",
  loopback: "a loopback address",
  linkLocal: "a link-local address",
};

type Network = [ipaddr.IPv4 | ipaddr.IPv6, number];

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
      networks.push(ipaddr.parseCIDR(entry));
    }
    return new AddressPolicy(networks);
  }

  /** Undefined when sessions to this (canonical) address may be opened; else why not, as a sentence's end. */
  refusal(address: string): string | undefined {
    const ip = ipaddr.parse(address);
    if (this.allowed.some(([net, bits]) => ip.kind() === net.kind() && ip.match(net, bits))) return undefined;
    const what = REFUSED[ip.range()];
    return what && `must not be ${what} unless its network is in VNM_VTEP_ALLOWED_NETWORKS`;
  }
}
