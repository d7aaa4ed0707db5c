// The Bridge kind (interface "Bridge (v4)"). Deleting a bridge takes the kinds that live under
// it (DHCP subnets and their hosts, DHCPv6 subnets, MAC entries), each announced: the kit
// knows them from the proto paths.
import { Resource, text, uuid } from "@vnm/kit";
import { z } from "zod";

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
  defaults: { adminStateUp: true, inboundMirrorIds: [], outboundMirrorIds: [] },
});
