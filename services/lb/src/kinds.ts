// The five kinds of the API's load balancing: how each is stored and how it reads back. Their
// fields' rules are lb.proto's (lbMethod only ROUND_ROBIN, protocol and health monitor type only
// TCP, monitor timings non-negative 32-bit integers, ids UUIDs, addresses IPv4, ports 0..65535,
// a member's weight >= 1). Here: a pool's load balancer and health monitor must exist, and so
// must a member's or a VIP's pool; a load balancer takes its pools with it, a pool its members
// and VIPs, and the pools a deleted health monitor watched forget it.
import { ApiError, type Change, type Queryable, Resource } from "@vnm/kit";

type Emit = (c: Change) => void;

export const loadBalancers = new Resource({
  proto: "vnm.lb.v1.LoadBalancer",
  table: "load_balancers",
  // routerId is read-only: the router whose loadBalancerId names it (routers.ts follows them).
  defaults: { adminStateUp: true },
  // Its pools go with it, each announced.
  async cascade(q, lb, emit) {
    const locked = await lockPools(q, "load_balancer_id", lb.id);
    await dropPoolChildren(q, locked, emit);
    const gone = await q.query<PoolRow>("DELETE FROM pools WHERE load_balancer_id = $1 RETURNING *", [lb.id]);
    for (const p of gone.rows) emit(pools.change("deleted", p));
  },
});

/**
 * Locks the pools whose `column` is `id`, in id order: the deletes of a load balancer and of a
 * health monitor take the same pools in the same order, so they cannot deadlock each other.
 */
async function lockPools(q: Queryable, column: "load_balancer_id" | "health_monitor_id", id: string): Promise<string[]> {
  return (await q.query<{ id: string }>(`SELECT id FROM pools WHERE ${column} = $1 ORDER BY id FOR UPDATE`, [id])).rows.map((r) => r.id);
}

/** Deletes the members and VIPs of pools (locked by the caller), each announced. */
async function dropPoolChildren(q: Queryable, poolIds: string[], emit: Emit): Promise<void> {
  if (poolIds.length === 0) return;
  await q.query("SELECT id FROM pool_members WHERE pool_id = ANY($1) ORDER BY id FOR UPDATE", [poolIds]);
  const members = await q.query<MemberRow>("DELETE FROM pool_members WHERE pool_id = ANY($1) RETURNING *", [poolIds]);
  for (const m of members.rows) emit(poolMembers.change("deleted", m));
  await q.query("SELECT id FROM vips WHERE pool_id = ANY($1) ORDER BY id FOR UPDATE", [poolIds]);
  const gone = await q.query<VipRow>("DELETE FROM vips WHERE pool_id = ANY($1) RETURNING *", [poolIds]);
  for (const v of gone.rows) emit(vips.change("deleted", v));
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
  // Its members and VIPs go first, each announced.
  cascade: (q, p: PoolRow, emit) => dropPoolChildren(q, [p.id], emit),
  // Moved to another load balancer, its VIPs follow: announced as updated (their loadBalancerId changed).
  async changed(q, p: PoolRow, event, emit, _body, before) {
    if (event !== "updated" || !before || before.load_balancer_id === p.load_balancer_id) return;
    const moved = await q.query<VipRow>("SELECT * FROM vips_now WHERE pool_id = $1 ORDER BY seq", [p.id]);
    for (const v of moved.rows) emit(vips.change("updated", v));
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

interface MemberRow {
  id: string;
  pool_id: string;
}

interface VipRow {
  id: string;
  pool_id: string;
}

/**
 * The pool a member or VIP names: required (but under its pool's path, whose handler sets it),
 * so a 400 when absent.
 */
function poolOf(body: { poolId?: string }): string {
  if (body.poolId === undefined) throw ApiError.invalid([{ property: "poolId", message: "may not be null" }]);
  return body.poolId;
}

/** A create's request (a PUT's names the item by `id`). */
const creating = (req: Record<string, unknown>) => req["id"] === undefined;

export const poolMembers = new Resource({
  proto: "vnm.lb.v1.PoolMember",
  table: "pool_members",
  // adminStateUp is true at creation whatever is sent; address and protocolPort are set at
  // creation and kept by a PUT (the values it sends were still checked); status is the
  // service's (ACTIVE, the column default).
  columns: (m, req) => ({
    pool_id: m.poolId,
    weight: m.weight ?? 1,
    ...(creating(req) ? { admin_state_up: true, address: m.address, protocol_port: m.protocolPort ?? 0 } : { admin_state_up: m.adminStateUp ?? true }),
  }),
  // Its pool must exist (404 naming it), and stays until commit; a PUT may move it.
  async references(q, m) {
    await pools.find(q, poolOf(m), "key share");
  },
});

export const vips = new Resource({
  proto: "vnm.lb.v1.Vip",
  table: "vips",
  view: "vips_now",
  columns: (v) => ({
    pool_id: v.poolId,
    address: v.address,
    protocol_port: v.protocolPort ?? 0,
    session_persistence: v.sessionPersistence ?? null,
    admin_state_up: v.adminStateUp ?? true,
  }),
  // Its pool must exist, and stays until commit: an unknown one is a 400 naming it, as the
  // original answers (it turns the pool's not-found into a bad request).
  async references(q, v) {
    const found = await q.query("SELECT id FROM pools WHERE id = $1 FOR KEY SHARE", [poolOf(v)]);
    if (found.rowCount === 0) {
      const message = `There is no Pool with ID ${v.poolId}.`;
      throw ApiError.invalid([{ property: "poolId", message }], message);
    }
  },
});
