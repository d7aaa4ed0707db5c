// The compat load-balancing family (OpenStack LBaaS v1 style): pools, members, VIPs and health
// monitors. References must exist in the same tenant (404 naming them otherwise); uniqueness is
// held by constraints (a member per pool, address and port; a VIP per pool); deletes blocked by
// use are 409s; a pool's members, health monitors and VIP, and a monitor's pools, are read as
// they are now, and each change to them is announced as a change of the pool or monitor.
import { ApiError, int, ipv4, type Queryable, Resource, text, uuid } from "@vnm/kit";
import { z } from "zod";

type Row = Record<string, unknown>;

const onlyValue = (value: string) => z.string().refine((s) => s === value, `must be ${value}, the only supported value`);
const status = () => z.enum(["ACTIVE", "INACTIVE"], { error: "must be ACTIVE or INACTIVE" }).optional();
const tenant = () => text(255).refine((s) => s.length > 0, "must not be empty");

/** A referenced item of the same tenant, locked until commit; 404 naming it otherwise. */
async function referenced(q: Queryable, table: string, display: string, id: string, tenantId: string): Promise<Row> {
  const row = (await q.query(`SELECT * FROM ${table} WHERE id = $1 FOR KEY SHARE`, [id])).rows[0];
  if (!row || row["tenant_id"] !== tenantId) throw ApiError.notFound(`There is no ${display} with ID ${id}.`);
  return row;
}

