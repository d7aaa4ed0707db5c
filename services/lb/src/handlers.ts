// What is particular to load balancing beyond each kind's own endpoints: a pool created under
// its load balancer's path, the pools of a load balancer or monitor, and the empty lists of
// the kinds only referenced (VIPs, members).
import { type CallContext, type Handlers, mergeHandlers, type Store } from "@vnm/kit";
import { healthMonitors, loadBalancers, pools } from "./kinds.ts";

function poolLists(store: Store): Handlers {
  return {
    async CreateLoadBalancerPool(req: { loadBalancerId: string; pool?: unknown }, ctx: CallContext) {
      // A missing load balancer is a 404 before the body is judged. The body must still
      // carry a loadBalancerId, but the path's wins.
      const lb = await loadBalancers.existing(store.pool, req.loadBalancerId);
      return store.tx(ctx, (q, emit, finish) => pools.create(q, emit, req, { loadBalancerId: lb }, finish));
    },

    async ListLoadBalancerPools(req: { id: string }, ctx: CallContext) {
      const lb = await loadBalancers.existing(store.pool, req.id);
      return pools.listFiltered(store.pool, { load_balancer_id: lb }, ctx);
    },

    async ListHealthMonitorPools(req: { id: string }, ctx: CallContext) {
      const hm = await healthMonitors.existing(store.pool, req.id);
      return pools.listFiltered(store.pool, { health_monitor_id: hm }, ctx);
    },
  };
}

export function lbHandlers(store: Store): Record<string, Handlers> {
  return mergeHandlers(
    { [pools.info.service]: poolLists(store) },
    loadBalancers.referencedLists(store, "ListLoadBalancerVips"),
    pools.referencedLists(store, "ListPoolMembers", "ListPoolVips"),
  );
}
