// The lb service: what it declares; main.ts runs it on its own, the launcher beside the others.
import type { ServiceSpec } from "@vnm/kit";
import { lbHandlers } from "./handlers.ts";
import { healthMonitors, loadBalancers, poolMembers, pools, vips } from "./kinds.ts";
import { migrations } from "./migrations.ts";
import { onRouterChanged } from "./routers.ts";

export const service: ServiceSpec = {
  domain: "lb",
  migrations,
  resources: [loadBalancers, pools, healthMonitors, poolMembers, vips],
  services: ({ store }) => lbHandlers(store),
  // A load balancer's routerId follows the routers that name it (the routing service's changes).
  onStart: async (svc) => {
    svc.bus.consume("lb-router-changes", ["routing.Router.*"], onRouterChanged(svc));
  },
};
