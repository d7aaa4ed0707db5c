// The Bridge kind (interface "Bridge (v4)"). Deleting a bridge takes the kinds that live under
// it (DHCP subnets and their hosts, DHCPv6 subnets, MAC entries), each announced: the kit
// knows them from the proto paths. Its fields' rules are the proto's (bridge.proto).
import { Resource } from "@vnm/kit";

export const bridges = new Resource({
  proto: "vnm.bridge.v1.Bridge",
  table: "bridges",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  // PUT replaces: what the body leaves out returns to its default. vxlanPortIds is read-only.
  defaults: { adminStateUp: true, inboundMirrorIds: [], outboundMirrorIds: [] },
});
