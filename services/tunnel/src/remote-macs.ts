// The MACs of the bridge a VTEP's device should hold (vtep-bindings.md, "MACs of the bridge"),
// computed from the API at each reconcile of the device (vxgw.ts):
// - the members of the VTEP's tunnel zone (this service's tunnel_zone_hosts) and, for each, the
//   ports bound to it (routing's ListHostPorts);
// - for each bound bridge, its VLAN 0 MAC table and its ARP table (the bridge service's
//   ListMacPorts and ListArpTable, called as this service).
// An entry on a port bound to a member host becomes a remote MAC pointing at that host's address
// in the zone (IPv4 only: the device's locators are vxlan_over_ipv4); entries on this VTEP's own
// VXLAN port (the MACs it learned) are not written back. The flooding proxy is the member with
// the greatest floodingProxyWeight above 0 (ties: the lowest host id), as MidoNet picks it.
import { isIPv4 } from "node:net";
import { type Queryable, type ServiceContext, vxlanPortId } from "@vnm/kit";

/** A MAC of the bridge for the device: lower-case MAC, the host's tunnel address, the ARP table's IP ("" for none). */
export interface RemoteMac {
  mac: string;
  dst: string;
  ip: string;
}

/** What the device should hold of the bridges' MACs; a bridge missing from `byBridge` could not be read (its rows are left alone). */
export interface RemoteState {
  byBridge: Map<string, RemoteMac[]>;
  /** The tunnel zone's flooding proxy's address, or undefined when it has none. */
  floodingProxy: string | undefined;
  /** What could not be read, for the log; undefined when everything was. */
  problem?: string;
}

const items = (r: Record<string, unknown>): Record<string, unknown>[] => (Array.isArray(r["items"]) ? (r["items"] as Record<string, unknown>[]) : []);

/** The ports bound to a host (every page). */
async function hostPorts(svc: Pick<ServiceContext, "call">, hostId: string): Promise<string[]> {
  const out: string[] = [];
  let marker: string | undefined;
  for (;;) {
    const r = await svc.call("vnm.routing.v1.BindingService", "ListHostPorts", { id: hostId, limit: 1000, ...(marker ? { marker } : {}) });
    for (const b of items(r)) if (typeof b["portId"] === "string") out.push(b["portId"].toLowerCase());
    marker = typeof r["next_marker"] === "string" && r["next_marker"] ? r["next_marker"] : typeof r["nextMarker"] === "string" && r["nextMarker"] ? r["nextMarker"] : undefined;
    if (!marker) return out;
  }
}

/** The remote MACs of each bridge in `bridgeIds` for the VTEP `vtepId`, and its zone's flooding proxy. */
export async function remoteState(svc: Pick<ServiceContext, "call">, q: Queryable, vtepId: string, bridgeIds: string[]): Promise<RemoteState> {
  const members = (
    await q.query<{ host_id: string; ip_address: string; weight: number }>(
      `SELECT m.host_id, m.ip_address, h.flooding_proxy_weight AS weight
         FROM vteps v JOIN tunnel_zone_hosts m ON m.tunnel_zone_id = v.tunnel_zone_id JOIN hosts h ON h.id = m.host_id
        WHERE v.id = $1 ORDER BY m.host_id`,
      [vtepId],
    )
  ).rows.filter((m) => isIPv4(m.ip_address));
  let floodingProxy: string | undefined;
  let best = 0;
  for (const m of members) {
    if (m.weight > best) {
      best = m.weight;
      floodingProxy = m.ip_address;
    }
  }
  const byBridge = new Map<string, RemoteMac[]>();
  if (bridgeIds.length === 0) return { byBridge, floodingProxy };
  const problems: string[] = [];
  const dstOf = new Map<string, string>(); // port id -> host's address in the zone
  try {
    for (const m of members) for (const p of await hostPorts(svc, m.host_id)) dstOf.set(p, m.ip_address);
  } catch (err) {
    return { byBridge, floodingProxy, problem: `the ports bound to the tunnel zone's hosts could not be read: ${(err as Error).message}` };
  }
  for (const bridgeId of bridgeIds) {
    try {
      const own = vxlanPortId(bridgeId, vtepId);
      const macs = items(await svc.call("vnm.bridge.v1.MacTableService", "ListMacPorts", { bridgeId, vlanId: 0 }));
      const arp = items(await svc.call("vnm.bridge.v1.ArpTableService", "ListArpTable", { bridgeId }));
      const ipOf = new Map<string, string>();
      for (const e of arp.map((a) => ({ ip: String(a["ip"]), mac: String(a["mac"]).toLowerCase() })).sort((a, b) => a.ip.localeCompare(b.ip))) {
        if (!ipOf.has(e.mac)) ipOf.set(e.mac, e.ip);
      }
      const out = new Map<string, RemoteMac>();
      for (const e of macs) {
        const port = String(e["portId"] ?? "").toLowerCase();
        const mac = String(e["macAddr"] ?? "").toLowerCase();
        const dst = dstOf.get(port);
        if (!mac || !dst || port === own || out.has(mac)) continue;
        out.set(mac, { mac, dst, ip: ipOf.get(mac) ?? "" });
      }
      byBridge.set(
        bridgeId.toLowerCase(),
        [...out.values()].sort((a, b) => a.mac.localeCompare(b.mac)),
      );
    } catch (err) {
      problems.push(`bridge ${bridgeId}'s MAC and ARP tables could not be read: ${(err as Error).message}`);
    }
  }
  return { byBridge, floodingProxy, ...(problems.length ? { problem: problems.join("; ") } : {}) };
}
