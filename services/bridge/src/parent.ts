// The Bridge kind (interface "Bridge (v4)"), and the bridge a child resource lives under.
import { Resource, type Queryable, text, uuid } from "@vnm/kit";
import { z } from "zod";

export interface BridgeRow {
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
  kind: "Bridge",
  table: "bridges",
  path: "/bridges",
  tenantColumn: "tenant_id",
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
  message: (r: BridgeRow) => ({
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

export interface ParentBridge {
  id: string;
  tenantId: string | null;
}

/**
 * Reads the bridge (404 when missing). In a transaction, "key share" keeps the bridge from
 * being deleted until the caller commits.
 */
export async function requireBridge(q: Queryable, id: string, lock?: "key share"): Promise<ParentBridge> {
  const row = await bridges.find(q, id, lock);
  return { id, tenantId: row.tenant_id };
}
