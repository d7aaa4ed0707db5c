// QoS Policy (v1): a name of 1 to 255 characters, `shared` (default false), a description
// (default empty) and the owning tenant. The fields' rules are qos.proto's. Its rules go with it.
import { Resource } from "@vnm/kit";
import { dropRulesOf, touchRulesOf } from "./rules.ts";

interface PolicyRow {
  id: string;
  tenant_id: string | null;
}

export const qosPolicies = new Resource({
  proto: "vnm.qos.v1.QosPolicy",
  table: "qos_policies",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  defaults: { shared: false, description: "" },
  // Its rules go first, each announced.
  cascade: (q, p: PolicyRow, emit) => dropRulesOf(q, p.id, emit),
  // Given to another tenant, its rules follow: announced as updated (their tenant changed).
  async changed(q, p: PolicyRow, event, emit, _body, before) {
    if (event === "updated" && before && before.tenant_id !== p.tenant_id) await touchRulesOf(q, p.id, emit);
  },
});
