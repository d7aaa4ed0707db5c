// The QoS service: QoS policies and their bandwidth-limit and DSCP-marking rules.
import type { CallContext, Handlers, ServiceSpec, Store } from "@vnm/kit";
import { migrations } from "./migrations.ts";
import { qosPolicies } from "./policies.ts";
import { bwLimitRules, dscpRules, POLICY_OF_PATH } from "./rules.ts";

type Req = Record<string, unknown>;

/** A policy's rule lists and the creation of its rules, under /qos_policies/{id}. */
function policyRules(store: Store): Handlers {
  const rulesOf = (rules: typeof bwLimitRules | typeof dscpRules) => async (req: Req, ctx: CallContext) => {
    const policy = await qosPolicies.existing(store.pool, req["id"]);
    return rules.listFiltered(store.pool, { policy_id: policy }, ctx);
  };
  // A missing policy is a 404 before the body is judged; the policy stays until the rule is written.
  const create = (rules: typeof bwLimitRules | typeof dscpRules) => (req: Req, ctx: CallContext) =>
    store.tx(ctx, async (q, emit) => {
      const policy = await qosPolicies.find(q, String(req["id"]), "key share");
      return rules.create(q, emit, { ...req, [POLICY_OF_PATH]: policy.id });
    });
  return {
    ListQosBwLimitRules: rulesOf(bwLimitRules),
    ListQosDscpRules: rulesOf(dscpRules),
    CreateQosBwLimitRule: create(bwLimitRules),
    CreateQosDscpRule: create(dscpRules),
  };
}

export const service: ServiceSpec = {
  domain: "qos",
  migrations,
  resources: [qosPolicies, bwLimitRules, dscpRules],
  services: ({ store }) => ({ [qosPolicies.info.service]: policyRules(store) }),
};
