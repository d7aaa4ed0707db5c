// A bridge's VXLAN ports (vtep-bindings.md): one port of type Vxlan per (bridge, VTEP) the
// bridge is bound to, a row of the ports table like any port (GET /ports/{id}, GET /ports), but
// not one of the bridge's own ports (/bridges/{id}/ports lists Bridge ports) and not deletable
// (ports.ts: 409). Only the tunnel service, which keeps the bindings, makes and removes them:
// SyncVxlanPort, idempotent, keyed by (bridge, VTEP), with an id derived from the pair, so the
// tunnel's outbox of pending pairs can ask again after any failure. Under the per-bridge lock,
// the bridge service is told the bridge's VXLAN ports (SetBridgeVxlanPorts) before the change
// commits: its vxlanPortIds follow, and its delete is a 409 while it has any.
import { ApiError, type CallContext, type Handlers, isUuid, maySee, type ServiceContext, vxlanPortId } from "@vnm/kit";
import { commonColumns, dropPorts, deletedBridges, getBridge, insertPort, noBridge, type PortRow, ports } from "./ports.ts";

export function vxlanPortHandlers(svc: ServiceContext): Record<string, Handlers> {
  const { store } = svc;
  return {
    "vnm.routing.v1.VxlanPortService": {
      ListBridgeVxlanPorts: async (req: Record<string, unknown>, ctx: CallContext) => {
        const b = await getBridge(svc, req["bridgeId"]);
        if (!maySee(ctx?.identity, typeof b["tenantId"] === "string" ? b["tenantId"] : null)) throw noBridge(req["bridgeId"]);
        return ports.listFiltered(store.pool, { device_id: b["id"], type: "Vxlan" }, ctx);
      },
      SyncVxlanPort: (req: { bridgeId?: unknown; vtepId?: unknown; bound?: unknown }, ctx: CallContext) => {
        const { bridgeId, vtepId } = req;
        if (!isUuid(bridgeId) || !isUuid(vtepId)) throw ApiError.badRequest("bridgeId and vtepId must be UUIDs");
        const bridge = bridgeId.toLowerCase();
        const vtep = vtepId.toLowerCase();
        const id = vxlanPortId(bridge, vtep);
        return store.tx(ctx, async (q, emit) => {
          const gone = await deletedBridges.lockedGone(q, bridge);
          let tenant: string | null = null;
          let exists = !gone;
          if (exists) {
            try {
              const b = await getBridge(svc, bridge);
              tenant = typeof b["tenantId"] === "string" ? b["tenantId"] : null;
            } catch (err) {
              if (ApiError.from(err).code !== noBridge(bridge).code) throw err;
              exists = false;
            }
          }
          const current = (await q.query<PortRow>("SELECT * FROM ports WHERE id = $1 FOR UPDATE", [id])).rows[0];
          const want = req.bound === true && exists;
          if (want && !current) {
            const row = await insertPort(q, { ...commonColumns({}), id, type: "Vxlan", device_id: bridge, tenant_id: tenant, vlan_id: null, vtep_id: vtep });
            emit(ports.change("created", row));
          } else if (!want && current) {
            await dropPorts(q, [current], emit);
          }
          // A bridge that is gone has no vxlanPortIds to keep (its deletion took its ports).
          if (exists) {
            const all = (await q.query<{ id: string }>("SELECT id FROM ports WHERE device_id = $1 AND type = 'Vxlan' ORDER BY seq", [bridge])).rows.map((r) => r.id);
            await svc.call("vnm.bridge.v1.BridgeService", "SetBridgeVxlanPorts", { id: bridge, portIds: all });
          }
          return { portId: want ? id : "" };
        });
      },
    },
  };
}
