// The Bridge kind (interface "Bridge (v4)"). Deleting a bridge takes the kinds that live under
// it (DHCP subnets and their hosts, DHCPv6 subnets, MAC entries), each announced: the kit
// knows them from the proto paths. Its fields' rules are the proto's (bridge.proto).
//
// vxlanPortIds are the routing service's VXLAN ports of the bridge (one per VTEP it is bound to),
// set by that service when it adds or removes one (SetBridgeVxlanPorts, under its per-bridge
// lock); a bridge with any cannot be deleted (409), as VTEP bindings hold it. A port that leaves
// takes the MAC entries on it and the ARP entries its device taught (setVxlanPorts).
//
// Its filters and mirror lists name the policy service's chains and mirrors (the kit's
// PolicyReferences): a write naming a new one asks that service, and a deleted one is cleared
// from the bridges.
import { ApiError, isUuid, PolicyReferences, type Queryable, Resource, type ServiceContext, type Store } from "@vnm/kit";
import { forgetTaughtArp } from "./learned-macs.ts";
import { macPorts } from "./mac-table.ts";

interface BridgeRow {
  id: string;
  vxlan_port_ids: string[];
  inbound_filter_id: string | null;
  outbound_filter_id: string | null;
  inbound_mirror_ids: string[];
  outbound_mirror_ids: string[];
}

/** The chains and mirrors bridges name (tombstones: migration 6). */
export const policyRefs = new PolicyReferences("bridge");

export const bridges = new Resource({
  proto: "vnm.bridge.v1.Bridge",
  table: "bridges",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  // PUT replaces: what the body leaves out returns to its default. vxlanPortIds is read-only.
  defaults: { adminStateUp: true, inboundMirrorIds: [], outboundMirrorIds: [] },
  references: (q, b, { ctx, current }) => policyRefs.require(q, b, current, ctx),
  cascade: async (_q: Queryable, row: BridgeRow) => {
    if (row.vxlan_port_ids.length > 0) throw ApiError.conflict(`Bridge ${row.id} is bound to VTEPs (VXLAN ports ${row.vxlan_port_ids.join(", ")}); delete its VTEP bindings before deleting it.`);
  },
});

/** The bridges kind, its checks calling the policy service as this service. */
export function bridgesFor(svc: Pick<ServiceContext, "call">) {
  policyRefs.connect(svc);
  return bridges;
}

/**
 * SetBridgeVxlanPorts: the bridge's VXLAN ports as routing has them, announced when they change.
 * A port that leaves takes, in the same transaction, its MAC entries (on any VLAN) and the ARP
 * entries of the MACs its VTEP's device taught the bridge (its VLAN 0 entries, learned-macs.ts),
 * unless another of the bridge's VXLAN ports still has that MAC; each deletion announced. So an
 * unbinding removes what the device taught whether or not a tunnel session is there to say so.
 */
export async function setVxlanPorts(store: Store, req: { id?: unknown; portIds?: unknown }): Promise<Record<string, never>> {
  const id = req.id;
  if (!isUuid(id)) throw ApiError.notFound(`There is no Bridge with ID ${String(id)}.`);
  const ids = (Array.isArray(req.portIds) ? req.portIds : []).filter(isUuid).map((p) => p.toLowerCase()).sort();
  await store.tx(undefined, async (q, emit) => {
    const row = (await q.query<BridgeRow>("SELECT * FROM bridges WHERE id = $1 FOR UPDATE", [id.toLowerCase()])).rows[0];
    if (!row) throw ApiError.notFound(`There is no Bridge with ID ${id}.`);
    if (JSON.stringify([...row.vxlan_port_ids].sort()) === JSON.stringify(ids)) return;
    const now = (await q.query("UPDATE bridges SET vxlan_port_ids = $2 WHERE id = $1 RETURNING *", [row.id, ids])).rows[0];
    emit(bridges.change("updated", now));
    const left = row.vxlan_port_ids.filter((p) => !ids.includes(p));
    if (left.length === 0) return;
    const up = [now];
    const gone = (await q.query<{ id: string; bridge_id: string; vlan_id: number; mac: string; port_id: string }>("DELETE FROM mac_ports WHERE bridge_id = $1 AND port_id = ANY($2::uuid[]) RETURNING *", [row.id, left])).rows;
    for (const r of gone) emit(macPorts.change("deleted", r, up));
    await forgetTaughtArp(q, emit, up, row.id, [...new Set(gone.filter((r) => r.vlan_id === 0).map((r) => r.mac))], ids);
  });
  return {};
}
