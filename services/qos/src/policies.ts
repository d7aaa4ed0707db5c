// QoS Policy (v1): a name of 1 to 255 characters, `shared` (default false), a description
// (default empty) and the owning tenant. The fields' rules are qos.proto's.
import { Resource } from "@vnm/kit";

export const qosPolicies = new Resource({
  proto: "vnm.qos.v1.QosPolicy",
  table: "qos_policies",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  defaults: { shared: false, description: "" },
});
