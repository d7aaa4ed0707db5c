// IP address groups (IpAddrGroup v1, topology.md §8) and their addresses (IpAddrGroupAddr v1),
// administrators only. An address is named by its version and itself
// (/ip_addr_groups/{id}/versions/{version}/ip_addrs/{addr}, IPv6 percent-encoded or not) and
// kept in one spelling (IPv6 in RFC 5952 form), so a group holds an address once (409). Each
// field's own rules are ip_addr_groups.proto's; the version that must match the address, and
// the path's address and version, are read here.
import { ApiError, type Checked, canonicalIpv6, isIpv4, Resource } from "@vnm/kit";

interface AddrRow {
  id: string;
  ip_addr_group_id: string;
  version: number;
  addr: string;
}

/** An address in its one spelling with its version, or undefined when it is none. */
export function ipAddress(text: string): { addr: string; version: 4 | 6 } | undefined {
  if (isIpv4(text)) return { addr: text, version: 4 };
  const v6 = text.includes("%") ? undefined : canonicalIpv6(text);
  return v6 === undefined ? undefined : { addr: v6, version: 6 };
}

/**
 * The address a path names: 400 for a version other than 4 or 6 or an address that does not
 * parse (as MidoNet answers, and topology.md §8 says); an address of the other version names
 * nothing (undefined: 404).
 */
function pathAddress(req: Record<string, unknown>): { version: number; addr: string } | undefined {
  const version = req["version"];
  if (version !== 4 && version !== 6) throw ApiError.invalid([{ property: "version", message: "must be 4 or 6" }]);
  const parsed = typeof req["addr"] === "string" ? ipAddress(req["addr"]) : undefined;
  if (!parsed) throw ApiError.invalid([{ property: "addr", message: "must be a valid IP address" }]);
  return parsed.version === version ? parsed : undefined;
}

/** The body's version is its address's. */
function versionOfAddress(a: Checked<"vnm.routing.v1.IpAddrGroupAddr">): { addr: string; version: number } {
  const parsed = ipAddress(a.addr);
  if (!parsed) throw ApiError.invalid([{ property: "addr", message: "must be a valid IP address" }]);
  if (parsed.version !== a.version) throw ApiError.invalid([{ property: "version", message: `must be ${parsed.version} for the address ${parsed.addr}` }]);
  return parsed;
}

export const ipAddrGroups = new Resource({
  proto: "vnm.routing.v1.IpAddrGroup",
  table: "ip_addr_groups",
});

export const ipAddrGroupAddrs = new Resource({
  proto: "vnm.routing.v1.IpAddrGroupAddr",
  table: "ip_addr_group_addrs",
  parentColumn: "ip_addr_group_id",
  key: { read: pathAddress },
  columns: (a) => versionOfAddress(a),
  render: (r: AddrRow) => ({ addr: r.addr, version: r.version, ipAddrGroupId: r.ip_addr_group_id }),
  conflict: (a) => `The IP address group already holds the address ${ipAddress(a.addr)?.addr ?? a.addr}.`,
});
