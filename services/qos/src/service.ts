// The QoS service: QoS policies, and the (empty) lists of their rules, a kind only referenced.
import type { ServiceSpec } from "@vnm/kit";
import { migrations } from "./migrations.ts";
import { qosPolicies } from "./policies.ts";

export const service: ServiceSpec = {
  domain: "qos",
  migrations,
  resources: [qosPolicies],
  services: ({ store }) => qosPolicies.referencedLists(store, "ListQosDscpRules", "ListQosBwLimitRules"),
};
