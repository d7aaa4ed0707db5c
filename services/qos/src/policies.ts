// QoS Policy (v1): a name of 1 to 255 characters, `shared` (default false), a description
// (default empty) and the owning tenant.
import { Resource, text, uuid } from "@vnm/kit";
import { z } from "zod";

interface PolicyRow {
  id: string;
  tenant_id: string | null;
  name: string;
  shared: boolean;
  description: string;
}

export const qosPolicies = new Resource({
  proto: "vnm.qos.v1.QosPolicy",
  table: "qos_policies",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  input: z.object({
    id: uuid().optional(),
    name: text(255).refine((s) => s.length > 0, "must be between 1 and 255 characters long"),
    shared: z.boolean().optional(),
    description: text(1024).optional(),
    tenantId: text(255).optional(),
  }),
  columns: (p) => ({ tenant_id: p.tenantId ?? null, name: p.name, shared: p.shared ?? false, description: p.description ?? "" }),
  render: (r: PolicyRow) => ({ id: r.id, tenantId: r.tenant_id, name: r.name, shared: r.shared, description: r.description }),
});
