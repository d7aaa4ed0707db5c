// A load balancer's read-only routerId (topology spec §1): the router whose loadBalancerId names
// it. Routers are the routing service's; this service follows their changes (the durable
// consumer lb-router-changes of routing.Router.*) and, for each, asks the routing service for the
// router as it is now, so changes handled late or twice still leave the right answer: the load
// balancer the router names shows it, any other that showed it no longer does, each announced.
import { ApiError, type BusMessage, type Change, isUuid, type Queryable, type ServiceContext, announcedId } from "@vnm/kit";
import { loadBalancers } from "./kinds.ts";

type Emit = (c: Change) => void;

/** Serialises the handling of one router's changes, until the transaction ends. */
async function lockRouter(q: Queryable, id: string): Promise<void> {
  await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`lb-router:${id}`]);
}

/** The router's load balancer as the routing service has it now: null when it has none or is gone. */
async function loadBalancerOf(svc: Pick<ServiceContext, "call">, routerId: string): Promise<string | null> {
  try {
    const router = await svc.call("vnm.routing.v1.RouterService", "GetRouter", { id: routerId });
    const lb = router["loadBalancerId"];
    return typeof lb === "string" && isUuid(lb) ? lb.toLowerCase() : null;
  } catch (err) {
    if (ApiError.from(err).code === ApiError.notFound("").code) return null;
    throw err;
  }
}

/** Sets the load balancers' routerId for one router, announcing each one that changes. */
async function showRouter(q: Queryable, routerId: string, lbId: string | null, emit: Emit): Promise<void> {
  const cleared = await q.query("UPDATE load_balancers SET router_id = NULL WHERE router_id = $1 AND id IS DISTINCT FROM $2 RETURNING *", [routerId, lbId]);
  for (const r of cleared.rows) emit(loadBalancers.change("updated", r));
  if (!lbId) return;
  const set = await q.query("UPDATE load_balancers SET router_id = $1 WHERE id = $2 AND router_id IS DISTINCT FROM $1 RETURNING *", [routerId, lbId]);
  for (const r of set.rows) emit(loadBalancers.change("updated", r));
}

/** A router created, changed or deleted: the load balancers show it as the routing service has it now. */
export function onRouterChanged(svc: ServiceContext) {
  return async (msg: BusMessage): Promise<void> => {
    const id = announcedId(msg);
    if (!id) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await lockRouter(q, id);
      await showRouter(q, id, await loadBalancerOf(svc, id), emit);
    });
  };
}
