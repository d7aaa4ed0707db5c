// Where a bridge's children live (their paths below the API root) and how their changes are
// announced: one place for the handlers and for the bridge's cascade.
import type { Change, ChangeEvent } from "@vnm/kit";
import type { ParentBridge } from "./parent.ts";

export interface Net {
  prefix: string;
  length: number;
}

export interface MacEntry {
  vlan_id: number;
  mac: string;
  port_id: string;
}

/** A subnet's path segment: <address>_<length>. */
export const subnetAddr = (s: Net) => `${s.prefix}_${s.length}`;

/** A MAC entry's path: /bridges/<b>/mac_table/<pair> on VLAN 0, else under /vlans/<v>. */
export function entryPath(bridgeId: string, r: MacEntry): string {
  const pair = `${r.mac.replace(/:/g, "-")}_${r.port_id}`;
  return r.vlan_id === 0 ? `/bridges/${bridgeId}/mac_table/${pair}` : `/bridges/${bridgeId}/vlans/${r.vlan_id}/mac_table/${pair}`;
}

export const subnetChange = (event: ChangeEvent, b: ParentBridge, s: Net): Change => ({
  kind: "DhcpSubnet",
  event,
  id: subnetAddr(s),
  path: `/bridges/${b.id}/dhcp/${subnetAddr(s)}`,
  tenantId: b.tenantId,
});

export const hostChange = (event: ChangeEvent, b: ParentBridge, s: Net, mac: string): Change => ({
  kind: "DhcpHost",
  event,
  id: mac,
  path: `/bridges/${b.id}/dhcp/${subnetAddr(s)}/hosts/${mac}`,
  tenantId: b.tenantId,
});

export const subnet6Change = (event: ChangeEvent, b: ParentBridge, s: Net): Change => ({
  kind: "DhcpV6Subnet",
  event,
  id: subnetAddr(s),
  path: `/bridges/${b.id}/dhcpV6/${subnetAddr(s)}`,
  tenantId: b.tenantId,
});

export function macPortChange(event: ChangeEvent, b: ParentBridge, r: MacEntry): Change {
  const path = entryPath(b.id, r);
  return { kind: "MacPort", event, id: path.slice(path.lastIndexOf("/") + 1), path, tenantId: b.tenantId };
}
