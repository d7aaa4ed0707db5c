// DHCP of a bridge: IPv4 subnets (a referenced resource docs/api.md defines) with their
// hosts (interface "DHCP Host (v2)"), and DHCPv6 subnets (interface "DHCPv6 Subnet (v1)").
// A subnet's path segment is <address>_<length>; a host's is its MAC address (path syntax, read
// here). The fields' rules are dhcp.proto's; what compares a field with another, or with the
// database, is named below beside its kind.
import { ApiError, type Checked, canonicalIpv6, ipv4InSubnet, isIpv4, parseMac, type Queryable, Resource } from "@vnm/kit";

/** A `:subnetAddr` path segment: <address>_<length> (length defaults to the full width). */
export function parseSubnetAddr(segment: unknown, family: 4 | 6): { prefix: string; length: number } | undefined {
  if (typeof segment !== "string") return undefined;
  const i = segment.lastIndexOf("_");
  const rawAddr = i < 0 ? segment : segment.slice(0, i);
  const rawLen = i < 0 ? (family === 4 ? "32" : "128") : segment.slice(i + 1);
  if (!/^\d{1,3}$/.test(rawLen)) return undefined;
  const length = Number(rawLen);
  if (length > (family === 4 ? 32 : 128)) return undefined;
  const prefix = family === 4 ? (isIpv4(rawAddr) ? rawAddr : undefined) : canonicalIpv6(rawAddr);
  return prefix === undefined ? undefined : { prefix, length };
}

interface SubnetRow {
  id: string;
  bridge_id: string;
  prefix: string;
  length: number;
  default_gateway: string | null;
  server_addr: string | null;
  dns_server_addrs: string[];
  interface_mtu: number | null;
  opt121_routes: unknown[];
  enabled: boolean;
}

/** A DHCP subnet's body, checked against dhcp.proto's rules. */
type Subnet = Checked<"vnm.bridge.v1.DhcpSubnet">;

/** A subnet may not move so that hosts fall outside it. */
async function keepsHostsInside(q: Queryable, s: Subnet, current: SubnetRow): Promise<void> {
  const hosts = (await q.query<{ mac: string; ip: string }>("SELECT mac, ip FROM dhcp_hosts WHERE subnet_id = $1", [current.id])).rows;
  const outside = hosts.filter((h) => !ipv4InSubnet(h.ip, s.subnetPrefix, s.subnetLength)).map((h) => h.mac);
  if (outside.length > 0) {
    throw ApiError.conflict(
      `Subnet ${s.subnetPrefix}/${s.subnetLength} would leave hosts outside it (${outside.slice(0, 5).join(", ")}${outside.length > 5 ? ", ..." : ""}); move or delete them first.`,
    );
  }
}

export const dhcpSubnets = new Resource({
  proto: "vnm.bridge.v1.DhcpSubnet",
  table: "dhcp_subnets",
  parentColumn: "bridge_id",

  key: { read: (req) => parseSubnetAddr(req["subnetAddr"], 4) },
  fieldColumns: { subnetPrefix: "prefix", subnetLength: "length", interfaceMTU: "interface_mtu" },
  columns: (s) => ({
    prefix: s.subnetPrefix,
    length: s.subnetLength,
    default_gateway: s.defaultGateway ?? null,
    server_addr: s.serverAddr ?? null,
    dns_server_addrs: s.dnsServerAddrs ?? [],
    interface_mtu: s.interfaceMTU ?? null,
    opt121_routes: JSON.stringify(s.opt121Routes ?? []),
    enabled: s.enabled ?? true,
  }),
  render: (r: SubnetRow) => ({
    bridgeId: r.bridge_id,
    subnetPrefix: r.prefix,
    subnetLength: r.length,
    dnsServerAddrs: r.dns_server_addrs,
    opt121Routes: r.opt121_routes,
    enabled: r.enabled,
    defaultGateway: r.default_gateway,
    serverAddr: r.server_addr,
    interfaceMTU: r.interface_mtu,
  }),
  validate: (q, s, { current }) => (current ? keepsHostsInside(q, s, current) : undefined),
  conflict: (s) => `The DHCP subnet ${s.subnetPrefix}/${s.subnetLength} already exists on this bridge.`,
});

interface HostRow {
  id: string;
  mac: string;
  ip: string;
  name: string;
  extra_dhcp_opts: unknown[];
}

/** A DHCP host's body, checked against dhcp.proto's rules (its MAC in lower case). */
type Host = Checked<"vnm.bridge.v1.DhcpHost">;

/** A host's address lies inside its subnet: 400 naming ipAddr. */
function insideSubnet(h: Host, prefix: string, length: number): void {
  if (!ipv4InSubnet(h.ipAddr, prefix, length)) {
    throw ApiError.invalid([{ property: "ipAddr", message: `must lie inside the subnet ${prefix}/${length}` }]);
  }
}

export const dhcpHosts = new Resource({
  proto: "vnm.bridge.v1.DhcpHost",
  table: "dhcp_hosts",
  parentColumn: "subnet_id",

  key: {
    read: (req) => {
      const m = typeof req["hostMac"] === "string" ? parseMac(req["hostMac"]) : undefined;
      return m ? { mac: m } : undefined;
    },
  },
  fieldColumns: { macAddr: "mac", ipAddr: "ip" },
  columns: (h) => ({ mac: h.macAddr, ip: h.ipAddr, name: h.name, extra_dhcp_opts: JSON.stringify(h.extraDhcpOpts ?? []) }),
  render: (r: HostRow, [s]) => ({
    bridgeId: s!["bridge_id"],
    subnetAddr: `${s!["prefix"]}_${s!["length"]}`,
    macAddr: r.mac,
    ipAddr: r.ip,
    name: r.name,
    extraDhcpOpts: r.extra_dhcp_opts,
  }),
  validate: (_q, h, { up: [s] }) => insideSubnet(h, s!["prefix"], s!["length"]),
  conflict: (h) => `The subnet already has a host with MAC address ${h.macAddr}.`,
});

interface Subnet6Row {
  id: string;
  bridge_id: string;
  prefix: string;
  length: number;
}

export const dhcpV6Subnets = new Resource({
  proto: "vnm.bridge.v1.DhcpV6Subnet",
  table: "dhcp6_subnets",
  parentColumn: "bridge_id",

  key: { read: (req) => parseSubnetAddr(req["subnetAddr"], 6) },
  // The prefix as dhcp.proto's rules keep it (RFC 5952 form).
  fieldColumns: { prefixLength: "length" },
  columns: (s) => ({ prefix: s.prefix, length: s.prefixLength }),
  render: (r: Subnet6Row) => ({ bridgeId: r.bridge_id, prefix: r.prefix, prefixLength: r.length }),
  conflict: (s) => `The DHCPv6 subnet ${s.prefix}/${s.prefixLength} already exists on this bridge.`,
});
