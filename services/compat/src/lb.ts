// The compat load-balancing family (OpenStack LBaaS v1 style): pools, members, VIPs and health
// monitors. Each field's rules are compat.proto's (formats, lengths, ranges, allowed values);
// what no field rule can state is here, named, beside its kind: a VIP's cookie name against its
// persistence type, a monitor's delay against its timeout. References must exist in the same
// tenant (404 naming them otherwise); uniqueness is held by constraints (a member per pool,
// address and port; a VIP per pool); deletes blocked by use are 409s; a pool's members, health
// monitors and VIP, and a monitor's pools, are read as they are now, and each change to them is
// announced as a change of the pool or monitor. A PUT replaces the fields the interface marks
// POST/PUT (id, tenant_id and a monitor's type keep their value, kit's update): a member or VIP
// moved to another pool changes both pools; a monitor's `pools` replace its associations.
import { ApiError, type Change, type Checked, type Queryable, Resource, type Violation } from "@vnm/kit";

type Row = Record<string, unknown>;

/** A VIP's body as its rules (compat.proto) passed it: its tenant, as every kind's of the family, required. */
type VipBody = Checked<"vnm.compat.v1.CompatVip">;

/** A health monitor's body (CompatHealthMonitor): each of its pools names one (pool_id required). */
type HealthMonitorBody = Checked<"vnm.compat.v1.CompatHealthMonitor">;

/** A referenced item of the same tenant, locked until commit; 404 naming it otherwise. */
async function referenced(q: Queryable, table: string, display: string, id: string, tenantId: string): Promise<Row> {
  const row = (await q.query(`SELECT * FROM ${table} WHERE id = $1 FOR KEY SHARE`, [id])).rows[0];
  if (!row || row["tenant_id"] !== tenantId) throw ApiError.notFound(`There is no ${display} with ID ${id}.`);
  return row;
}

const refuse = (broken: Violation[]) => {
  if (broken.length > 0) throw ApiError.invalid(broken);
};

export const pools = new Resource({
  proto: "vnm.compat.v1.CompatPool",
  table: "pools",
  view: "pools_now",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  defaults: { admin_state_up: true },
  // A VIP keeps its pool; members and associations go with it, announced.
  async cascade(q, pool, emit) {
    const vip = (await q.query("SELECT id FROM vips WHERE pool_id = $1", [pool["id"]])).rows[0];
    if (vip) throw ApiError.conflict(`Pool ${pool["id"]} is used by VIP ${vip["id"]}; delete the VIP first.`);
    const gone = await q.query("DELETE FROM members WHERE pool_id = $1 RETURNING *", [pool["id"]]);
    for (const m of gone.rows) emit(members.change("deleted", m));
    const assoc = await q.query("DELETE FROM pool_monitors WHERE pool_id = $1 RETURNING health_monitor_id", [pool["id"]]);
    for (const a of assoc.rows) await healthMonitors.touched(q, a["health_monitor_id"], emit);
  },
});

export const members = new Resource({
  proto: "vnm.compat.v1.CompatMember",
  table: "members",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  defaults: { admin_state_up: true, weight: 1 },
  async references(q, m) {
    if (m.pool_id !== undefined) await referenced(q, "pools", "Pool", m.pool_id, m.tenant_id);
  },
  conflict: (m) => `Pool ${m.pool_id} already has a member at ${m.address}:${m.protocol_port}.`,
  changed: (q, m, _event, emit, _body, before) => poolsTouched(q, emit, m, before),
});

/** The pool of a member or VIP written, and on a move the pool it left: their derived fields changed. */
async function poolsTouched(q: Queryable, emit: (c: Change) => void, row: Row, before?: Row): Promise<void> {
  await pools.touched(q, row["pool_id"], emit);
  if (before && before["pool_id"] !== row["pool_id"]) await pools.touched(q, before["pool_id"], emit);
}

/** A VIP's session persistence: a cookie name with APP_COOKIE, and only with it. */
export function persistenceViolations(v: VipBody): Violation[] {
  const s = v.session_persistence;
  if (!s) return [];
  if (s.type === "APP_COOKIE" && s.cookie_name === undefined) return [{ property: "session_persistence", message: "cookie_name is required with APP_COOKIE" }];
  if (s.type !== "APP_COOKIE" && s.cookie_name !== undefined) return [{ property: "session_persistence", message: `cookie_name is only for APP_COOKIE, not ${s.type}` }];
  return [];
}

