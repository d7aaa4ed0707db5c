// What is particular to load balancing beyond each kind's own endpoints: a pool created under
// its load balancer's path, a member or VIP under its pool's, the pools of a load balancer or
// monitor, the members and VIPs of a pool, and the VIPs of a load balancer's pools.
import { type CallContext, type Handlers, isRecord, type Store } from "@vnm/kit";
import { healthMonitors, loadBalancers, poolMembers, pools, vips } from "./kinds.ts";

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

    async ListPoolMembers(req: { id: string }, ctx: CallContext) {
      const pool = await pools.existing(store.pool, req.id);
      return poolMembers.listFiltered(store.pool, { pool_id: pool }, ctx);
    },

    async ListPoolVips(req: { id: string }, ctx: CallContext) {
      const pool = await pools.existing(store.pool, req.id);
      return vips.listFiltered(store.pool, { pool_id: pool }, ctx);
    },

    // A missing pool is a 404 before the body is judged; the path's pool then wins over the body's.
    async CreatePoolPoolMember(req: { poolId: string; poolMember?: unknown }, ctx: CallContext) {
      const pool = await pools.existing(store.pool, req.poolId);
      const poolMember = { ...(isRecord(req.poolMember) ? req.poolMember : {}), poolId: pool };
      return store.tx(ctx, (q, emit) => poolMembers.create(q, emit, { poolMember }));
    },

    async CreatePoolVip(req: { poolId: string; vip?: unknown }, ctx: CallContext) {
      const pool = await pools.existing(store.pool, req.poolId);
      const vip = { ...(isRecord(req.vip) ? req.vip : {}), poolId: pool };
      return store.tx(ctx, (q, emit) => vips.create(q, emit, { vip }));
    },
  };
}

export function lbHandlers(store: Store): Record<string, Handlers> {
  return {
    [pools.info.service]: poolLists(store),
    [loadBalancers.info.service]: {
      // The VIPs of all its pools.
      async ListLoadBalancerVips(req: { id: string }, ctx: CallContext) {
        const lb = await loadBalancers.existing(store.pool, req.id);
        return vips.listFiltered(store.pool, { load_balancer_id: lb }, ctx);
      },
    },
  };
}
