// QoS Policy (v1): a name of 1 to 255 characters, `shared` (default false), a description
// (default empty) and the owning tenant.
import { Resource, text, uuid } from "@vnm/kit";
import { z } from "zod";

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
  defaults: { shared: false, description: "" },
});
