// Bridge (v4) handlers: list (optionally by tenant), get, create, replace, delete, from the
// kit's Resource; deleting a bridge takes its DHCP subnets and hosts, DHCPv6 subnets and MAC
// entries with it, each announced.
import type { Handlers, Store } from "@vnm/kit";
import { entryPath } from "./mac-table.ts";
import { type BridgeRow, bridges } from "./parent.ts";

export function bridgeHandlers(store: Store): Handlers {
  return bridges.handlers(
    store,
    { one: "Bridge", many: "Bridges", body: "bridge" },
    {
      // The bridge row is locked: a child created concurrently waits, then finds no bridge.
      // Children go first, each announced (the foreign keys would cascade silently).
      async cascade(q, id, emit, row) {
        const tenantId = (row as BridgeRow).tenant_id;
        const hosts = await q.query<{ mac: string; prefix: string; length: number }>(
          `DELETE FROM dhcp_hosts h USING dhcp_subnets s WHERE h.subnet_id = s.id AND s.bridge_id = $1
           RETURNING h.mac, s.prefix, s.length`,
          [id],
        );
        for (const h of hosts.rows) {
          const path = `/bridges/${id}/dhcp/${h.prefix}_${h.length}/hosts/${h.mac}`;
          emit({ kind: "DhcpHost", event: "deleted", id: h.mac, path, tenantId });
        }
        const subnets = await q.query<{ prefix: string; length: number }>(
          "DELETE FROM dhcp_subnets WHERE bridge_id = $1 RETURNING prefix, length",
          [id],
        );
        for (const s of subnets.rows) {
          const a = `${s.prefix}_${s.length}`;
          emit({ kind: "DhcpSubnet", event: "deleted", id: a, path: `/bridges/${id}/dhcp/${a}`, tenantId });
        }
        const subnets6 = await q.query<{ prefix: string; length: number }>(
          "DELETE FROM dhcp6_subnets WHERE bridge_id = $1 RETURNING prefix, length",
          [id],
        );
        for (const s of subnets6.rows) {
          const a = `${s.prefix}_${s.length}`;
          emit({ kind: "DhcpV6Subnet", event: "deleted", id: a, path: `/bridges/${id}/dhcpV6/${a}`, tenantId });
        }
        const entries = await q.query<{ vlan_id: number; mac: string; port_id: string }>(
          "DELETE FROM mac_ports WHERE bridge_id = $1 RETURNING vlan_id, mac, port_id",
          [id],
        );
        for (const e of entries.rows) {
          const path = entryPath(id, e);
          emit({ kind: "MacPort", event: "deleted", id: path.slice(path.lastIndexOf("/") + 1), path, tenantId });
        }
      },
    },
    { field: "tenant_id", column: "tenant_id" },
  );
}
