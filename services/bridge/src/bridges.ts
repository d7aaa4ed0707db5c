// The Bridge kind (interface "Bridge (v4)"). Deleting a bridge takes the kinds that live under
// it (DHCP subnets and their hosts, DHCPv6 subnets, MAC entries), each announced: the kit
// knows them from the proto paths.
import { Resource, text, uuid } from "@vnm/kit";
import { z } from "zod";

interface BridgeRow {
  id: string;
  tenant_id: string | null;
  name: string | null;
  admin_state_up: boolean;
  inbound_filter_id: string | null;
  outbound_filter_id: string | null;
  inbound_mirror_ids: string[];
  outbound_mirror_ids: string[];
  vxlan_port_ids: string[];
}

const mirrors = () => z.array(uuid()).max(64, "must hold at most 64 ids").optional();

export const bridges = new Resource({
  proto: "vnm.bridge.v1.Bridge",
  table: "bridges",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  input: z.object({
    id: uuid().optional(),
    tenantId: text(255).optional(),
    name: text(255).optional(),
    adminStateUp: z.boolean().optional(),
    inboundFilterId: uuid().optional(),
    outboundFilterId: uuid().optional(),
    inboundMirrorIds: mirrors(),
    outboundMirrorIds: mirrors(),
  }),
  // PUT replaces: what the body leaves out returns to its default. vxlanPortIds is read-only.
  columns: (b) => ({
    tenant_id: b.tenantId ?? null,
    name: b.name ?? null,
    admin_state_up: b.adminStateUp ?? true,
    inbound_filter_id: b.inboundFilterId ?? null,
    outbound_filter_id: b.outboundFilterId ?? null,
    inbound_mirror_ids: b.inboundMirrorIds ?? [],
    outbound_mirror_ids: b.outboundMirrorIds ?? [],
  }),
  render: (r: BridgeRow) => ({
    id: r.id,
    tenantId: r.tenant_id,
    name: r.name,
    adminStateUp: r.admin_state_up,
    inboundFilterId: r.inbound_filter_id,
    outboundFilterId: r.outbound_filter_id,
    inboundMirrorIds: r.inbound_mirror_ids,
    outboundMirrorIds: r.outbound_mirror_ids,
    vxlanPortIds: r.vxlan_port_ids,
  }),
});
