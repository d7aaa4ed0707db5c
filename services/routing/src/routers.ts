// Router (v3, topology.md §1): a tenant's router. Its load balancer must exist (the lb service
// says) and keeps it from being deleted (409); deleting it deletes its ports, each as a port
// delete, and its routes, all announced. A PUT that moves it to another tenant moves its ports.
// Each field's own rules are topology.proto's.
import { ApiError, Resource, type ServiceContext } from "@vnm/kit";
import { dropRouterPorts, portsOfRouterMoved } from "./ports.ts";
import { routes } from "./routes.ts";

interface RouterRow {
  id: string;
  tenant_id: string | null;
  load_balancer_id: string | null;
}

/** The calls this service makes as itself; set when the service starts (routersFor). */
let peers: Pick<ServiceContext, "call"> | undefined;

/** 404 unless the load balancer exists (the lb service says); 503 when that service is down. */
async function requireLoadBalancer(id: string): Promise<void> {
  if (!peers) throw new Error("the routing service's calls are not set up");
  const missing = ApiError.notFound(`There is no LoadBalancer with ID ${id}.`);
  try {
    await peers.call("vnm.lb.v1.LoadBalancerService", "GetLoadBalancer", { id });
  } catch (err) {
    throw ApiError.from(err).code === missing.code ? missing : err;
  }
}

/** A router still holding a load balancer cannot be deleted (MidoNet: Router.load_balancer_id ERROR). */
function loadBalancerBlocksDelete(row: RouterRow): void {
  if (row.load_balancer_id) {
    throw ApiError.conflict(`Router ${row.id} still has load balancer ${row.load_balancer_id}: clear its loadBalancerId first.`);
  }
}

export const routers = new Resource({
  proto: "vnm.routing.v1.Router",
  table: "routers",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  // PUT replaces: what the body leaves out returns to its default.
  defaults: { adminStateUp: true, asNumber: 0 },
  references: async (_q, r) => {
    if (r.loadBalancerId) await requireLoadBalancer(r.loadBalancerId);
  },
  cascade: async (q, row: RouterRow, emit) => {
    loadBalancerBlocksDelete(row);
    await dropRouterPorts(q, row.id, emit);
    const gone = await q.query("DELETE FROM routes WHERE router_id = $1 RETURNING *", [row.id]);
    for (const r of gone.rows) emit(routes.change("deleted", r));
  },
  // A router given to another tenant takes its ports along.
  changed: async (q, row: RouterRow, event, emit, _body, before?: RouterRow) => {
    if (event === "updated" && before && before.tenant_id !== row.tenant_id) await portsOfRouterMoved(q, row.id, row.tenant_id, emit);
  },
});

/** The routers kind, with the calls its checks make as this service. */
export function routersFor(svc: Pick<ServiceContext, "call">) {
  peers = svc;
  return routers;
}
