// Router (v3, topology.md §1): a tenant's router. Its load balancer must exist (the lb service
// says) and keeps it from being deleted (409); deleting it deletes its ports, each as a port
// delete, and its routes, all announced. A PUT that moves it to another tenant moves its ports.
// A load balancer the lb service deletes is cleared from its routers (onLoadBalancerDeleted).
// Its filters and mirror lists name the policy service's chains and mirrors (the kit's
// PolicyReferences): a write naming a new one asks that service, and a deleted one is cleared
// from the routers.
// Each field's own rules are topology.proto's.
import { announcedId, ApiError, type BusMessage, PolicyReferences, type Queryable, Resource, type ServiceContext, Tombstones } from "@vnm/kit";
import { dropRouterPorts, portsOfRouterMoved } from "./ports.ts";
import { routes } from "./routes.ts";

interface RouterRow {
  id: string;
  tenant_id: string | null;
  load_balancer_id: string | null;
  inbound_filter_id: string | null;
  outbound_filter_id: string | null;
  inbound_mirror_ids: string[];
  outbound_mirror_ids: string[];
}

/** The chains and mirrors routers and ports name (tombstones: migration 8). */
export const policyRefs = new PolicyReferences("routing");

/** The calls this service makes as itself; set when the service starts (routersFor). */
let peers: Pick<ServiceContext, "call"> | undefined;

/** Load balancers the lb service announced deleted; their lock serialises the writes that concern one's routers. */
const deletedLoadBalancers = new Tombstones("deleted_load_balancers", "routing-lb");

/**
 * 404 unless the load balancer exists (the lb service says) and is not being deleted (locked
 * until commit, against onLoadBalancerDeleted); 503 when that service is down.
 */
async function requireLoadBalancer(q: Queryable, id: string): Promise<void> {
  if (!peers) throw new Error("the routing service's calls are not set up");
  const missing = ApiError.notFound(`There is no LoadBalancer with ID ${id}.`);
  if (await deletedLoadBalancers.lockedGone(q, id)) throw missing;
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
  defaults: { adminStateUp: true, asNumber: 0, inboundMirrorIds: [], outboundMirrorIds: [] },
  references: async (q, r, { ctx, current }) => {
    if (r.loadBalancerId) await requireLoadBalancer(q, r.loadBalancerId);
    await policyRefs.require(q, r, current, ctx);
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
  policyRefs.connect(svc);
  return routers;
}

/**
 * A load balancer deleted (the lb service announces it): the routers that had it lose it, each
 * announced as updated (MidoNet: LoadBalancer.router_id CLEAR), and it stays known as gone.
 */
export function onLoadBalancerDeleted(svc: ServiceContext) {
  return async (msg: BusMessage): Promise<void> => {
    const id = announcedId(msg);
    if (!id) return;
    await svc.store.tx(undefined, async (q, emit) => {
      await deletedLoadBalancers.bury(q, id);
      const cleared = await q.query<RouterRow>("UPDATE routers SET load_balancer_id = NULL WHERE load_balancer_id = $1 RETURNING *", [id]);
      for (const r of cleared.rows) emit(routers.change("updated", r));
    });
  };
}
