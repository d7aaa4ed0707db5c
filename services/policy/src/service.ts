// The policy service: filter chains and their rules, and mirrors; a mirror goes when the routing
// service announces its port deleted (a durable consumer: what is announced while this service
// is down is handled when it is back).
import type { ServiceSpec } from "@vnm/kit";
import { chains } from "./chains.ts";
import { migrations } from "./migrations.ts";
import { mirrorsFor, onPortDeleted } from "./mirrors.ts";
import { rules } from "./rules.ts";

export const service: ServiceSpec = {
  domain: "policy",
  migrations,
  // A mirror's port is asked of the routing service: it needs this service's context.
  resources: [chains, rules, (svc) => mirrorsFor(svc)],
  onStart: async (svc) => {
    svc.bus.consume("policy-port-deletions", ["routing.Port.deleted"], onPortDeleted(svc));
  },
};
