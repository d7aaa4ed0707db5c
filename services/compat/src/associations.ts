// A pool's health monitors: POST /compat/lb/pools/{poolId}/health_monitors {"id": <monitor>}
// (201; twice is a 409) and DELETE .../health_monitors/{healthMonitorId} (404 when there is no
// such association). Both announce the pool and the monitor, whose derived fields change.
import { ApiError, type Change, isUuid, PG, pgCode, type Queryable, type ServiceContext } from "@vnm/kit";
import { healthMonitors, pools } from "./lb.ts";

type Emit = (c: Change) => void;
/** The fields' rules of the service's proto files, as the kit checks them. */
type Rules = NonNullable<ServiceContext["resources"]["rules"]>;

async function announce(q: Queryable, emit: Emit, poolId: string, monitorId: string): Promise<void> {
  await pools.touched(q, poolId, emit);
  await healthMonitors.touched(q, monitorId, emit);
}

/** The body names the monitor by its id (PoolHealthMonitor's rules: present, a UUID). */
export async function associate(q: Queryable, emit: Emit, rules: Rules, req: Record<string, unknown>): Promise<{ id: string }> {
  const { row: pool } = await pools.locate(q, { id: req["poolId"] }, "key share");
  const { id } = rules.check("vnm.compat.v1.PoolHealthMonitor", (req["association"] ?? {}) as { id: string });
  const monitor = (await q.query("SELECT * FROM health_monitors WHERE id = $1 FOR KEY SHARE", [id])).rows[0];
  if (!monitor || monitor["tenant_id"] !== pool["tenant_id"]) throw ApiError.notFound(`There is no HealthMonitor with ID ${id}.`);
  try {
    await q.query("INSERT INTO pool_monitors (pool_id, health_monitor_id) VALUES ($1, $2)", [pool["id"], id]);
  } catch (err) {
    if (pgCode(err) === PG.uniqueViolation) throw ApiError.conflict(`Health monitor ${id} is already associated with pool ${pool["id"]}.`);
    throw err;
  }
  await announce(q, emit, pool["id"] as string, id);
  return { id };
}

export async function dissociate(q: Queryable, emit: Emit, req: Record<string, unknown>): Promise<void> {
  const { row: pool } = await pools.locate(q, { id: req["poolId"] }, "key share");
  const id = String(req["healthMonitorId"] ?? "");
  const gone = isUuid(id) ? await q.query("DELETE FROM pool_monitors WHERE pool_id = $1 AND health_monitor_id = $2", [pool["id"], id]) : undefined;
  if (!gone?.rowCount) throw ApiError.notFound(`Health monitor ${id} is not associated with pool ${pool["id"]}.`);
  await announce(q, emit, pool["id"] as string, id);
}
