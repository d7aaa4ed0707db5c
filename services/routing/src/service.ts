// The routing service: routes on routers, and L2 insertions; ports bound to hosts (bindings.ts),
// their bindings cleared when the tunnel service announces a host deleted (a durable consumer).
import { mergeHandlers, type ServiceSpec } from "@vnm/kit";
import { bindingHandlers, onHostDeleted } from "./bindings.ts";
import { ipAddrGroupAddrs, ipAddrGroups } from "./ip-addr-groups.ts";
import { l2Insertions } from "./l2-insertions.ts";
import { migrations } from "./migrations.ts";
import { portGroupHandlers, portGroupPorts, portGroups } from "./port-groups.ts";
import { onBridgeMoved, onBridgesDeleted, portHandlers, ports, portsFor } from "./ports.ts";
import { onLoadBalancerDeleted, policyRefs, routers, routersFor } from "./routers.ts";
import { routes } from "./routes.ts";
import { vxlanPortHandlers } from "./vxlan-ports.ts";

export const service: ServiceSpec = {
  domain: "routing",
  migrations,
  // Routers check their load balancer with the lb service, routers and ports their filters and
  // mirrors with the policy service: they need this service's calls.
  resources: [(svc) => routersFor(svc), (svc) => portsFor(svc), routes, l2Insertions, ipAddrGroups, ipAddrGroupAddrs, portGroups, portGroupPorts],
  services: (svc) => mergeHandlers(bindingHandlers(svc), portHandlers(svc), portGroupHandlers(svc), vxlanPortHandlers(svc)),
  onStart: async (svc) => {
    svc.bus.consume("routing-host-deletions", ["tunnel.Host.deleted"], onHostDeleted(svc));
    // A bridge's ports go with it, and follow it to another tenant.
    svc.bus.consumeBatches("routing-bridge-deletions", ["bridge.Bridge.deleted"], onBridgesDeleted(svc));
    svc.bus.consume("routing-bridge-tenants", ["bridge.Bridge.updated.tenant"], onBridgeMoved(svc));
    // A deleted load balancer is cleared from its routers.
    svc.bus.consume("routing-lb-deletions", ["lb.LoadBalancer.deleted"], onLoadBalancerDeleted(svc));
    // A deleted chain is cleared from routers' and ports' filters, a deleted mirror from their mirror lists.
    const referrers = [
      { table: "routers", mirrors: true, resource: routers },
      { table: "ports", mirrors: true, resource: ports },
    ];
    svc.bus.consume("routing-chain-deletions", ["policy.Chain.deleted"], policyRefs.onChainDeleted(svc, referrers));
    svc.bus.consume("routing-mirror-deletions", ["policy.Mirror.deleted"], policyRefs.onMirrorDeleted(svc, referrers));
  },
};