export const vips = new Resource({
  proto: "vnm.compat.v1.CompatVip",
  table: "vips",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  // connection_limit is an int64: a decimal string, as a gRPC peer holds it.
  defaults: { admin_state_up: true, connection_limit: "-1" },
  async references(q, v) {
    if (v.pool_id !== undefined) await referenced(q, "pools", "Pool", v.pool_id, v.tenant_id);
  },
  validate: (_q, v) => refuse(persistenceViolations(v)),
  conflict: (v) => `Pool ${v.pool_id} already has a VIP.`,
  changed: (q, v, _event, emit, _body, before) => poolsTouched(q, emit, v, before),
});

/** A health monitor's timings: it waits no longer for an answer than between two probes. */
export function timingViolations(h: HealthMonitorBody): Violation[] {
  return (h.delay ?? 0) < (h.timeout ?? 0) ? [{ property: "delay", message: "must be at least timeout" }] : [];
}

/**
 * A monitor's associations made the pools named (the first entry of a pool named twice), with
 * their status; those of other pools removed. The pools whose association came, went or changed.
 */
export async function associationsReplaced(q: Queryable, monitorId: string, named: NonNullable<HealthMonitorBody["pools"]>): Promise<string[]> {
  const wanted = new Map<string, { status: string | null; status_description: string | null }>();
  for (const p of named) if (!wanted.has(p.pool_id)) wanted.set(p.pool_id, { status: p.status ?? null, status_description: p.status_description ?? null });
  const had = (await q.query("SELECT pool_id, status, status_description FROM pool_monitors WHERE health_monitor_id = $1 ORDER BY pool_id FOR UPDATE", [monitorId])).rows;
  const touched = new Set<string>();
  const gone = had.filter((a) => !wanted.has(a["pool_id"])).map((a) => String(a["pool_id"]));
  if (gone.length > 0) await q.query("DELETE FROM pool_monitors WHERE health_monitor_id = $1 AND pool_id = ANY($2::uuid[])", [monitorId, gone]);
  for (const id of gone) touched.add(id);
  for (const [poolId, a] of wanted) {
    const before = had.find((h) => h["pool_id"] === poolId);
    if (before && before["status"] === a.status && before["status_description"] === a.status_description) continue;
    await q.query(
      `INSERT INTO pool_monitors (pool_id, health_monitor_id, status, status_description) VALUES ($1, $2, $3, $4)
       ON CONFLICT (pool_id, health_monitor_id) DO UPDATE SET status = EXCLUDED.status, status_description = EXCLUDED.status_description`,
      [poolId, monitorId, a.status, a.status_description],
    );
    touched.add(poolId);
  }
  return [...touched];
}

export const healthMonitors = new Resource({
  proto: "vnm.compat.v1.CompatHealthMonitor",
  table: "health_monitors",
  view: "health_monitors_now",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  // Its pools are associations, written after it (changed).
  columns: (h) => ({
    tenant_id: h.tenant_id,
    admin_state_up: h.admin_state_up ?? true,
    delay: h.delay ?? 0,
    max_retries: h.max_retries ?? 0,
    timeout: h.timeout ?? 0,
    type: h.type ?? null,
  }),
  async references(q, h) {
    for (const p of h.pools ?? []) await referenced(q, "pools", "Pool", p.pool_id, h.tenant_id);
  },
  validate: (_q, h) => refuse(timingViolations(h)),
  // The pools it names are associated with it: at creation added, on PUT instead of those it
  // had (each pool whose association came, went or changed announced).
  async changed(q, h, event, emit, body) {
    if (event === "deleted") return;
    const named = body?.pools ?? [];
    if (event === "created") {
      for (const p of named) {
        await q.query("INSERT INTO pool_monitors (pool_id, health_monitor_id, status, status_description) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING", [
          p.pool_id,
          h["id"],
          p.status ?? null,
          p.status_description ?? null,
        ]);
        await pools.touched(q, p.pool_id, emit);
      }
      return;
    }
    for (const poolId of await associationsReplaced(q, String(h["id"]), named)) await pools.touched(q, poolId, emit);
  },
  async cascade(q, hm) {
    const used = (await q.query("SELECT pool_id FROM pool_monitors WHERE health_monitor_id = $1 ORDER BY seq", [hm["id"]])).rows;
    if (used.length > 0) throw ApiError.conflict(`Health monitor ${hm["id"]} is associated with pool(s) ${used.map((u) => u["pool_id"]).join(", ")}; remove the associations first.`);
  },
});
