// A pool's health monitors: POST /compat/lb/pools/{poolId}/health_monitors {"id": <monitor>}
// (201 with the association's Location; twice is a 409), GET of the pool's list, GET and DELETE
// .../health_monitors/{healthMonitorId} (404 when there is no such association; a DELETE's
// If-Match and If-None-Match are checked against the association as it is locked, 412 when
// they do not hold). Writes announce the pool and the monitor, whose derived fields change.
import { ApiError, type CallContext, type Change, checkConditions, isUuid, PG, pgCode, type Queryable, type ResourceSet, type ServiceContext } from "@vnm/kit";
import { healthMonitors, pools } from "./lb.ts";

type Emit = (c: Change) => void;
/** A row of pool_monitors. */
interface Association {
  pool_id: string;
  health_monitor_id: string;
  status: string | null;
  status_description: string | null;
}
/** The fields' rules of the service's proto files, as the kit checks them. */
type Rules = NonNullable<ServiceContext["resources"]["rules"]>;

const ASSOCIATION = "vnm.compat.v1.PoolHealthMonitor";

async function announce(q: Queryable, emit: Emit, poolId: string, monitorId: string): Promise<void> {
  await pools.touched(q, poolId, emit);
  await healthMonitors.touched(q, monitorId, emit);
}

/** An association as PoolHealthMonitor shows it: the monitor's id, the pool's, the status. */
function shown(a: Association): Record<string, unknown> {
  const out: Record<string, unknown> = { id: a["health_monitor_id"], pool_id: a["pool_id"] };
  if (a["status"] != null) out["status"] = a["status"];
  if (a["status_description"] != null) out["status_description"] = a["status_description"];
  return out;
}

/** The association a path names (the pool visible to the caller), optionally locked; 404 otherwise. */
async function located(q: Queryable, req: Record<string, unknown>, lock?: "update"): Promise<Association> {
  const { row: pool } = await pools.locate(q, { id: req["poolId"] }, lock && "key share");
  const id = String(req["healthMonitorId"] ?? "");
  const sql = `SELECT pool_id, health_monitor_id, status, status_description FROM pool_monitors WHERE pool_id = $1 AND health_monitor_id = $2${lock ? " FOR UPDATE" : ""}`;
  const row = isUuid(id) ? (await q.query<Association>(sql, [pool["id"], id.toLowerCase()])).rows[0] : undefined;
  if (!row) throw ApiError.notFound(`Health monitor ${id} is not associated with pool ${pool["id"]}.`);
  return row;
}

/**
 * The tag of an association as the gateway computes it from the GET's answer: the message as a
 * gRPC peer decodes it (see Resource.etagOf).
 */
function tagOf(resources: ResourceSet, a: Association): string {
  return resources.answerTag(pools.info.service, "GetPoolHealthMonitor", shown(a));
}

/** The body names the monitor by its id (PoolHealthMonitor's rules: present, a UUID). */
export async function associate(q: Queryable, emit: Emit, rules: Rules, req: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { row: pool } = await pools.locate(q, { id: req["poolId"] }, "key share");
  const { id } = rules.checked(ASSOCIATION, req["association"] ?? {});
  const monitor = (await q.query("SELECT * FROM health_monitors WHERE id = $1 FOR KEY SHARE", [id])).rows[0];
  if (!monitor || monitor["tenant_id"] !== pool["tenant_id"]) throw ApiError.notFound(`There is no HealthMonitor with ID ${id}.`);
  let row: Association | undefined;
  try {
    row = (await q.query<Association>("INSERT INTO pool_monitors (pool_id, health_monitor_id) VALUES ($1, $2) RETURNING *", [pool["id"], id])).rows[0];
  } catch (err) {
    if (pgCode(err) === PG.uniqueViolation) throw ApiError.conflict(`Health monitor ${id} is already associated with pool ${pool["id"]}.`);
    throw err;
  }
  await announce(q, emit, row!.pool_id, id);
  return shown(row!);
}

/** A pool's associations (the pool visible to the caller), in the order they were made. */
export async function associations(q: Queryable, req: Record<string, unknown>): Promise<{ items: Record<string, unknown>[] }> {
  const { row: pool } = await pools.locate(q, { id: req["poolId"] });
  const rows = (await q.query("SELECT pool_id, health_monitor_id, status, status_description FROM pool_monitors WHERE pool_id = $1 ORDER BY seq", [pool["id"]])).rows;
  return { items: rows.map(shown) };
}

export async function association(q: Queryable, req: Record<string, unknown>): Promise<Record<string, unknown>> {
  return shown(await located(q, req));
}

/** Removes the association, when the caller's If-Match (if any) names it as it is and its If-None-Match (if any) does not. */
export async function dissociate(q: Queryable, emit: Emit, resources: ResourceSet, req: Record<string, unknown>, ctx?: CallContext): Promise<void> {
  const a = await located(q, req, "update");
  await checkConditions(ctx, () => tagOf(resources, a));
  await q.query("DELETE FROM pool_monitors WHERE pool_id = $1 AND health_monitor_id = $2", [a["pool_id"], a["health_monitor_id"]]);
  await announce(q, emit, a.pool_id, a.health_monitor_id);
}
