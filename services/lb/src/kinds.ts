// The three kinds of the API's load balancing: how each is stored and how it reads back. Their
// fields' rules are lb.proto's (lbMethod only ROUND_ROBIN, protocol and health monitor type only
// TCP, monitor timings non-negative 32-bit integers, ids UUIDs). Here: a pool's load balancer and
// health monitor must exist; a load balancer takes its pools with it, and the pools a deleted
// health monitor watched forget it.
import { type Queryable, Resource } from "@vnm/kit";

export const loadBalancers = new Resource({
  proto: "vnm.lb.v1.LoadBalancer",
  table: "load_balancers",
  // routerId is read-only: set from the router side, which this interface does not serve.
  defaults: { adminStateUp: true },
  // Its pools go with it, each announced.
  async cascade(q, lb, emit) {
    await lockPools(q, "load_balancer_id", lb.id);
    const gone = await q.query<PoolRow>("DELETE FROM pools WHERE load_balancer_id = $1 RETURNING *", [lb.id]);
    for (const p of gone.rows) emit(pools.change("deleted", p));
  },
});

/**
 * Locks the pools whose `column` is `id`, in id order: the deletes of a load balancer and of a
 * health monitor take the same pools in the same order, so they cannot deadlock each other.
 */
async function lockPools(q: Queryable, column: "load_balancer_id" | "health_monitor_id", id: string): Promise<void> {
  await q.query(`SELECT id FROM pools WHERE ${column} = $1 ORDER BY id FOR UPDATE`, [id]);
}

interface PoolRow {
  id: string;
  load_balancer_id: string;
  lb_method: string;
  protocol: string;
  admin_state_up: boolean;
  health_monitor_id: string | null;
  status: string;
}

export const pools = new Resource({
  proto: "vnm.lb.v1.Pool",
  table: "pools",
  // status is the service's: ACTIVE at creation (the column default), kept by PUT.
  defaults: { protocol: "TCP", adminStateUp: true },
  // Its load balancer and health monitor must exist (404 naming them), and stay until commit.
  async references(q, b) {
    await loadBalancers.find(q, b.loadBalancerId, "key share");
    if (b.healthMonitorId !== undefined) await healthMonitors.find(q, b.healthMonitorId, "key share");
  },
});

export const healthMonitors = new Resource({
  proto: "vnm.lb.v1.HealthMonitor",
  table: "health_monitors",
  defaults: { adminStateUp: true, delay: 0, maxRetries: 0, timeout: 0 },
  // The pools it watched stay, without a monitor; each is announced as updated.
  async cascade(q, hm, emit) {
    await lockPools(q, "health_monitor_id", hm.id);
    const cleared = await q.query<PoolRow>("UPDATE pools SET health_monitor_id = NULL WHERE health_monitor_id = $1 RETURNING *", [hm.id]);
    for (const p of cleared.rows) emit(pools.change("updated", p));
  },
});
