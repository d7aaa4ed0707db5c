// Tunnel zones and VTEPs: what a client may send, how they are stored and read back. A zone's
// name is unique per type ignoring case (a unique index: 409, also under concurrent writes); a
// zone a VTEP uses can be neither deleted nor made another type (409 naming the VTEPs). A VTEP
// names a zone of type vtep (400 otherwise, as in the original) and one address and port.
import { ApiError, int, type Queryable, Resource, text, uuid } from "@vnm/kit";
import { z } from "zod";
import { type AddressPolicy, canonicalAddress } from "./address-policy.ts";

const TYPES = ["gre", "vxlan", "vtep"] as const;

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

const zoneInput = z.object({
  id: uuid().optional(),
  name: text(255).refine((s) => s.length > 0, "must be between 1 and 255 characters long"),
  type: z.enum(TYPES, { error: `must be one of ${TYPES.join(", ")}` }),
});

export const tunnelZones = new Resource<typeof zoneInput, ZoneRow>({
  proto: "vnm.tunnel.v1.TunnelZone",
  table: "tunnel_zones",
  input: zoneInput,
  validate: async (q, z, { current }) => {
    if (current?.type === "vtep" && z.type !== "vtep") await unusedByVteps(q, current.id, "changing the type of");
  },
  cascade: (q, zone) => unusedByVteps(q, zone.id, "deleting"),
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
}

/** A management address in its stored form (canonicalAddress), refused where the policy says so. */
const managementIp = (policy: AddressPolicy) =>
  z.string().transform((s, ctx) => {
    const ip = canonicalAddress(s);
    if (ip === undefined) {
      ctx.addIssue({ code: "custom", message: "must be an IPv4 or IPv6 address" });
      return z.NEVER;
    }
    const refusal = policy.refusal(ip);
    if (refusal) ctx.addIssue({ code: "custom", message: refusal });
    return ip;
  });

/** The VTEP kind, its addresses checked against the deployment's policy. */
export const vtepKind = (policy: AddressPolicy) =>
  new Resource({
  proto: "vnm.tunnel.v1.Vtep",
  table: "vteps",
  input: z.object({ id: uuid().optional(), managementIp: managementIp(policy), managementPort: int(1, 65535), tunnelZoneId: uuid() }),
  columns: (v) => ({ management_ip: v.managementIp, management_port: v.managementPort, tunnel_zone_id: v.tunnelZoneId }),
  render: (r: VtepRow) => ({
    id: r.id,
    managementIp: r.management_ip,
    managementPort: r.management_port,
    tunnelZoneId: r.tunnel_zone_id,
    connectionState: r.connection_state,
    name: r.name,
    description: r.description,
    tunnelIpAddrs: r.tunnel_ips,
  }),
  // The zone must be a vtep zone, and stay until this commits.
  async references(q, v) {
    const zone = (await q.query<ZoneRow>("SELECT * FROM tunnel_zones WHERE id = $1 FOR KEY SHARE", [v.tunnelZoneId])).rows[0];
    if (!zone) throw ApiError.invalid([{ property: "tunnelZoneId", message: `must name an existing tunnel zone; there is none with ID ${v.tunnelZoneId}` }]);
    if (zone.type !== "vtep") throw ApiError.invalid([{ property: "tunnelZoneId", message: `must name a tunnel zone of type vtep; ${zone.id} is ${zone.type}` }]);
  },
  conflict: (v) => `A VTEP with management address ${v.managementIp} and port ${v.managementPort} already exists.`,
});
