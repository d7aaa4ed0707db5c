// Bridge (v4) handlers: list (optionally by tenant), get, create, replace, delete, from the
// kit's Resource; deleting a bridge takes its DHCP subnets and hosts, DHCPv6 subnets and MAC
// entries with it, each announced.
import type { Handlers, Store } from "@vnm/kit";
import { hostChange, type MacEntry, macPortChange, type Net, subnet6Change, subnetChange } from "./locations.ts";
import { type BridgeRow, bridges } from "./parent.ts";

export function bridgeHandlers(store: Store): Handlers {
  return bridges.handlers(
    store,
    { one: "Bridge", many: "Bridges", body: "bridge" },
    {
      // The bridge row is locked: a child created concurrently waits, then finds no bridge.
      // Children go first, each announced (the foreign keys would cascade silently).
      async cascade(q, id, emit, row) {
        const bridge = { id, tenantId: (row as BridgeRow).tenant_id };
        const hosts = await q.query<Net & { mac: string }>(
          `DELETE FROM dhcp_hosts h USING dhcp_subnets s WHERE h.subnet_id = s.id AND s.bridge_id = $1
           RETURNING h.mac, s.prefix, s.length`,
          [id],
        );
        for (const h of hosts.rows) emit(hostChange("deleted", bridge, h, h.mac));
        const subnets = await q.query<Net>("DELETE FROM dhcp_subnets WHERE bridge_id = $1 RETURNING prefix, length", [id]);
        for (const s of subnets.rows) emit(subnetChange("deleted", bridge, s));
        const subnets6 = await q.query<Net>("DELETE FROM dhcp6_subnets WHERE bridge_id = $1 RETURNING prefix, length", [id]);
        for (const s of subnets6.rows) emit(subnet6Change("deleted", bridge, s));
        const entries = await q.query<MacEntry>("DELETE FROM mac_ports WHERE bridge_id = $1 RETURNING vlan_id, mac, port_id", [id]);
        for (const e of entries.rows) emit(macPortChange("deleted", bridge, e));
      },
    },
    { field: "tenant_id", column: "tenant_id" },
  );
}
