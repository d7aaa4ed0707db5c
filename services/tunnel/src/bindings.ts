// VTEP bindings (vtep-bindings.md): a port and VLAN of a VTEP's switch bound to a bridge, kept
// under the VTEP (its children: GET/POST /vteps/{id}/bindings, GET/DELETE
// /vteps/{id}/bindings/{portName}/{vlanId}; no PUT). A POST is judged in the contract's order:
// the VTEP (404, the kit, before the body), the body's fields (400, tunnel.proto's rules), the
// bridge, asked of the bridge service (404 naming it), the port among the switch's ports as the
// session last stored them (404; 503 with Retry-After while the device is not connected, which
// is also the state of a device with no switch), then the pair (409, a unique constraint, so
// two POSTs at once cannot both bind it). A bridge's first binding on any VTEP gives it a VNI
// (bridge_vnis, a sequence from 10000 within 24 bits), which it keeps. The bridge's VXLAN port
// for the VTEP follows, made by the routing service (vxlan-sync.ts).
//
// A bridge deleted takes its bindings (onBridgesDeleted, the durable consumer
// tunnel-bridge-deletions): the bridge service refuses to delete a bridge with VXLAN ports, but
// not one deleted after a binding's POST and before its port exists. The bridge's tombstone and
// lock keep a POST racing the deletion from surviving it.
import { status } from "@grpc/grpc-js";
import { ApiError, announcedIds, type BusMessage, type Queryable, Resource, type ServiceContext, Tombstones } from "@vnm/kit";

interface BindingRow {
  id: string;
  vtep_id: string;
  port_name: string;
  vlan_id: number;
  bridge_id: string;
}

/** Seconds a client waits before binding again on a device that is not connected. */
export const DEVICE_RETRY_AFTER_S = 5;

/** The (bridge, VTEP) pair's VXLAN port made or removed by routing, after this transaction (vxlan-sync.ts). */
const queueVxlanSync = (q: Queryable, bridgeId: string, vtepId: string) =>
  q.query("INSERT INTO vxlan_port_sync (bridge_id, vtep_id) VALUES ($1, $2) ON CONFLICT (bridge_id, vtep_id) DO UPDATE SET due = now()", [bridgeId, vtepId]);

const noBridge = (id: string) => ApiError.notFound(`There is no Bridge with ID ${id}.`);

/** Bridges the bridge service announced deleted; their lock serialises a binding's POST and the deletion's handling. */
export const deletedBridges = new Tombstones("deleted_bridges", "tunnel-bridge");

/**
 * The bridge exists, as the bridge service says (404 naming it; 503 when that service is down),
 * and its deletion is not being handled: locked until the binding commits.
 */
async function bridgeExists(svc: Pick<ServiceContext, "call">, q: Queryable, id: string): Promise<void> {
  if (await deletedBridges.lockedGone(q, id.toLowerCase())) throw noBridge(id);
  try {
    await svc.call("vnm.bridge.v1.BridgeService", "GetBridge", { id });
  } catch (err) {
    throw ApiError.from(err, "bridge").code === status.NOT_FOUND ? noBridge(id) : ApiError.from(err, "bridge");
  }
}

/** The port is one of the switch's as last read; the device must be connected (it has its switch). */
async function portOfSwitch(q: Queryable, vtep: Record<string, unknown>, portName: string): Promise<void> {
  if (vtep["connection_state"] !== "connected") {
    const e = ApiError.unavailable(`VTEP ${String(vtep["id"])} is ${String(vtep["connection_state"])}: its switch's ports cannot be checked; try again later.`);
    e.retryAfter = DEVICE_RETRY_AFTER_S;
    throw e;
  }
  const found = await q.query("SELECT 1 FROM vtep_ports WHERE vtep_id = $1 AND name = $2", [vtep["id"], portName]);
  if (!found.rowCount) throw ApiError.notFound(`VTEP ${String(vtep["id"])} has no port named ${portName}.`);
}

/** A VLAN path segment as a number, or undefined when it names no VLAN. */
const vlanOf = (v: unknown): number | undefined => (typeof v === "string" && /^\d{1,4}$/.test(v) && Number(v) <= 4095 ? Number(v) : undefined);

/** Called when a binding was written (before its commit) or a deleted bridge took some: the VXLAN port worker looks soon. */
export const bindingsChanged = new Set<() => void>();

