// The QoS service: QoS policies and their bandwidth-limit and DSCP-marking rules.
import type { CallContext, Handlers, ServiceSpec, Store } from "@vnm/kit";
import { migrations } from "./migrations.ts";
import { qosPolicies } from "./policies.ts";
import { bwLimitRules, dscpRules } from "./rules.ts";

type Req = Record<string, unknown>;

/** A policy's rule lists, under /qos_policies/{id} (their creates are the rule kinds' own, rules.ts). */
function policyRules(store: Store): Handlers {
  const rulesOf = (rules: typeof bwLimitRules | typeof dscpRules) => async (req: Req, ctx: CallContext) => {
    const policy = await qosPolicies.existing(store.pool, req["id"]);
    return rules.listFiltered(store.pool, { policy_id: policy }, ctx);
  };
  return {
    ListQosBwLimitRules: rulesOf(bwLimitRules),
    ListQosDscpRules: rulesOf(dscpRules),
  };
}

export const service: ServiceSpec = {
  domain: "qos",
  migrations,
  resources: [qosPolicies, bwLimitRules, dscpRules],
  services: ({ store }) => ({ [qosPolicies.info.service]: policyRules(store) }),
};
