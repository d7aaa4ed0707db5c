// DHCP of a bridge: IPv4 subnets (a referenced resource docs/api.md defines) with their
// hosts (interface "DHCP Host (v2)"), and DHCPv6 subnets (interface "DHCPv6 Subnet (v1)").
// A subnet's path segment is <address>_<length>; a host's is its MAC address.
import { ApiError, canonicalIpv6, int, ipv4, ipv4InSubnet, ipv6, isIpv4, mac, parseMac, type Queryable, Resource, text } from "@vnm/kit";
import { z } from "zod";

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

const subnetInput = z.object({
  subnetPrefix: ipv4(),
  subnetLength: int(0, 32),
  defaultGateway: ipv4().optional(),
  serverAddr: ipv4().optional(),
  dnsServerAddrs: z.array(ipv4()).max(16, "must hold at most 16 addresses").optional(),
  interfaceMTU: int(0, 65536).optional(),
  opt121Routes: z
    .array(z.object({ destinationPrefix: ipv4(), destinationLength: int(0, 32), gatewayAddr: ipv4() }))
    .max(64, "must hold at most 64 routes")
    .optional(),
  enabled: z.boolean().optional(),
});

/** A subnet may not move so that hosts fall outside it. */
async function keepsHostsInside(q: Queryable, s: z.output<typeof subnetInput>, current: SubnetRow): Promise<void> {
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
  input: subnetInput,
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

const hostInput = z.object({
  macAddr: mac(),
  ipAddr: ipv4(),
  name: text(255),
  extraDhcpOpts: z
    .array(z.object({ optName: text(255), optValue: text(1024) }))
    .max(64, "must hold at most 64 options")
    .optional(),
});

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
  input: hostInput,
  columns: (h) => ({ mac: h.macAddr, ip: h.ipAddr, name: h.name, extra_dhcp_opts: JSON.stringify(h.extraDhcpOpts ?? []) }),
  render: (r: HostRow, [s]) => ({
    bridgeId: s!["bridge_id"],
    subnetAddr: `${s!["prefix"]}_${s!["length"]}`,
    macAddr: r.mac,
    ipAddr: r.ip,
    name: r.name,
    extraDhcpOpts: r.extra_dhcp_opts,
  }),
  validate: (_q, h, { up: [s] }) => {
    if (!ipv4InSubnet(h.ipAddr, s!["prefix"], s!["length"])) {
      throw ApiError.invalid([{ property: "ipAddr", message: `must lie inside the subnet ${s!["prefix"]}/${s!["length"]}` }]);
    }
  },
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
  input: z.object({ prefix: ipv6(), prefixLength: int(0, 128) }),
  columns: (s) => ({ prefix: s.prefix, length: s.prefixLength }),
  render: (r: Subnet6Row) => ({ bridgeId: r.bridge_id, prefix: r.prefix, prefixLength: r.length }),
  conflict: (s) => `The DHCPv6 subnet ${s.prefix}/${s.prefixLength} already exists on this bridge.`,
});
