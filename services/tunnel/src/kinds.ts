// Tunnel zones and VTEPs: what a client may send, how they are stored and read back. A zone's
// name is unique per type ignoring case (a unique index: 409, also under concurrent writes); a
// zone a VTEP uses can be neither deleted nor made another type (409 naming the VTEPs). A VTEP
// names a zone of type vtep (400 otherwise, as in the original) and one address and port. Each
// field's own rules are tunnel.proto's; what they cannot state is here, by name: a VTEP's
// address against the deployment's policy (addressAllowed), its zone's type (zoneOfVteps), a
// zone VTEPs use keeping its type (unusedByVteps).
import { ApiError, type Checked, type Queryable, Resource } from "@vnm/kit";
import { type AddressPolicy, canonicalAddress } from "./address-policy.ts";
import { unbound } from "./bindings.ts";

interface ZoneRow {
  id: string;
  name: string;
  type: string;
}

/** 409 while VTEPs use the zone, naming them. */
async function unusedByVteps(q: Queryable, zoneId: string, doing: string): Promise<void> {
  const users = (await q.query<{ id: string; management_ip: string }>("SELECT id, management_ip FROM vteps WHERE tunnel_zone_id = $1 ORDER BY seq", [zoneId])).rows;
  if (users.length === 0) return;
  const named = users.map((v) => `${v.id} (${v.management_ip})`).join(", ");
  throw ApiError.conflict(`The tunnel zone is used by VTEP(s) ${named}; delete them before ${doing} it.`);
}

export const tunnelZones = new Resource({
  proto: "vnm.tunnel.v1.TunnelZone",
  table: "tunnel_zones",
  validate: async (q, z, { current }: { current?: ZoneRow }) => {
    if (current?.type === "vtep" && z.type !== "vtep") await unusedByVteps(q, current.id, "changing the type of");
  },
  cascade: (q, zone: ZoneRow) => unusedByVteps(q, zone.id, "deleting"),
  conflict: (z) => `A ${z.type} tunnel zone named ${z.name} already exists (names are compared ignoring case).`,
});

interface VtepRow {
  id: string;
  management_ip: string;
  management_port: number;
  tunnel_zone_id: string;
  connection_state: string;
  name: string | null;
  description: string | null;
  tunnel_ips: string[];
  connection_error: string | null;
}

/** A VTEP's body, checked against tunnel.proto's rules (ids in lower case; the address as sent). */
type Vtep = Checked<"vnm.tunnel.v1.Vtep">;

/** The management address in its stored form (canonicalAddress), as sent when it has none (addressAllowed refuses it). */
const storedAddress = (v: Vtep) => canonicalAddress(v.managementIp) ?? v.managementIp;

/**
 * The management address in a form it can be stored in (IPv4, or IPv6 without a zone), and
 * not one the deployment's policy refuses (address-policy.ts: the policy is configuration).
 */
function addressAllowed(policy: AddressPolicy, v: Vtep): void {
  const ip = canonicalAddress(v.managementIp);
  const message = ip === undefined ? "must be an IPv4 or IPv6 address" : policy.refusal(ip);
  if (message) throw ApiError.invalid([{ property: "managementIp", message }]);
}

/** The zone a VTEP names exists and is of type vtep; it stays until this commits (locked). */
async function zoneOfVteps(q: Queryable, { tunnelZoneId }: Vtep): Promise<void> {
  const zone = (await q.query<ZoneRow>("SELECT * FROM tunnel_zones WHERE id = $1 FOR KEY SHARE", [tunnelZoneId])).rows[0];
  if (!zone) throw ApiError.invalid([{ property: "tunnelZoneId", message: `must name an existing tunnel zone; there is none with ID ${tunnelZoneId}` }]);
  if (zone.type !== "vtep") throw ApiError.invalid([{ property: "tunnelZoneId", message: `must name a tunnel zone of type vtep; ${zone.id} is ${zone.type}` }]);
}

/** The VTEP kind, its addresses checked against the deployment's policy. */
export const vtepKind = (policy: AddressPolicy) =>
  new Resource({
    proto: "vnm.tunnel.v1.Vtep",
    table: "vteps",
    columns: (v) => ({ management_ip: storedAddress(v), management_port: v.managementPort, tunnel_zone_id: v.tunnelZoneId }),
    render: (r: VtepRow) => ({
      id: r.id,
      managementIp: r.management_ip,
      managementPort: r.management_port,
      tunnelZoneId: r.tunnel_zone_id,
      connectionState: r.connection_state,
      name: r.name,
      description: r.description,
      tunnelIpAddrs: r.tunnel_ips,
      connectionError: r.connection_error,
    }),
    references: zoneOfVteps,
    validate: (_q, v) => addressAllowed(policy, v),
    // A VTEP with bindings stays (409): they are not taken with it.
    cascade: (q, v: VtepRow) => unbound(q, v.id),
    conflict: (v) => `A VTEP with management address ${storedAddress(v)} and port ${v.managementPort} already exists.`,
  });