/** The bindings of VTEPs, their children, named by port and VLAN. */
export const vtepBindings = (svc: Pick<ServiceContext, "call">) =>
  new Resource({
    proto: "vnm.tunnel.v1.VtepBinding",
    table: "vtep_bindings",
    parentColumn: "vtep_id",
    key: {
      read: (req) => {
        const vlan = vlanOf(req["vlanId"]);
        return typeof req["portName"] === "string" && vlan !== undefined ? { port_name: req["portName"], vlan_id: vlan } : undefined;
      },
    },
    columns: (b) => ({ port_name: b.portName, vlan_id: b.vlanId, bridge_id: b.networkId }),
    render: (r: BindingRow) => ({ portName: r.port_name, vlanId: r.vlan_id, networkId: r.bridge_id, vtepId: r.vtep_id }),
    fieldColumns: { networkId: "bridge_id" },
    references: (q, b) => bridgeExists(svc, q, b.networkId),
    validate: (q, b, { up }) => portOfSwitch(q, up[0]!, b.portName),
    conflict: (b) => `Port ${b.portName} with VLAN ${b.vlanId} is already bound on this VTEP.`,
    // The bridge's VNI: its first binding on any VTEP gives it one, which it keeps. The pair's
    // VXLAN port is queued for the routing service (vxlan-sync.ts), in this transaction.
    changed: async (q, row, event) => {
      if (event === "created") await q.query("INSERT INTO bridge_vnis (bridge_id) SELECT $1 WHERE NOT EXISTS (SELECT 1 FROM bridge_vnis WHERE bridge_id = $1) ON CONFLICT DO NOTHING", [row.bridge_id]);
      await queueVxlanSync(q, row.bridge_id, row.vtep_id);
      for (const f of bindingsChanged) f();
    },
  });

/** The bridges bound on a VTEP, with their VNIs and pairs (what its device should hold, vxgw.ts). */
export async function boundOn(q: Queryable, vtepId: string): Promise<{ bridgeId: string; vni: number; pairs: { port: string; vlan: number }[] }[]> {
  const rows = (
    await q.query<{ bridge_id: string; vni: number; port_name: string; vlan_id: number }>(
      "SELECT b.bridge_id, v.vni, b.port_name, b.vlan_id FROM vtep_bindings b JOIN bridge_vnis v ON v.bridge_id = b.bridge_id WHERE b.vtep_id = $1 ORDER BY b.bridge_id, b.id",
      [vtepId],
    )
  ).rows;
  const out = new Map<string, { bridgeId: string; vni: number; pairs: { port: string; vlan: number }[] }>();
  for (const r of rows) {
    if (!out.has(r.bridge_id)) out.set(r.bridge_id, { bridgeId: r.bridge_id, vni: r.vni, pairs: [] });
    out.get(r.bridge_id)!.pairs.push({ port: r.port_name, vlan: r.vlan_id });
  }
  return [...out.values()];
}

/** 409 while the VTEP has bindings (its delete would otherwise take them, as its children). */
export async function unbound(q: Queryable, vtepId: string): Promise<void> {
  const b = (await q.query<BindingRow>("SELECT * FROM vtep_bindings WHERE vtep_id = $1 ORDER BY id LIMIT 1", [vtepId])).rows[0];
  if (b) throw ApiError.conflict(`VTEP ${vtepId} has bindings (port ${b.port_name}, VLAN ${b.vlan_id}, to bridge ${b.bridge_id}); delete them before deleting it.`);
}

/**
 * Bridges deleted: their bindings go, each announced (the devices' reconciles then remove their
 * switches), with their VNIs; each pair's VXLAN port is queued like an unbinding's (routing finds
 * the bridge gone); they stay known as gone, so a binding's POST racing this is a 404.
 */
export function onBridgesDeleted(svc: Pick<ServiceContext, "store" | "resources">) {
  return async (msgs: BusMessage[]): Promise<void> => {
    const ids = announcedIds(msgs);
    if (ids.length === 0) return;
    const bindings = svc.resources.of("vnm.tunnel.v1.VtepBinding");
    let unbound = 0;
    await svc.store.tx(undefined, async (q, emit) => {
      await deletedBridges.buryAll(q, ids);
      const gone = (await q.query<BindingRow>("DELETE FROM vtep_bindings WHERE bridge_id = ANY($1::uuid[]) RETURNING *", [ids])).rows;
      unbound = gone.length;
      for (const b of gone) {
        const vtep = (await q.query("SELECT * FROM vteps WHERE id = $1", [b.vtep_id])).rows[0];
        emit(bindings.change("deleted", b, vtep ? [vtep] : []));
        await queueVxlanSync(q, b.bridge_id, b.vtep_id);
      }
      await q.query("DELETE FROM bridge_vnis WHERE bridge_id = ANY($1::uuid[])", [ids]);
    });
    // The queued VXLAN ports and the devices' switches now, as after an unbinding through the API.
    if (unbound > 0) for (const f of bindingsChanged) f();
  };
}
