// The MAC table of a bridge (MAC-Port v2), per VLAN. An entry's path segment is
// <mac with '-' (or ':')>_<portId>; the plain /mac_table forms address VLAN 0. The path's
// pair and VLAN are path syntax, read here; the body's fields' rules are mac_table.proto's.
import { ApiError, isUuid, parseMac, Resource } from "@vnm/kit";

/** <mac with '-' (or ':')>_<portId>, as docs/api.md ("Path formats") writes a MAC-port pair in a path. */
export function parsePair(segment: unknown): { mac: string; port_id: string } | undefined {
  if (typeof segment !== "string") return undefined;
  const i = segment.indexOf("_");
  if (i < 0) return undefined;
  const m = parseMac(segment.slice(0, i));
  const port = segment.slice(i + 1);
  return m && isUuid(port) ? { mac: m, port_id: port.toLowerCase() } : undefined;
}

/** A VLAN path segment: [0, 4095], else the path names nothing; absent means VLAN 0. */
function vlanOf(req: Record<string, unknown>): number {
  const v = req["vlanId"] ?? 0;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 4095) throw ApiError.notFound(`There is no VLAN ${String(v)} on a bridge.`);
  return v;
}

interface EntryRow {
  id: string;
  bridge_id: string;
  vlan_id: number;
  mac: string;
  port_id: string;
}

/** /bridges/<b>/mac_table/<pair> on VLAN 0, else under /vlans/<v>. */
function entryPath(r: EntryRow): string {
  const pair = `${r.mac.replace(/:/g, "-")}_${r.port_id}`;
  return r.vlan_id === 0 ? `/bridges/${r.bridge_id}/mac_table/${pair}` : `/bridges/${r.bridge_id}/vlans/${r.vlan_id}/mac_table/${pair}`;
}

export const macPorts = new Resource({
  proto: "vnm.bridge.v1.MacPort",
  table: "mac_ports",
  parentColumn: "bridge_id",
  order: ["vlan_id"],
  key: {
    read: (req) => {
      const pair = parsePair(req["macPortPair"]);
      return pair && { vlan_id: vlanOf(req), ...pair };
    },
    // The plain /mac_table list holds every VLAN's entries.
    scope: (req) => (req["vlanId"] === undefined ? {} : { vlan_id: vlanOf(req) }),
  },
  fieldColumns: { macAddr: "mac" },
  // The MAC and port id as mac_table.proto's rules keep them (lower case).
  columns: (e, req) => ({ vlan_id: vlanOf(req), mac: e.macAddr, port_id: e.portId }),
  render: (r: EntryRow) => ({ macAddr: r.mac, portId: r.port_id, vlanId: r.vlan_id, selfPath: entryPath(r) }),
  conflict: (e) => `The MAC table already maps ${e.macAddr} to port ${e.portId} on this VLAN.`,
});
