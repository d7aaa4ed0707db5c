// The gRPC services of vnm.lb.v1: each kind's list/get/create/replace/delete from its
// declaration, plus what is particular to load balancing: a pool's references must exist, a
// load balancer takes its pools with it, a health monitor's pools forget it, the pools of a
// load balancer or monitor, and the empty lists of the kinds only referenced (VIPs, members).
import { type CallContext, type Handlers, pathId, type Queryable, type Store, type WriteHooks } from "@vnm/kit";
import type { z } from "zod";
import { healthMonitors, loadBalancers, pools } from "./kinds.ts";

type PoolInput = typeof pools.spec.input;

/** A pool's load balancer and health monitor must exist (404 naming them), and stay until commit. */
async function poolReferences(q: Queryable, b: z.output<PoolInput>): Promise<void> {
  await loadBalancers.find(q, b.loadBalancerId, "key share");
  if (b.healthMonitorId !== undefined) await healthMonitors.find(q, b.healthMonitorId, "key share");
}

const poolHooks: WriteHooks<PoolInput> = { references: poolReferences };

/**
 * Locks the pools whose `column` is `id`, in id order: the deletes of a load balancer and of a
 * health monitor take the same pools in the same order, so they cannot deadlock each other.
 */
async function lockPools(q: Queryable, column: "load_balancer_id" | "health_monitor_id", id: string): Promise<void> {
  await q.query(`SELECT id FROM pools WHERE ${column} = $1 ORDER BY id FOR UPDATE`, [id]);
}

const empty = async (q: Queryable, parent: { existing(q: Queryable, id: unknown): Promise<string> }, id: unknown) => {
  await parent.existing(q, id);
  return { items: [] };
};

export function loadBalancerHandlers(store: Store): Handlers {
  return {
    ...loadBalancers.handlers(
      store,
      { one: "LoadBalancer", many: "LoadBalancers", body: "loadBalancer" },
      {
        // Its pools go with it, each announced.
        async cascade(q, id, emit) {
          await lockPools(q, "load_balancer_id", id);
          const gone = await q.query<{ id: string }>("DELETE FROM pools WHERE load_balancer_id = $1 RETURNING id", [id]);
          for (const p of gone.rows) emit(pools.change("deleted", p.id));
        },
      },
    ),
    ListLoadBalancerVips: (req: { id: string }) => empty(store.pool, loadBalancers, req.id),
  };
}

export function poolHandlers(store: Store): Handlers {
  return {
    ...pools.handlers(store, { one: "Pool", many: "Pools", body: "pool" }, poolHooks),

    async CreateLoadBalancerPool(req: { loadBalancerId: string; pool?: unknown }, ctx: CallContext) {
      const lb = pathId(req.loadBalancerId, loadBalancers.spec.kind);
      return store.tx(ctx, async (q, emit) => {
        // A missing load balancer is a 404 before the body is judged. The body must still
        // carry a loadBalancerId, but the path's wins.
        await loadBalancers.find(q, lb, "key share");
        return pools.create(q, emit, req.pool, poolHooks, { loadBalancerId: lb });
      });
    },

    async ListLoadBalancerPools(req: { id: string }) {
      const lb = await loadBalancers.existing(store.pool, req.id);
      return pools.list(store.pool, { column: "load_balancer_id", value: lb });
    },

    async ListHealthMonitorPools(req: { id: string }) {
      const hm = await healthMonitors.existing(store.pool, req.id);
      return pools.list(store.pool, { column: "health_monitor_id", value: hm });
    },

    ListPoolMembers: (req: { id: string }) => empty(store.pool, pools, req.id),
    ListPoolVips: (req: { id: string }) => empty(store.pool, pools, req.id),
  };
}

export function healthMonitorHandlers(store: Store): Handlers {
  return healthMonitors.handlers(
    store,
    { one: "HealthMonitor", many: "HealthMonitors", body: "healthMonitor" },
    {
      // The pools it watched stay, without a monitor; each is announced as updated.
      async cascade(q, id, emit) {
        await lockPools(q, "health_monitor_id", id);
        const cleared = await q.query<{ id: string }>(
          "UPDATE pools SET health_monitor_id = NULL WHERE health_monitor_id = $1 RETURNING id",
          [id],
        );
        for (const p of cleared.rows) emit(pools.change("updated", p.id));
      },
    },
  );
}
