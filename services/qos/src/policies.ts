// QoS Policy (v1): a name of 1 to 255 characters, `shared` (default false), a description
// (default empty) and the owning tenant. The fields' rules are qos.proto's. Its rules go with it,
// and its `rules` (never shown) make them, as the original's do.
import { Resource } from "@vnm/kit";
import { dropRulesOf, setRulesOf, touchRulesOf } from "./rules.ts";

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
  // `rules` is no column: the rules it names are written after the policy (changed).
  columns: (p) => ({ name: p.name, shared: p.shared ?? false, description: p.description ?? "", tenant_id: p.tenantId ?? null }),
  // Its rules go first, each announced.
  cascade: (q, p: PolicyRow, emit) => dropRulesOf(q, p.id, emit),
  // The rules its `rules` names; given to another tenant, its rules follow: announced as updated
  // (their tenant changed).
  async changed(q, p: PolicyRow, event, emit, body, before) {
    if (event !== "deleted" && body?.rules !== undefined) await setRulesOf(q, p.id, body.rules, emit, event === "created");
    if (event === "updated" && before && before.tenant_id !== p.tenant_id) await touchRulesOf(q, p.id, emit);
  },
});
