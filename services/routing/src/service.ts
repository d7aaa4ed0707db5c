// The routing service: routes on routers, and L2 insertions; ports bound to hosts (bindings.ts),
// their bindings cleared when the tunnel service announces a host deleted (a durable consumer).
import type { ServiceSpec } from "@vnm/kit";
import { bindingHandlers, onHostDeleted } from "./bindings.ts";
import { ipAddrGroupAddrs, ipAddrGroups } from "./ip-addr-groups.ts";
import { l2Insertions } from "./l2-insertions.ts";
import { migrations } from "./migrations.ts";
import { routes } from "./routes.ts";

export const service: ServiceSpec = {
  domain: "routing",
  migrations,
  resources: [routes, l2Insertions, ipAddrGroups, ipAddrGroupAddrs],
  services: (svc) => bindingHandlers(svc),
  onStart: async (svc) => {
    svc.bus.consume("routing-host-deletions", ["tunnel.Host.deleted"], onHostDeleted(svc));
  },
};
