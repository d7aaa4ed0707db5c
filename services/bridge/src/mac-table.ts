// The MAC table of a bridge (MAC-Port v2), per VLAN, and the empty lists of the kinds a bridge
// links to but this interface only references (ports, peer ports, VXLAN ports, ARP table).
import { ApiError, type CallContext, type Handlers, isUuid, mac, parseInput, parseMac, pathId, type Store, uuid } from "@vnm/kit";
import { z } from "zod";
import { entryPath, type MacEntry, macPortChange } from "./locations.ts";
import { requireBridge } from "./parent.ts";

const entryInput = z.object({ macAddr: mac(), portId: uuid() });


/** <mac with '-' (or ':')>_<portId>, as the conventions write a MAC-port pair in a path. */
export function parsePair(segment: string): { mac: string; portId: string } | undefined {
  const i = segment.indexOf("_");
  if (i < 0) return undefined;
  const m = parseMac(segment.slice(0, i));
  const port = segment.slice(i + 1);
  return m && isUuid(port) ? { mac: m, portId: port.toLowerCase() } : undefined;
}


function entryMessage(bridgeId: string, r: MacEntry): Record<string, unknown> {
  return { macAddr: r.mac, portId: r.port_id, vlanId: r.vlan_id, selfPath: entryPath(bridgeId, r) };
}

/** A VLAN path segment: [0, 4095], else the path names nothing. */
function vlanOf(req: { vlanId?: number }, bridgeId: string): number {
  const v = req.vlanId ?? 0;
  if (!Number.isInteger(v) || v < 0 || v > 4095) throw ApiError.notFound(`Bridge ${bridgeId} has no VLAN ${v}.`);
  return v;
}

export function macTableHandlers(store: Store): Handlers {
  const bridgeOf = (req: { bridgeId: string }) => pathId(req.bridgeId, "Bridge");
  const missing = (bridgeId: string, segment: string) =>
    ApiError.notFound(`Bridge ${bridgeId} has no MAC table entry ${segment}.`);

  return {
    async ListMacPorts(req: { bridgeId: string; vlanId?: number }) {
      const b = bridgeOf(req);
      await requireBridge(store.pool, b);
      const r =
        req.vlanId === undefined
          ? await store.query<MacEntry>("SELECT vlan_id, mac, port_id FROM mac_ports WHERE bridge_id = $1 ORDER BY vlan_id, id", [b])
          : await store.query<MacEntry>("SELECT vlan_id, mac, port_id FROM mac_ports WHERE bridge_id = $1 AND vlan_id = $2 ORDER BY id", [
              b,
              vlanOf(req, b),
            ]);
      return { items: r.rows.map((e) => entryMessage(b, e)) };
    },

    async GetMacPort(req: { bridgeId: string; vlanId?: number; macPortPair: string }) {
      const b = bridgeOf(req);
      await requireBridge(store.pool, b);
      const vlan = vlanOf(req, b);
      const pair = parsePair(req.macPortPair);
      const r = pair
        ? await store.query<MacEntry>(
            "SELECT vlan_id, mac, port_id FROM mac_ports WHERE bridge_id = $1 AND vlan_id = $2 AND mac = $3 AND port_id = $4",
            [b, vlan, pair.mac, pair.portId],
          )
        : undefined;
      if (!r?.rows[0]) throw missing(b, req.macPortPair);
      return entryMessage(b, r.rows[0]);
    },

    async CreateMacPort(req: { bridgeId: string; vlanId?: number; entry?: unknown }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const vlan = vlanOf(req, b);
        const e = parseInput(entryInput, req.entry ?? {});
        const r = await q.query<MacEntry>(
          `INSERT INTO mac_ports (bridge_id, vlan_id, mac, port_id) VALUES ($1, $2, $3, $4)
           ON CONFLICT (bridge_id, vlan_id, mac, port_id) DO NOTHING RETURNING vlan_id, mac, port_id`,
          [b, vlan, e.macAddr, e.portId],
        );
        const row = r.rows[0];
        if (!row) {
          throw ApiError.conflict(`The MAC table of bridge ${b} already maps ${e.macAddr} to port ${e.portId} on VLAN ${vlan}.`);
        }
        emit(macPortChange("created", bridge, row));
        return entryMessage(b, row);
      });
    },

    async DeleteMacPort(req: { bridgeId: string; vlanId?: number; macPortPair: string }, ctx: CallContext) {
      const b = bridgeOf(req);
      return store.tx(ctx, async (q, emit) => {
        const bridge = await requireBridge(q, b, "key share");
        const vlan = vlanOf(req, b);
        const pair = parsePair(req.macPortPair);
        const r = pair
          ? await q.query<MacEntry>(
              "DELETE FROM mac_ports WHERE bridge_id = $1 AND vlan_id = $2 AND mac = $3 AND port_id = $4 RETURNING vlan_id, mac, port_id",
              [b, vlan, pair.mac, pair.portId],
            )
          : undefined;
        const row = r?.rows[0];
        if (!row) throw missing(b, req.macPortPair);
        emit(macPortChange("deleted", bridge, row));
        return {};
      });
    },

    async ListBridgePorts(req: { bridgeId: string }) {
      await requireBridge(store.pool, bridgeOf(req));
      return { items: [] };
    },

    async ListArpTable(req: { bridgeId: string }) {
      await requireBridge(store.pool, bridgeOf(req));
      return { items: [] };
    },
  };
}