export const pools: Resource<z.ZodType, Row> = new Resource({
  proto: "vnm.compat.v1.CompatPool",
  table: "pools",
  view: "pools_now",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  input: z.object({
    id: uuid().optional(),
    tenant_id: tenant(),
    admin_state_up: z.boolean().optional(),
    description: text(1024).optional(),
    lb_method: onlyValue("ROUND_ROBIN").optional(),
    name: text(255).optional(),
    protocol: onlyValue("TCP").optional(),
    provider: text(255).optional(),
    router_id: uuid().optional(),
    status: status(),
    status_description: text(1024).optional(),
    subnet_id: uuid().optional(),
  }),
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


export const members: Resource<z.ZodType, Row> = new Resource({
  proto: "vnm.compat.v1.CompatMember",
  table: "members",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  input: z.object({
    id: uuid().optional(),
    tenant_id: tenant(),
    address: ipv4().optional(),
    admin_state_up: z.boolean().optional(),
    pool_id: uuid().optional(),
    protocol_port: int(0, 65535).optional(),
    status: status(),
    status_description: text(1024).optional(),
    weight: int(0, 256).optional(),
  }),
  defaults: { admin_state_up: true, weight: 1 },
  async references(q, m) {
    if (m.pool_id !== undefined) await referenced(q, "pools", "Pool", m.pool_id, m.tenant_id);
  },
  conflict: (m) => `Pool ${m.pool_id} already has a member at ${m.address}:${m.protocol_port}.`,
  changed: (q, m, _event, emit) => pools.touched(q, m["pool_id"], emit),
});

const PERSISTENCE = ["APP_COOKIE", "HTTP_COOKIE", "SOURCE_IP"] as const;

const vipInput = z
  .object({
    id: uuid().optional(),
    tenant_id: tenant(),
    address: ipv4().optional(),
    admin_state_up: z.boolean().optional(),
    connection_limit: z.coerce.number().int().min(-1, "must be -1 (no limit) or more").max(2 ** 31 - 1).optional(),
    description: text(1024).optional(),
    name: text(255).optional(),
    pool_id: uuid().optional(),
    port_id: uuid().optional(),
    protocol: z
      .string()
      .superRefine((p, ctx) => {
        if (p === "HTTP" || p === "HTTPS") ctx.addIssue({ code: "custom", message: `${p} is not supported: only TCP is` });
        else if (p !== "TCP") ctx.addIssue({ code: "custom", message: "must be TCP, the only supported value" });
      })
      .optional(),
    protocol_port: int(0, 65535).optional(),
    session_persistence: z
      .object({ type: z.enum(PERSISTENCE, { error: `must be one of ${PERSISTENCE.join(", ")}` }), cookie_name: text(1024).optional() })
      .superRefine((s, ctx) => {
        if (s.type === "APP_COOKIE" && s.cookie_name === undefined) ctx.addIssue({ code: "custom", message: "cookie_name is required with APP_COOKIE" });
        if (s.type !== "APP_COOKIE" && s.cookie_name !== undefined) ctx.addIssue({ code: "custom", message: `cookie_name is only for APP_COOKIE, not ${s.type}` });
      })
      .optional(),
    status: status(),
    status_description: text(1024).optional(),
    subnet_id: uuid().optional(),
  });

export const vips: Resource<z.ZodType, Row> = new Resource({
  proto: "vnm.compat.v1.CompatVip",
  table: "vips",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  input: vipInput,
  defaults: { admin_state_up: true, connection_limit: -1 },
  async references(q, v) {
    if (v.pool_id !== undefined) await referenced(q, "pools", "Pool", v.pool_id, v.tenant_id);
  },
  conflict: (v) => `Pool ${v.pool_id} already has a VIP.`,
  changed: (q, v, _event, emit) => pools.touched(q, v["pool_id"], emit),
});

const MONITOR_TYPES = ["PING", "TCP", "HTTP", "HTTPS"] as const;
const seconds = () => int(0, 2 ** 31 - 1).optional();

export const healthMonitors: Resource<z.ZodType, Row> = new Resource({
  proto: "vnm.compat.v1.CompatHealthMonitor",
  table: "health_monitors",
  view: "health_monitors_now",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  input: z
    .object({
      id: uuid().optional(),
      tenant_id: tenant(),
      admin_state_up: z.boolean().optional(),
      delay: seconds(),
      max_retries: seconds(),
      timeout: seconds(),
      type: z.enum(MONITOR_TYPES, { error: `must be one of ${MONITOR_TYPES.join(", ")}` }).optional(),
      pools: z.array(z.object({ pool_id: uuid(), status: status(), status_description: text(1024).optional() })).max(256).optional(),
    })
    .superRefine((h, ctx) => {
      if ((h.delay ?? 0) < (h.timeout ?? 0)) ctx.addIssue({ code: "custom", path: ["delay"], message: "must be at least timeout" });
    }),
  // Its pools are associations, written after it (changed).
  columns: (h) => ({ tenant_id: h.tenant_id, admin_state_up: h.admin_state_up ?? true, delay: h.delay ?? 0, max_retries: h.max_retries ?? 0, timeout: h.timeout ?? 0, type: h.type ?? null }),
  async references(q, h) {
    for (const p of h.pools ?? []) await referenced(q, "pools", "Pool", p.pool_id, h.tenant_id);
  },
  // The pools it names at creation are associated with it (each pool announced).
  async changed(q, h, event, emit, body) {
    if (event !== "created") return;
    for (const p of (body as { pools?: { pool_id: string; status?: string; status_description?: string }[] } | undefined)?.pools ?? []) {
      await q.query("INSERT INTO pool_monitors (pool_id, health_monitor_id, status, status_description) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING", [
        p.pool_id,
        h["id"],
        p.status ?? null,
        p.status_description ?? null,
      ]);
      await pools.touched(q, p.pool_id, emit);
    }
  },
  async cascade(q, hm) {
    const used = (await q.query("SELECT pool_id FROM pool_monitors WHERE health_monitor_id = $1 ORDER BY seq", [hm["id"]])).rows;
    if (used.length > 0) throw ApiError.conflict(`Health monitor ${hm["id"]} is associated with pool(s) ${used.map((u) => u["pool_id"]).join(", ")}; remove the associations first.`);
  },
});
