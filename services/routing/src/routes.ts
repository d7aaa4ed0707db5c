// Route (v1): created under its router (the path's), read and deleted at /routes/{id}, never
// changed. The router must exist (404, before the body is judged). A Normal route needs its next
// hop (port and gateway), the port one of this router's (nextHopOnRouter, 400 as MidoNet); the
// other types must not carry one (nextHopRule). Routes through a port go with the port, a
// router's with the router (ports.ts, routers.ts). Each field's own rules are routing.proto's.
import { AsyncLocalStorage } from "node:async_hooks";
import { ApiError, type CallContext, type Checked, type Handlers, isUuid, type Queryable, Resource, type Store, type Violation } from "@vnm/kit";
import { routers } from "./routers.ts";

interface RouteRow {
  id: string;
  router_id: string;
  type: string;
  dst_network_addr: string;
  dst_network_length: number;
  src_network_addr: string;
  src_network_length: number;
  next_hop_gateway: string | null;
  next_hop_port: string | null;
  weight: number;
  learned: boolean;
}

/** A route's body, checked against routing.proto's rules (ids in lower case, type one of Normal, BlackHole, Reject, Local). */
type Route = Checked<"vnm.routing.v1.Route">;

/** A Normal route needs its next hop (port and gateway); the other types must not carry one. */
function nextHopRule(r: Route): void {
  const violations: Violation[] = [];
  for (const property of ["nextHopPort", "nextHopGateway"] as const) {
    if (r.type === "Normal" && r[property] === undefined) violations.push({ property, message: "is required for a Normal route" });
    if (r.type !== "Normal" && r[property] !== undefined) violations.push({ property, message: `must not be set for a ${r.type} route` });
  }
  if (violations.length > 0) throw ApiError.invalid(violations);
}

/** The router of the route being created (its create handler's), for nextHopOnRouter. */
const routerOfCreate = new AsyncLocalStorage<string>();

/** A Normal route's next-hop port must be a port of its router: 400 naming nextHopPort otherwise (MidoNet's throwIfNextPortNotValid). */
async function nextHopOnRouter(q: Queryable, r: Route): Promise<void> {
  if (r.type !== "Normal" || r.nextHopPort === undefined) return;
  const router = routerOfCreate.getStore();
  const port = (await q.query<{ router_id: string | null }>("SELECT router_id FROM ports WHERE id = $1 FOR KEY SHARE", [r.nextHopPort])).rows[0];
  if (!port || port.router_id !== router) {
    throw ApiError.invalid([{ property: "nextHopPort", message: "This type of route requires a next hop port that is a port on the same router." }]);
  }
}

/** The router a path names: a UUID, else the path names nothing. */
function routerOf(req: Record<string, unknown>): string {
  const id = req["routerId"];
  if (!isUuid(id)) throw ApiError.notFound(`There is no Router with ID ${String(id)}.`);
  return id.toLowerCase();
}

/** Routes, whose list and create first find their router (404 when it is missing or hidden). */
class RouteResource extends Resource<"vnm.routing.v1.Route", RouteRow> {
  override handlers(store: Store): Handlers {
    const out = super.handlers(store);
    const { list, create } = this.info.rpcs;
    const listAll = out[list!]!;
    out[list!] = async (req: Record<string, unknown>, ctx: CallContext) => {
      await routers.locate(store.pool, { id: req["routerId"] });
      return listAll(req, ctx);
    };
    out[create!] = (req: Record<string, unknown>, ctx: CallContext) =>
      store.tx(ctx, async (q, emit) => {
        // Locked: the router cannot go until the route is written.
        const { row } = await routers.locate(q, { id: req["routerId"] }, "key share");
        return routerOfCreate.run(String(row["id"]), () => this.create(q, emit, req));
      });
    return out;
  }
}

export const routes = new RouteResource({
  proto: "vnm.routing.v1.Route",
  table: "routes",
  // Listed and created under /routers/{routerId}; a body's routerId is ignored (read-only).
  key: { scope: (req) => ({ router_id: routerOf(req) }) },
  columns: (r, req) => ({
    router_id: routerOf(req),
    type: r.type,
    dst_network_addr: r.dstNetworkAddr,
    dst_network_length: r.dstNetworkLength,
    src_network_addr: r.srcNetworkAddr,
    src_network_length: r.srcNetworkLength,
    next_hop_gateway: r.nextHopGateway ?? null,
    next_hop_port: r.nextHopPort ?? null,
    weight: r.weight,
  }),
  validate: async (q, r) => {
    nextHopRule(r);
    await nextHopOnRouter(q, r);
  },
  render: (r: RouteRow) => ({
    id: r.id,
    routerId: r.router_id,
    type: r.type,
    dstNetworkAddr: r.dst_network_addr,
    dstNetworkLength: r.dst_network_length,
    srcNetworkAddr: r.src_network_addr,
    srcNetworkLength: r.src_network_length,
    nextHopGateway: r.next_hop_gateway,
    nextHopPort: r.next_hop_port,
    weight: r.weight,
    learned: r.learned,
  }),
});
